#pragma once
/// @file log.hpp
/// The one place `leader` writes log lines to stderr: RFC 3339 UTC timestamps, a level, and the
/// message, as text or as one JSON object per line (--log-format json) that also carries the
/// line's fields (lock, node, token, event); filtered by -v / --quiet.
///
///   text: 2026-12-01T03:26:29.123Z notice leader: 'nightly' is held by web-2 (...)
///   json: {"time":"2026-12-01T03:26:29.123Z","level":"notice","msg":"'nightly' is held by ...",
///          "lock":"nightly","node":"web-2","token":41,"event":"skipped"}
///
/// When stderr is the journal ($JOURNAL_STREAM names stderr's device and inode), each line starts
/// with its syslog priority (<6> info ... <3> error, sd-daemon(3)) and text lines leave out the
/// time, which the journal records itself. Every message passes through without_secrets() first.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leader/uri.hpp"

namespace leader::cli {

/// The store URI whose secrets no message of leader may show; set once it has been parsed.
inline std::optional<Uri>& store_uri_for_messages() {
  static std::optional<Uri> uri;
  return uri;
}

/// `message` with every secret of the store URI replaced by "***" (a last line of defence for
/// errors that client libraries word themselves).
inline std::string without_secrets(const std::string& message) {
  const auto& uri = store_uri_for_messages();
  return uri ? uri->scrub(message) : message;
}

/// How log lines are written (process-wide; set once from --log-format before anything logs).
enum class LogFormat { text, json };

/// Sets the format of every later log line.
void set_log_format(LogFormat format);
/// The format in use (text unless set).
LogFormat log_format();
/// "text" or "json" -> the format; nullopt for anything else.
std::optional<LogFormat> parse_log_format(std::string_view name);

/// The structured fields of a log line, keys of its JSON form; empty (0) ones are left out.
struct LogFields {
  std::string lock{};
  std::string node{};
  std::uint64_t token = 0;  ///< the fencing token
  std::string event{};      ///< e.g. acquired, skipped, waiting, released, lost, ran_elsewhere
};

/// Writes one log line at `level` ("info", "notice", "warning", "error"), whatever the verbosity.
void write_log_line(std::string_view level, const std::string& message,
                    const LogFields& fields = {});

/// Whether stderr is connected to the journal ($JOURNAL_STREAM matches stderr's device:inode).
bool stderr_is_journal();

/// How much leader says: -1 quiet, 0 normal, 1 verbose.
class Log {
 public:
  explicit Log(int verbosity = 0) : verbosity_(verbosity) {}
  /// Details shown with -v only (level info).
  void info(const std::string& message, const LogFields& fields = {}) const {
    if (verbosity_ > 0) write_log_line("info", message, fields);
  }
  /// Normal messages, silenced by --quiet (level notice).
  void notice(const std::string& message, const LogFields& fields = {}) const {
    if (verbosity_ >= 0) write_log_line("notice", message, fields);
  }
  /// Messages that cron and timers must not mail every run (e.g. another replica holds the
  /// lock): shown with -v, or at normal verbosity when stderr is a terminal (level notice).
  void routine(const std::string& message, const LogFields& fields = {}) const;
  /// Whether routine() messages are shown (-v, or stderr is a terminal).
  [[nodiscard]] bool shows_routine() const;
  /// Trouble that did not stop the work yet, e.g. a failed renewal: shown unless --quiet.
  void warning(const std::string& message, const LogFields& fields = {}) const {
    if (verbosity_ >= 0) write_log_line("warning", message, fields);
  }
  /// Errors and lease loss: always shown.
  void error(const std::string& message, const LogFields& fields = {}) const {
    write_log_line("error", message, fields);
  }
  /// -1, 0 or 1.
  [[nodiscard]] int verbosity() const { return verbosity_; }

 private:
  int verbosity_;
};

}  // namespace leader::cli
