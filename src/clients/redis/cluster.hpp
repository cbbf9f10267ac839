#pragma once
// Redis Cluster support of the client (the store's README.md, section Cluster): the slot map
// (CLUSTER SLOTS), one connection pool per primary, and the hash slot of a key (CRC16 of its hash
// tag).

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "leader/time.hpp"
#include "pool.hpp"

namespace leader::redis {

/// The hash slot (0..16383) of `key`: CRC16 (XMODEM) of its hash tag, the text between the first
/// '{' and the next '}' when that is not empty, else of the whole key.
int key_slot(std::string_view key);

/// The nodes of one cluster. Thread-safe.
class Cluster {
 public:
  /// A cluster reached first through `config.cluster_seeds`; reads the slot map on first use.
  explicit Cluster(const ClientConfig& config);

  /// The pool of the primary that serves `slot` (reading the slot map when unknown).
  ConnectionPool& pool_for_slot(int slot, Deadline deadline);
  /// The pool of the node at "host:port" (a MOVED or ASK target).
  ConnectionPool& pool_at(const std::string& endpoint);
  /// Every primary's pool (list_locks SCANs each).
  std::vector<ConnectionPool*> primaries(Deadline deadline);
  /// Reads the slot map again (after MOVED). Throws BackendError when no node answers.
  void refresh(Deadline deadline);
  /// Drops the slot map: the next call reads it again. After a connection error, a time-out or
  /// CLUSTERDOWN from a slot's owner (a failover may have promoted its replica, which then
  /// answers for the slot while the old owner is dead, paused or demoted).
  void forget();

 private:
  ConnectionPool& pool_locked(const std::string& endpoint);

  const ClientConfig& config_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ConnectionPool>> pools_;  // by "host:port"
  std::array<int, 16384> owner_{};                                // slot -> index in nodes_
  std::vector<std::string> nodes_;                                // primaries, "host:port"
  bool known_ = false;
};

}  // namespace leader::redis
