#include "log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "leader/history.hpp"

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

void write_log_line(std::string_view level, const std::string& message) {
  std::string clean = without_secrets(message);
  const std::string time = format_utc(std::chrono::system_clock::now());  // RFC 3339, UTC, ms
  std::string line;
  if (log_format() == LogFormat::json) {
    nlohmann::json j = {{"time", time}, {"level", level}, {"msg", clean}};
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    line = time + " " + std::string(level) + " leader: " + clean + "\n";
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
