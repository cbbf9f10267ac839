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
#include <memory>
#include <string>
#include <string_view>

#include "leader/events.hpp"

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
