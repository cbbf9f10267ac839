#pragma once
/// @file service_notify.hpp
/// Readiness for systemd `Type=notify` units (sd_notify(3)): READY=1 once leader does its job,
/// STOPPING=1 when it begins to stop, STATUS= lines for `systemctl status`. Nothing is sent
/// without $NOTIFY_SOCKET, or when leader was built without libsystemd.

#include <string>

namespace leader::cli {

/// Tells the service manager that leader is up; `status` becomes the unit's STATUS= line.
void notify_ready(const std::string& status);
/// Tells the service manager that leader is stopping (its leases are being released).
void notify_stopping(const std::string& status);
/// Updates the unit's STATUS= line.
void notify_status(const std::string& status);

}  // namespace leader::cli
