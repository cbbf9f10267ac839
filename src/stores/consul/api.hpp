#pragma once
// The parts of Consul's HTTP API the store uses (sessions, KV, transactions), with Consul's
// status codes mapped to BackendError codes. Reference: /work/shared/reference/consul-lock.md
// and Consul's api-docs pages session.mdx, kv.mdx, txn.mdx.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "transport.hpp"

namespace leader::consul {

/// One KV entry as Consul returns it (Value already base64-decoded).
struct Entry {
  std::string key;
  std::string value;
  std::string session;  ///< empty when not locked
  std::uint64_t flags = 0;
  std::uint64_t lock_index = 0;
  std::uint64_t create_index = 0;
  std::uint64_t modify_index = 0;
};

/// The entries under a prefix and the X-Consul-Index of the read.
struct Tree {
  std::vector<Entry> entries;
  std::uint64_t index = 0;
};

/// What a new session looks like.
struct SessionSpec {
  std::string name;
  Duration ttl{};
  Duration lock_delay{};
  bool delete_keys = false;  ///< Behavior "delete" instead of "release"
};

/// The outcome of PUT /v1/txn: committed (200) with its results, or rolled back (409).
struct TxnResult {
  bool committed = false;
  std::vector<Entry> results;
  std::string errors;  ///< the Errors' What texts when rolled back
};

/// A client of one agent's HTTP API.
class Api {
 public:
  /// A client as configured; no I/O yet.
  explicit Api(const Config& config) : transport_(config), config_(config) {}

  /// GET /v1/kv/<prefix>?recurse (empty tree on 404).
  Tree list(const std::string& prefix, Deadline deadline);
  /// The blocking form of list(): answers once the prefix's index passes `index` or after `wait`
  /// (Consul adds up to wait/16); nullopt when `stop` was requested or `deadline` passed first.
  std::optional<Tree> list_after(const std::string& prefix, std::uint64_t index, Duration wait,
                                 Deadline deadline, const std::stop_token& stop);
  /// GET /v1/kv/<key>, nullopt on 404.
  std::optional<Entry> get(const std::string& key, Deadline deadline);
  /// PUT /v1/session/create; returns the new session's ID.
  std::string create_session(const SessionSpec& spec, Deadline deadline);
  /// PUT /v1/session/renew/<id>: the TTL the agent reports, or nullopt when the session is gone.
  std::optional<Duration> renew_session(const std::string& id, Deadline deadline);
  /// PUT /v1/session/destroy/<id>.
  void destroy_session(const std::string& id, Deadline deadline);
  /// destroy_session that never throws (the session then ends after its TTL).
  void destroy_quietly(const std::string& id, Deadline deadline) noexcept;
  /// PUT /v1/kv/<key>?release=<id>&flags=<flags> with `value`; Consul's true/false.
  bool release(const std::string& key, const std::string& id, std::uint64_t flags,
               const std::string& value, Deadline deadline);
  /// PUT /v1/kv/<key>?acquire=<id>&flags=<flags> with `value`; Consul's true/false.
  bool acquire(const std::string& key, const std::string& id, std::uint64_t flags,
               const std::string& value, Deadline deadline);
  /// PUT /v1/kv/<key> (plain write, keeps the holder).
  void put(const std::string& key, const std::string& value, Deadline deadline);
  /// DELETE /v1/kv/<key>?cas=<index>; Consul's true/false.
  bool delete_cas(const std::string& key, std::uint64_t index, Deadline deadline);
  /// PUT /v1/txn with KV operations `ops`.
  TxnResult txn(const nlohmann::json& ops, Deadline deadline);

  /// The settings of this client.
  [[nodiscard]] const Config& config() const { return config_; }

 private:
  Reply call(std::string_view method, const std::string& target, const std::string& body,
             Deadline deadline);
  [[noreturn]] void fail(std::string_view what, const Reply& reply) const;
  [[nodiscard]] Tree tree_of(const Reply& reply) const;

  Transport transport_;
  Config config_;
};

/// A KV operation of a transaction (`verb` "lock", "unlock", "cas", ...).
[[nodiscard]] nlohmann::json kv_op(const std::string& verb, const std::string& key,
                                   const std::string& value = "", std::uint64_t flags = 0,
                                   std::uint64_t index = 0, const std::string& session = "");
/// Decodes one KV entry of a reply; throws BackendError{internal} when malformed.
[[nodiscard]] Entry decode_entry(const nlohmann::json& j);
/// Seconds of a Go duration string ("15s", "1500ms", "1m30s"); nullopt when malformed.
[[nodiscard]] std::optional<Duration> parse_go_duration(std::string_view text);
/// A duration as Consul's TTL / LockDelay string: "15s" when whole seconds, else "1500ms".
[[nodiscard]] std::string go_duration(Duration d);
/// Percent-encodes a key path for a URL (keeps [A-Za-z0-9_.-/]).
[[nodiscard]] std::string url_path(std::string_view key);

}  // namespace leader::consul
