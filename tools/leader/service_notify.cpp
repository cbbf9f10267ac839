// sd_notify for Type=notify units (service_notify.hpp).

#include "service_notify.hpp"

#ifdef LEADER_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "log.hpp"

namespace leader::cli {
namespace {

// One datagram to $NOTIFY_SOCKET; the status line is scrubbed of store secrets and newlines.
void send(const std::string& state, const std::string& status) {
#ifdef LEADER_HAVE_LIBSYSTEMD
  std::string message = state;
  if (!status.empty()) {
    std::string line = without_secrets(status);
    for (char& c : line)
      if (c == '\n') c = ' ';
    message += (message.empty() ? "" : "\n") + ("STATUS=" + line);
  }
  (void)sd_notify(0, message.c_str());  // best effort: no service manager is no error
#else
  (void)state;
  (void)status;
#endif
}

}  // namespace

void notify_ready(const std::string& status) { send("READY=1", status); }

void notify_stopping(const std::string& status) { send("STOPPING=1", status); }

void notify_status(const std::string& status) { send("", status); }

}  // namespace leader::cli
