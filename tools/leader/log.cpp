#include "log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "leader/history.hpp"

namespace leader::cli {
namespace {

std::atomic<LogFormat>& format_setting() {
  static std::atomic<LogFormat> format{LogFormat::text};
  return format;
}

// The syslog priority of a level (sd-daemon(3): <6> info, <5> notice, <4> warning, <3> error).
char priority_of(std::string_view level) {
  if (level == "info") return '6';
  if (level == "notice") return '5';
  if (level == "warning") return '4';
  return '3';
}

}  // namespace

bool stderr_is_journal() {
  static const bool journal = [] {
    const char* stream = std::getenv("JOURNAL_STREAM");
    struct stat st {};
    if (stream == nullptr || ::fstat(STDERR_FILENO, &st) != 0) return false;
    unsigned long long dev = 0, ino = 0;  // NOLINT(google-runtime-int): as sscanf reads them
    if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
    return dev == static_cast<unsigned long long>(st.st_dev) &&
           ino == static_cast<unsigned long long>(st.st_ino);
  }();
  return journal;
}

void set_log_format(LogFormat format) { format_setting().store(format); }

LogFormat log_format() { return format_setting().load(); }

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  return std::nullopt;
}

void write_log_line(std::string_view level, const std::string& message, const LogFields& fields) {
  std::string clean = without_secrets(message);
  const bool journal = stderr_is_journal();
  std::string line = journal ? std::string{'<', priority_of(level), '>'} : std::string();
  if (log_format() == LogFormat::json) {
    nlohmann::json j = {
        {"time", format_utc(std::chrono::system_clock::now())}, {"level", level}, {"msg", clean}};
    if (!fields.lock.empty()) j["lock"] = fields.lock;
    if (!fields.node.empty()) j["node"] = fields.node;
    if (fields.token != 0) j["token"] = fields.token;
    if (!fields.event.empty()) j["event"] = fields.event;
    line += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    if (!journal) line += format_utc(std::chrono::system_clock::now()) + " ";  // RFC 3339, UTC
    line += std::string(level) + " leader: " + clean + "\n";
  }
  // One write per line: lines of concurrent threads (event delivery, supervision) never mix.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

bool Log::shows_routine() const {
  return verbosity_ > 0 || (verbosity_ == 0 && ::isatty(STDERR_FILENO) == 1);
}

void Log::routine(const std::string& message, const LogFields& fields) const {
  if (shows_routine()) write_log_line("notice", message, fields);
}

}  // namespace leader::cli
