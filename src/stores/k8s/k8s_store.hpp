#pragma once
// leader::k8s: leases as coordination.k8s.io/v1 Lease objects, in the format of client-go's
// LeaseLock, so client-go leader electors and this library's replicas exclude each other.
// See README.md (data model, safety argument, failure modes).

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "clients/k8s/api.hpp"
#include "config.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"
#include "record.hpp"

namespace leader::k8s {

/// The Kubernetes Lease store. Thread-safe.
class K8sStore : public LeaseStore, public LockLister, public LockWatcher {
 public:
  /// A store over the API server and namespace of `config`; no I/O until the first call.
  explicit K8sStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return "k8s"; }

  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// Held locks under `prefix`: one LIST of the namespace's Leases (no selector: the lock
  /// names are in the leader/lock annotation, the label holds only their hash), the names
  /// matched here, then inspect() of each.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// Reads the lock (as inspect()) and, while its holders equal `last_seen`, list-watches its
  /// Lease objects from the resourceVersion of that read's LIST on a connection of its own: by
  /// the lock's label (slots and the base object) once the base object carries it, otherwise
  /// the base object by fieldSelector=metadata.name (absent, or written by a client-go
  /// holder). Every ADDED/MODIFIED/DELETED event re-reads; an ERROR event or 410 re-reads and
  /// watches from the new LIST. Returns at a change, at `deadline` or on `stop` (then the last
  /// read, possibly unchanged). README.md, "Watching".
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;

  /// The API client (tests and the benchmark issue raw calls through it).
  [[nodiscard]] Api& api() { return api_; }

 private:
  /// What this process's judge says of a held record: live, and how long it has left.
  struct Judgement {
    bool live = false;
    Duration left{};
  };
  Judgement judge(const LeaseView& view, TimePoint received);
  void saw_write(const Reply& reply);
  Acquired acquire_single(const LeaseRequest& request, Deadline deadline);
  Acquired acquire_group(const LeaseRequest& request, Deadline deadline);
  /// Writes `grant` over `current` (a GET's or LIST's object; null to create): the reply, with
  /// the written object, or nullopt on 409 / 404 (someone else wrote first).
  std::optional<nlohmann::json> write(const std::string& name, const nlohmann::json& current,
                                      const Grant& grant, Deadline deadline);
  /// Rewrites an object this owner holds with `grant` (renew, release), following 409s.
  LeaseStatus update_own(const std::string& name, const std::string& identity, const Grant& grant,
                         Deadline deadline);
  /// Frees `written` (the object our own write returned) after a refused acquisition.
  void withdraw(const std::string& name, const nlohmann::json& written, const Grant& grant,
                Deadline deadline);
  /// What read_lock() found: the lock as inspect() shows it, the resourceVersion of its LIST
  /// (where a watch starts) and whether that LIST held the base object (it carries the label).
  struct LockRead {
    LockState state;
    std::string version;
    bool labelled_base = false;
  };
  /// inspect(): the LIST by the lock's label first, then the GET of the base object, so that a
  /// watch from the LIST's resourceVersion misses no change made after either read.
  LockRead read_lock(std::string_view lock, Deadline deadline);
  /// The objects of `lock` found by its label (slot objects and, when labelled, the base);
  /// `version`, when given, gets the LIST's resourceVersion.
  std::vector<std::pair<LeaseView, nlohmann::json>> lock_objects(std::string_view lock,
                                                                 TimePoint& received,
                                                                 Deadline deadline,
                                                                 std::string* version = nullptr);
  /// Bumps the lock's fencing counter on its base object (a group grant's token); refuses when
  /// the base object has a live single holder.
  std::uint64_t next_group_fence(const LeaseRequest& request, Deadline deadline);
  void check_single_shape(const LeaseRequest& request, const nlohmann::json& written,
                          const Grant& grant, Deadline deadline);
  void check_group_shape(const LeaseRequest& request, const std::string& own_name,
                         const nlohmann::json& written, const Grant& grant, Deadline deadline);
  [[nodiscard]] std::string key(const std::string& name) const;
  void remember(const std::string& name, const nlohmann::json& object);
  std::optional<nlohmann::json> remembered(const std::string& name);

  Api api_;
  std::mutex mu_;
  std::unordered_map<std::string, nlohmann::json> cache_;  // guarded by mu_: last own writes
};

/// Throws BackendError(failed_precondition) when `view` belongs to another lock than `lock`
/// (object names are an encoding; the annotation holds the exact name).
void check_owner_lock(const LeaseView& view, std::string_view lock);

}  // namespace leader::k8s
