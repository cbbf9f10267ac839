#pragma once
// The table layout (see README.md): key attributes, lease items with one set of attributes per
// slot, and typed attribute values in DynamoDB's JSON form.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leader/time.hpp"

namespace leader::dynamodb {

inline constexpr const char* kPartitionKey = "pk";  ///< HASH key (S)
inline constexpr const char* kSortKey = "sk";       ///< RANGE key (S)
inline constexpr const char* kLeaseSortKey = "lease";
inline constexpr const char* kFence = "fence";  ///< per-lock fencing counter (N) on the lease item
/// The lock's size (N) on the lease item: 0 = single leader, N >= 1 = group of N slots.
inline constexpr const char* kSize = "slots";
/// Largest group size: every slot lives in the one lease item (DynamoDB items are <= 400 KB).
inline constexpr int kMaxSlots = 1000;

/// A string attribute value.
[[nodiscard]] nlohmann::json s_value(std::string_view v);
/// A number attribute value.
[[nodiscard]] nlohmann::json n_value(std::int64_t v);
/// A string attribute of `item`, or nullopt.
[[nodiscard]] std::optional<std::string> get_s(const nlohmann::json& item, const std::string& name);
/// A number attribute of `item` that fits int64, or nullopt.
[[nodiscard]] std::optional<std::int64_t> get_n(const nlohmann::json& item,
                                                const std::string& name);

/// `{"pk":..., "sk":...}` for an item key.
[[nodiscard]] nlohmann::json item_key(const std::string& pk, const std::string& sk);
/// The partition key of a lock's lease item: "lock#<lock>".
[[nodiscard]] std::string lease_pk(std::string_view lock);
/// The partition key of a strategic group's candidates: "candidates#<group>".
[[nodiscard]] std::string candidates_pk(std::string_view group);

/// The attribute names of one slot: owner o<i>, holder node h<i>, record version v<i>, lease
/// duration d<i> (ms), fencing token t<i>, and the server-time stamp a contender leaves: the
/// record version sv<i> it saw no later than server time s<i> (epoch ms, from HTTP `Date`).
struct SlotNames {
  explicit SlotNames(int slot);
  std::string owner, node, rvn, ttl, token, stamp_rvn, stamp;
};

/// One held slot as stored in the lease item.
struct SlotRecord {
  int slot = 0;
  std::string owner;
  std::string node_id;
  std::string rvn;  ///< record version: a new random value on every write of the slot
  Duration ttl{};   ///< lease duration of this record version
  std::uint64_t token = 0;
  std::string stamp_rvn;      ///< the record version the stamp is about ("" = no stamp)
  std::int64_t stamp_ms = 0;  ///< server time (epoch ms) by which `stamp_rvn` existed
  /// True when a stamp about the current record version exists.
  [[nodiscard]] bool stamped() const { return !rvn.empty() && stamp_rvn == rvn; }
};

/// The held slots of a lease item, ordered by slot.
[[nodiscard]] std::vector<SlotRecord> held_slots(const nlohmann::json& item);

}  // namespace leader::dynamodb
