#pragma once
// A Redis client: one server (standalone, or the primary Sentinel names) or a Redis Cluster,
// reached through connection pools, with one send path for every call (send.cpp): a script sent
// again by its source after NOSCRIPT, a command routed by its first key on a cluster and
// following MOVED and ASK, READONLY and CLUSTERDOWN making it look for the primary again, WAIT
// after a write with `?wait_replicas=`. The asynchronous lane (async_lane.hpp) is its other
// door: pipelined commands and pub/sub change notifications on one thread. It knows commands and
// replies, not what a store keeps in its keys.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "async_lane.hpp"
#include "cluster.hpp"
#include "connection.hpp"
#include "pool.hpp"
#include "send.hpp"

namespace leader::redis {

/// The client of one Redis deployment (standalone, Sentinel or Cluster). Thread-safe.
class Client {
 public:
  /// A client for `config`; connects lazily on the first call.
  explicit Client(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// The settings it connects with.
  [[nodiscard]] const ClientConfig& config() const { return pool_.config(); }
  /// The connection pool of the one server (standalone, Sentinel); on a cluster, of its first
  /// seed (for settings only).
  [[nodiscard]] const ConnectionPool& pool() const { return pool_; }

  /// Sends `command` (routed by its first key on a cluster: a script call's after its key count,
  /// a plain command's argument, following MOVED and ASK at most 3 times: neither executed it,
  /// so sending it to the node named replays nothing) and returns its reply. An error reply
  /// throws BackendError naming `operation` (reject()); so does a failure, and, with `wait` and
  /// `?wait_replicas=`, a WAIT that failed after the command wrote (then an unknown outcome).
  /// Sent::acked tells how many replicas acknowledged.
  Sent send(const Command& command, std::string_view operation, Deadline deadline,
            bool wait = false);
  /// Most commands one pipeline of send_each() carries.
  static constexpr std::size_t kPipelineChunk = 1000;
  /// Sends `commands`, each as send() would, but grouped by the node serving each one's first
  /// key, one pipeline per node and chunk of kPipelineChunk (with one WAIT after a chunk that
  /// wrote, with `wait`). A command a node redirected (MOVED, ASK: not executed) is sent again
  /// alone by send(). What send() would throw is each Sent's error instead: an error reply, a
  /// failure (commands without a reply when the connection fails or the deadline passes: an
  /// unknown outcome), a node that could not be found (nothing sent).
  std::vector<Sent> send_each(std::vector<Command> commands, std::string_view operation,
                              Deadline deadline, bool wait = false);
  /// Every node to read all keys from: the one server, or each primary of the cluster (SCAN
  /// walks one node's keys).
  std::vector<ConnectionPool*> nodes(Deadline deadline);
  /// Sends `command` to `node` (one of nodes(): a command about that node's own keys, as SCAN)
  /// by send()'s path without its routing and WAIT: its reply. An error reply or a failure throws
  /// BackendError naming `operation`.
  Reply send_to(ConnectionPool& node, const Command& command, std::string_view operation,
                Deadline deadline);
  /// The pool serving `key`: the one pool, or on a cluster the primary of its slot.
  ConnectionPool& pool_for(const std::string& key, Deadline deadline);

  /// A new connection of its own to the server of `channel` (the primary of its slot on a
  /// cluster; the Sentinel primary, ROLE checked), subscribed to `channel`; null when the server
  /// refuses the channel (ACL NOPERM). Throws BackendError as the pool's connections do.
  [[nodiscard]] std::unique_ptr<Connection> subscribe(const std::string& channel);
  /// Waits for a message on `subscriber` until `until` or until `stop_fd` becomes readable; true
  /// when one came. Messages queued behind the first are consumed with it: one read answers them
  /// all. Throws BackendError(unavailable) when the connection drops.
  static bool wait_for_message(Connection& subscriber, Deadline until, int stop_fd);

  /// True when the asynchronous lane may carry commands: standalone or Sentinel without
  /// `?wait_replicas=` (the lane neither routes by slot nor sends WAIT).
  [[nodiscard]] bool lane_available() const noexcept;
  /// AsyncLane::submit; an error reply reaches `done` as reject()'s BackendError, naming
  /// `operation`. Throws BackendError(failed_precondition) when !lane_available().
  void submit(Command command, std::string channel, std::string_view operation, Deadline deadline,
              AsyncLane::Done done);
  /// AsyncLane::wait.
  std::uint64_t wait_change(const std::string& channel, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order, std::function<void(bool)> woken);
  /// AsyncLane::cancel.
  void cancel_wait(std::uint64_t id) noexcept;
  /// The lane's counters (zero before its first use).
  [[nodiscard]] AsyncLane::Stats lane_stats() const;

 private:
  /// `commands` as one pipeline on `pool` (send_calls(): a flushed script is sent again by its
  /// source; after an ASKING when `asking`), retried as ConnectionPool::run does; with `wait`
  /// and `?wait_replicas=`, then one WAIT on the same connection when a reply changed
  /// something. Error replies are left to the caller; a failure is reported per command.
  std::vector<Sent> pipeline(ConnectionPool& pool, const std::vector<Command>& commands,
                             Deadline deadline, bool wait, bool asking = false);
  /// Throws the error of a reply's `text`, after what it says changed: READONLY (the primary was
  /// demoted: Sentinel asks again), CLUSTERDOWN (the slot map is read again).
  [[noreturn]] void reject(const std::string& text, std::string_view operation);
  /// After a call failed with `e` on a cluster node: unavailable or deadline_exceeded may be a
  /// failover, so the next call reads the slot map again (nothing is replayed elsewhere).
  void node_failed(const BackendError& e);
  /// The first key of `command`, or "" when it has none.
  static std::string first_key(const Command& command);
  /// The lane, started on first use.
  AsyncLane& lane();

  ConnectionPool pool_;               // the one server (standalone, Sentinel); config holder
  std::unique_ptr<Cluster> cluster_;  // Cluster mode
  mutable std::mutex lane_mu_;
  std::unique_ptr<AsyncLane> lane_;  // after pool_: stopped before the pool closes
};

}  // namespace leader::redis
