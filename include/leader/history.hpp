#pragma once
/// @file history.hpp
/// Election history: one record per acquisition (lock, node, fencing token, slot, start, end,
/// outcome, sanitised error), written to sinks off the election path.
///
/// What is NOT guaranteed: that every record is written. A sink is fed from a bounded queue of
/// an EventBus subscription: when the sink falls behind, records are dropped and counted; when it
/// throws, the record is lost and counted. Elections never wait for a sink.
///
/// Threads: record() runs on the subscription's delivery thread, one record at a time per
/// attachment, in the order the leases ended.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "leader/events.hpp"
#include "leader/uri.hpp"

namespace leader {

/// One acquisition, from grant to release.
struct HistoryRecord {
  std::string lock{};
  std::string node_id{};
  std::uint64_t fencing_token = 0;
  int slot = 0;
  WallTime started{};
  WallTime ended{};
  LeaseOutcome outcome = LeaseOutcome::completed;
  std::string error{};     ///< failed/lost/expired: why, sanitised and truncated
  bool fail_open = false;  ///< ran without the lock (OnBackendError::fail_open)
};

/// Receives history records (e.g. to write an audit table).
class HistorySink {
 public:
  virtual ~HistorySink() = default;
  /// Stores one record; may throw (the record is then counted as failed).
  virtual void record(const HistoryRecord& record) = 0;
};

/// Retention and bounds of a sink that keeps records (file and SQL sinks).
struct HistoryOptions {
  /// Records that ended longer ago than this are deleted; 0 = kept whatever their age.
  Duration max_age{0};
  /// At most this many records (the newest) are kept; 0 = no limit.
  std::size_t max_records = 0;
  /// Retention runs after a record when this long passed since it last ran (0 = every record).
  Duration prune_interval{10'000};
  /// Bound of one write or prune (SQL sinks: connect, statement).
  Duration write_timeout{5'000};
  /// Throws InvalidArgument when a rule is broken.
  void validate() const;
};

/// The newest `capacity` records in memory, for tests and status pages. Thread-safe.
class MemoryHistory final : public HistorySink {
 public:
  /// A ring of `capacity` (>= 1) records.
  explicit MemoryHistory(std::size_t capacity = 1000);
  void record(const HistoryRecord& record) override;
  /// The records kept, oldest first.
  [[nodiscard]] std::vector<HistoryRecord> records() const;
  /// Records evicted by newer ones so far.
  [[nodiscard]] std::uint64_t evicted() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<HistoryRecord> ring_;
  std::uint64_t evicted_ = 0;
};

/// Appends one JSON object per line to a file (created when missing), pruned by `options`.
/// Several processes may append to one file; with retention on, only one should write it (a
/// prune rewrites the file and can lose a line another process appended meanwhile).
class JsonLinesHistory final : public HistorySink {
 public:
  /// Opens (creating) `path`; throws BackendError (failed_precondition) when it cannot.
  explicit JsonLinesHistory(std::string path, HistoryOptions options = {});
  ~JsonLinesHistory() override;
  JsonLinesHistory(const JsonLinesHistory&) = delete;
  JsonLinesHistory& operator=(const JsonLinesHistory&) = delete;
  /// Appends the record as one line; throws BackendError when the write fails.
  void record(const HistoryRecord& record) override;
  /// Applies the retention now.
  void prune();

 private:
  void prune_locked();
  std::string path_;
  HistoryOptions options_;
  std::mutex mu_;
  int fd_ = -1;
  std::size_t lines_ = 0;
  TimePoint last_prune_{};
};

/// The record as one line of JSON (no newline): lock, node_id, fencing_token, slot, started and
/// ended (RFC 3339 UTC, milliseconds), started_ms, ended_ms, outcome, error, fail_open.
[[nodiscard]] std::string to_json_line(const HistoryRecord& record);

/// `t` as "YYYY-MM-DDTHH:MM:SS.mmmZ".
[[nodiscard]] std::string format_utc(WallTime t);

/// Creates a sink from a parsed URI.
using HistoryFactory =
    std::function<std::shared_ptr<HistorySink>(const Uri& uri, const HistoryOptions& options)>;

/// Registers `factory` for `scheme` (store components register their SQL sinks when linked).
void register_history_sink(std::string scheme, HistoryFactory factory);

/// Opens a sink: `memory:?capacity=N`, `jsonl:/path/file.jsonl`, or a SQL store URI
/// (`sqlite:`, `postgresql://`, `mysql://`; its table_prefix names the table `<prefix>history`).
/// Throws InvalidArgument for unknown schemes and bad options, BackendError when unreachable.
std::shared_ptr<HistorySink> open_history(std::string_view uri, HistoryOptions options = {});

/// The longest error text kept in a record, in bytes.
inline constexpr std::size_t kHistoryErrorLimit = 1024;

/// `text` with every URI's secrets hidden (leader::redact_uri) and `password=`-style values of
/// secret-bearing names replaced by "***", cut to `limit` bytes (on a UTF-8 boundary, with "...").
[[nodiscard]] std::string sanitize_error_text(std::string_view text,
                                              std::size_t limit = kHistoryErrorLimit);

/// The record of a `released` event; nullopt for any other kind.
[[nodiscard]] std::optional<HistoryRecord> history_record(const ElectionEvent& event);

/// Feeds `sink` with a record for every lease that ends on `bus`, asynchronously. The sink's
/// failures and drops are the returned subscription's failures() and dropped().
Subscription attach_history(EventBus& bus, std::shared_ptr<HistorySink> sink,
                            SubscribeOptions options = {});

}  // namespace leader
