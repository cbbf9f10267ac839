#pragma once
// Lease objects as client-go's LeaseLock writes them, plus this store's annotations and labels
// (README.md, "Data model"), and the names of the objects a lock uses.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "leader/store.hpp"

namespace leader::k8s {

/// Annotation: the exact lock name (object names are an encoding of it).
inline constexpr const char* kLockAnnotation = "leader/lock";
/// Annotation: the lock's size, 0 for a single leader, N for a group of N slots.
inline constexpr const char* kSlotsAnnotation = "leader/slots";
/// Annotation: the slot index of a group slot object.
inline constexpr const char* kSlotAnnotation = "leader/slot";
/// Annotation: the fencing counter, bumped by the write that grants the lease.
inline constexpr const char* kFenceAnnotation = "leader/fencing-token";
/// Label: a hash of the lock name, so one LIST finds every object of a lock.
inline constexpr const char* kLockLabel = "leader/lock-hash";

/// 16 lower-case hex digits of the 64-bit FNV-1a hash of `text` (not a secret, not for security).
[[nodiscard]] std::string short_hash(std::string_view text);
/// The Lease object name of a lock: the name itself when it is a DNS-1123 subdomain, otherwise a
/// lower-cased, sanitised prefix + "-" + short_hash(lock).
[[nodiscard]] std::string object_name(std::string_view lock);
/// The Lease object name of slot `slot` of a group lock: object_name + "-slot<K>".
[[nodiscard]] std::string slot_object_name(std::string_view lock, int slot);
/// True when `name` is a DNS-1123 subdomain (what Kubernetes accepts as a Lease name).
[[nodiscard]] bool is_dns_subdomain(std::string_view name);

/// `t` as a Kubernetes MicroTime: "2006-01-02T15:04:05.000000Z" (UTC, six digits).
[[nodiscard]] std::string micro_time(WallTime t);
/// Parses a MicroTime (or RFC 3339 with fewer digits); nullopt when malformed.
[[nodiscard]] std::optional<WallTime> parse_micro_time(std::string_view text);

/// holderIdentity of an owner: "<node_id>_<owner token>" (the kube-controller-manager style).
[[nodiscard]] std::string holder_identity(std::string_view node_id, std::string_view owner);
/// Splits a holderIdentity into node id and owner token; the owner is empty when the identity
/// was not written by this library (client-go's identities).
[[nodiscard]] std::pair<std::string, std::string> split_identity(std::string_view identity);

/// leaseDurationSeconds for a ttl that is not a lease grant (a release's keep_for, a candidate's
/// ttl): whole seconds rounded up, at least 1.
[[nodiscard]] std::int32_t duration_seconds(Duration ttl);
/// leaseDurationSeconds for a lease grant of `ttl`: whole seconds rounded DOWN, and that many
/// seconds is the ttl reported as granted. Contenders (ours and client-go's) wait exactly
/// leaseDurationSeconds, so the holder must never believe more than that; rounding up and
/// reporting the ttl asked would let the server hold longer than the holder believes and delay
/// every takeover. A ttl under one second cannot be written (the API requires
/// leaseDurationSeconds > 0): BackendError{invalid_argument} naming the ttl.
[[nodiscard]] std::int32_t lease_seconds(Duration ttl);

/// The lease granted for `request`: its ttl is the whole seconds written (lease_seconds).
[[nodiscard]] Lease lease_of(const LeaseRequest& request, std::uint64_t fence, int slot);

/// A read-only view of the fields of one Lease object this store uses.
struct LeaseView {
  std::string name;
  std::string resource_version;
  std::string uid;                    ///< metadata.uid: new when the object is re-created
  std::string holder;                 ///< empty: free
  std::int32_t duration_seconds = 0;  ///< leaseDurationSeconds (0 when absent)
  std::int32_t transitions = 0;       ///< leaseTransitions
  std::optional<std::string> lock;    ///< kLockAnnotation
  std::optional<int> slots;           ///< kSlotsAnnotation
  std::optional<int> slot;            ///< kSlotAnnotation
  std::uint64_t fence = 0;            ///< kFenceAnnotation (0 when absent)

  /// Reads `object`; throws BackendError(internal) when it is not a Lease.
  static LeaseView of(const nlohmann::json& object);
};

/// What a write puts into spec and metadata; see README.md.
struct Grant {
  std::string lock;
  std::string holder;  ///< holderIdentity ("" frees the lease)
  std::int32_t duration_seconds = 1;
  bool new_holder = false;  ///< acquireTime = now, leaseTransitions + 1, fence + 1
  int slots = 0;
  std::optional<int> slot{};
  std::optional<std::uint64_t> fence{};  ///< with new_holder: this token instead of fence + 1
};

/// `base` (the current base object of `lock`, or null for a create) with its fencing counter
/// bumped by one and nothing else changed: how a group grant draws its token. With
/// `free_holder` the same write also frees the base object's single lease (holderIdentity "",
/// leaseDurationSeconds 1, as client-go's release): for a holder the caller judged expired, whose
/// record would otherwise look renewed to every observer (a new resourceVersion restarts their
/// count) and so block the group it draws the token for.
[[nodiscard]] nlohmann::json bump_fence(nlohmann::json base, std::string_view name,
                                        std::string_view lock, bool free_holder = false);

/// `base` (the current object, or an empty one for a create) with `grant` applied: spec fields
/// as client-go's LeaseLock writes them, this store's annotations and label; other metadata,
/// resourceVersion and uid kept, so the write is conditional on them.
[[nodiscard]] nlohmann::json apply_grant(nlohmann::json base, std::string_view name,
                                         const Grant& grant);

}  // namespace leader::k8s
