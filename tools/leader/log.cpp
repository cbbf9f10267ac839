#include "log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace leader::cli {
namespace {

std::atomic<LogFormat>& format_setting() {
  static std::atomic<LogFormat> format{LogFormat::text};
  return format;
}

}  // namespace

void set_log_format(LogFormat format) { format_setting().store(format); }

LogFormat log_format() { return format_setting().load(); }

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::text;
  if (name == "json") return LogFormat::json;
  return std::nullopt;
}

std::string rfc3339_now() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  ::gmtime_r(&secs, &utc);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

void write_log_line(std::string_view level, const std::string& message) {
  std::string clean = without_secrets(message);
  std::string line;
  if (log_format() == LogFormat::json) {
    nlohmann::json j = {{"time", rfc3339_now()}, {"level", level}, {"msg", clean}};
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    line = rfc3339_now() + " " + std::string(level) + " leader: " + clean + "\n";
  }
  // One write per line: lines of concurrent threads (event delivery, supervision) never mix.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void Log::routine(const std::string& message) const {
  if (verbosity_ > 0 || (verbosity_ == 0 && ::isatty(STDERR_FILENO) == 1))
    write_log_line("notice", message);
}

}  // namespace leader::cli
