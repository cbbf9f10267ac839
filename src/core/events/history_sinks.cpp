// The sinks of leader::core (memory ring, JSON Lines file), the history-sink registry and
// open_history.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "leader/history.hpp"
#include "leader/options.hpp"

namespace leader {
namespace {

std::int64_t epoch_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

BackendError file_error(const std::string& path, const std::string& what, int err) {
  return BackendError(ErrorCode::failed_precondition, "jsonl",
                      "history file '" + path + "': " + what + ": " + std::strerror(err));
}

// The ended_ms value of a line written by to_json_line, or -1.
std::int64_t ended_ms_of(const std::string& line) {
  constexpr std::string_view kKey = "\"ended_ms\":";
  auto at = line.find(kKey);
  if (at == std::string::npos) return -1;
  std::int64_t v = -1;
  const char* begin = line.data() + at + kKey.size();
  std::from_chars(begin, line.data() + line.size(), v);
  return v;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, HistoryFactory> factories;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::size_t count_param(const Uri& uri, const std::string& key, std::size_t fallback) {
  const std::optional<std::string> v = uri.param(key);
  if (!v) return fallback;
  const std::string_view text = *v;
  std::size_t n = 0;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(text.data(), last, n);
  if (ec != std::errc() || end != last || n < 1)
    throw InvalidArgument("history URI '" + uri.redacted() + "': parameter '" + key + "' is '" +
                          std::string(text) + "'; expected a number >= 1");
  return n;
}

}  // namespace

void HistoryOptions::validate() const {
  check_duration_bound("HistoryOptions", "max_age", max_age);
  check_duration_bound("HistoryOptions", "prune_interval", prune_interval);
  check_duration_bound("HistoryOptions", "write_timeout", write_timeout);
  if (max_age < Duration{0} || prune_interval < Duration{0})
    throw InvalidArgument("HistoryOptions: max_age and prune_interval must be >= 0");
  if (write_timeout <= Duration{0})
    throw InvalidArgument("HistoryOptions.write_timeout must be > 0");
}

std::string format_utc(WallTime t) {
  const std::int64_t ms = epoch_ms(t);
  std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms - static_cast<std::int64_t>(secs) * 1000));
  return buf;
}

std::string to_json_line(const HistoryRecord& r) {
  std::string out = "{\"lock\":";
  append_json_string(out, r.lock);
  out += ",\"node_id\":";
  append_json_string(out, r.node_id);
  out += ",\"fencing_token\":" + std::to_string(r.fencing_token);
  out += ",\"slot\":" + std::to_string(r.slot);
  out += ",\"started\":\"" + format_utc(r.started) + "\"";
  out += ",\"ended\":\"" + format_utc(r.ended) + "\"";
  out += ",\"started_ms\":" + std::to_string(epoch_ms(r.started));
  out += ",\"ended_ms\":" + std::to_string(epoch_ms(r.ended));
  out += ",\"outcome\":\"" + std::string(to_string(r.outcome)) + "\"";
  out += ",\"error\":";
  append_json_string(out, r.error);
  out += std::string(",\"fail_open\":") + (r.fail_open ? "true" : "false") + "}";
  return out;
}

MemoryHistory::MemoryHistory(std::size_t capacity) : capacity_(capacity) {
  if (capacity_ == 0) throw InvalidArgument("MemoryHistory: capacity must be >= 1");
}

void MemoryHistory::record(const HistoryRecord& record) {
  std::lock_guard lock(mu_);
  if (ring_.size() == capacity_) {
    ring_.pop_front();
    ++evicted_;
  }
  ring_.push_back(record);
}

std::vector<HistoryRecord> MemoryHistory::records() const {
  std::lock_guard lock(mu_);
  return {ring_.begin(), ring_.end()};
}

std::uint64_t MemoryHistory::evicted() const {
  std::lock_guard lock(mu_);
  return evicted_;
}

JsonLinesHistory::JsonLinesHistory(std::string path, HistoryOptions options)
    : path_(std::move(path)), options_(options) {
  options_.validate();
  if (path_.empty()) throw InvalidArgument("JsonLinesHistory: the path is empty");
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw file_error(path_, "cannot open", errno);
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line)) ++lines_;
}

JsonLinesHistory::~JsonLinesHistory() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonLinesHistory::record(const HistoryRecord& record) {
  std::string line = to_json_line(record) + "\n";
  std::lock_guard lock(mu_);
  // One write() per line: appends of several processes do not interleave within a line.
  ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) throw file_error(path_, "write failed", errno);
  ++lines_;
  const bool over = options_.max_records > 0 && lines_ > options_.max_records;
  if (!over && options_.max_age <= Duration{0}) return;
  const TimePoint now = std::chrono::steady_clock::now();
  if (last_prune_ != TimePoint{} && now - last_prune_ < options_.prune_interval) return;
  last_prune_ = now;
  prune_locked();
}

void JsonLinesHistory::prune() {
  std::lock_guard lock(mu_);
  prune_locked();
}

void JsonLinesHistory::prune_locked() {
  std::vector<std::string> kept;
  {
    std::ifstream in(path_);
    const std::int64_t cutoff =
        options_.max_age > Duration{0}
            ? epoch_ms(std::chrono::system_clock::now()) - options_.max_age.count()
            : std::numeric_limits<std::int64_t>::min();
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const std::int64_t ended = ended_ms_of(line);
      if (ended >= 0 && ended < cutoff) continue;
      kept.push_back(std::move(line));
    }
  }
  std::size_t first = 0;
  if (options_.max_records > 0 && kept.size() > options_.max_records)
    first = kept.size() - options_.max_records;
  const std::string tmp = path_ + ".prune";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (std::size_t i = first; i < kept.size(); ++i) out << kept[i] << '\n';
    out.flush();
    if (!out) throw file_error(tmp, "cannot write the pruned copy", errno);
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    throw file_error(path_, "cannot replace it with the pruned copy", errno);
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw file_error(path_, "cannot reopen", errno);
  ::close(fd_);
  fd_ = fd;
  lines_ = kept.size() - first;
}

void register_history_sink(std::string scheme, HistoryFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(scheme)] = std::move(factory);
}

std::shared_ptr<HistorySink> open_history(std::string_view text, HistoryOptions options) {
  options.validate();
  Uri uri = Uri::parse(text);
  if (uri.scheme == "memory") {
    uri.expect_params({"capacity"});
    return std::make_shared<MemoryHistory>(
        count_param(uri, "capacity", options.max_records > 0 ? options.max_records : 1000));
  }
  if (uri.scheme == "jsonl") {
    uri.expect_params({});
    return std::make_shared<JsonLinesHistory>(uri.path, options);
  }
  HistoryFactory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(uri.scheme); it != r.factories.end()) factory = it->second;
  }
  if (!factory)
    throw InvalidArgument("history URI '" + uri.redacted() + "': no history sink for scheme '" +
                          uri.scheme +
                          "' (memory:, jsonl:PATH, or a linked SQL store: sqlite, postgresql, "
                          "mysql)");
  return factory(uri, options);
}

}  // namespace leader
