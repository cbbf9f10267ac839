// Waiting in line (detail::WaitsInLine, issue 14 target 4): a fair waiter's contender key stays
// under the lock's prefix between its attempts, as etcd's own concurrency.Mutex keeps it, so the
// holders follow the keys' create revisions across processes (README.md "Waiting in line").

#include <algorithm>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "etcd_store.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

// The event types of a watch reply: etcd's JSON gateway spells mvccpb.Event.EventType by name
// and leaves out the default (PUT).
bool deletes(const Json& events) {
  return std::any_of(events.begin(), events.end(), [](const Json& e) {
    return e.is_object() && e.value("type", std::string()) == "DELETE";
  });
}

}  // namespace

void EtcdStore::delete_contender(const std::string& key, const std::string& value,
                                 Deadline deadline) {
  // Only while the key is still this waiter's (a missing key fails the compare: nothing to do).
  (void)gateway_.call("/v3/kv/txn",
                      ops::txn(Json::array({ops::value_is(key, value)}),
                               Json::array({{{"request_delete_range", ops::delete_key(key)}}})),
                      deadline);
}

void EtcdStore::leave_line(const LeaseRequest& request, Deadline deadline) noexcept {
  if (request.slots >= 1 || !request.wait_in_line) return;
  try {
    auto [key, value] = contender(request);
    try {
      delete_contender(key, value, deadline);
    } catch (const BackendError&) {
      // A place left behind would hold the lock once it is the lowest: its session is no longer
      // kept alive (abandon_sessions: no renewal of this store's other keys keeps it), and the
      // removal is sent again at the next acquire or renewal of this store.
      abandon_sessions();
      std::lock_guard lock(leaving_mu_);
      leaving_.emplace_back(std::move(key), std::move(value));
      any_leaving_.store(true, std::memory_order_release);
    }
  } catch (...) {  // allocation failure: the key then ends with its session
  }
}

void EtcdStore::retry_leaving(Deadline deadline) noexcept {
  if (!any_leaving_.load(std::memory_order_acquire)) return;
  std::vector<std::pair<std::string, std::string>> todo;
  {
    std::lock_guard lock(leaving_mu_);
    todo.swap(leaving_);
    any_leaving_.store(false, std::memory_order_release);
  }
  std::vector<std::pair<std::string, std::string>> failed;
  for (auto& [key, value] : todo) {
    try {
      if (deadline.expired()) throw BackendError(ErrorCode::deadline_exceeded, "etcd", "not sent");
      delete_contender(key, value, deadline);
    } catch (...) {
      failed.emplace_back(std::move(key), std::move(value));
    }
  }
  if (failed.empty()) return;
  std::lock_guard lock(leaving_mu_);
  for (auto& entry : failed) leaving_.push_back(std::move(entry));
  any_leaving_.store(true, std::memory_order_release);
}

std::optional<bool> EtcdStore::wait_turn(const LeaseRequest& request, Deadline deadline,
                                         const std::stop_token& stop) {
  if (request.slots >= 1 || !request.wait_in_line) return std::nullopt;
  const std::string prefix = lock_prefix(request.lock);
  const std::string key = contender(request).first;
  std::int64_t revision = 0;
  const std::vector<KeyValue> kvs = list(prefix, deadline, &revision);  // by create revision
  const auto mine =
      std::find_if(kvs.begin(), kvs.end(), [&](const KeyValue& kv) { return kv.key == key; });
  if (mine == kvs.end()) return std::nullopt;             // no place (gone with an expired session)
  if (mine == kvs.begin() || revision <= 0) return true;  // the lowest: this owner's turn
  // The Mutex's waitDeletes: only the key just ahead matters. Its deletion (release, leaving,
  // expiry) makes this key the lowest, unless another ahead is still there: the next attempt
  // and wait tell.
  return gateway_.watch(std::prev(mine)->key, "", revision + 1, deadline, stop, deletes);
}

}  // namespace leader::etcd
