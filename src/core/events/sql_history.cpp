#include "leader/detail/sql_history.hpp"

#include <chrono>

namespace leader::detail {

SqlHistorySink::SqlHistorySink(HistoryOptions options, const std::string& table_prefix)
    : options_(options), table_(table_prefix + "history") {
  options_.validate();
}

void SqlHistorySink::record(const HistoryRecord& record) {
  std::lock_guard lock(mu_);
  const Deadline deadline = Deadline::after(options_.write_timeout);
  write(record, deadline);
  const TimePoint now = std::chrono::steady_clock::now();
  if (last_prune_ != TimePoint{} && now - last_prune_ < options_.prune_interval) return;
  last_prune_ = now;
  prune(deadline);
}

}  // namespace leader::detail
