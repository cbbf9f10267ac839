#include "leader/detail/store_support.hpp"

#include <algorithm>
#include <string>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/options.hpp"
#include "leader/uri.hpp"

namespace leader::detail {

void validate_table_prefix(std::string_view prefix, std::string_view where) {
  auto allowed = [](char c, bool first) {
    bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    return letter || (!first && c >= '0' && c <= '9');
  };
  bool ok = !prefix.empty() && prefix.size() <= kMaxTablePrefixLength;
  for (std::size_t i = 0; ok && i < prefix.size(); ++i) ok = allowed(prefix[i], i == 0);
  if (!ok)
    throw InvalidArgument("table_prefix '" + std::string(prefix) + "' of " + std::string(where) +
                          " must match ^[A-Za-z_][A-Za-z0-9_]{0,30}$ (1..31 letters, digits, "
                          "underscores, not starting with a digit)");
}

void validate_owner_token(std::string_view owner) {
  bool ok = owner.size() == 32 && std::all_of(owner.begin(), owner.end(), [](char c) {
              return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
            });
  if (!ok)
    throw InvalidArgument("owner token '" + std::string(owner.substr(0, 64)) +
                          "' must be 32 lower-case hex characters");
}

void validate_node_id(std::string_view node_id, std::string_view store) {
  if (node_id.empty() || node_id.size() > kMaxNodeIdLength)
    throw InvalidArgument("node id '" + std::string(node_id.substr(0, 64)) +
                          "' must be 1..255 characters for the " + std::string(store) + " store");
}

void validate_ttl(Duration ttl, std::string_view what) {
  if (ttl <= Duration{0})
    throw InvalidArgument(std::string(what) + " must be > 0 (got " + std::to_string(ttl.count()) +
                          " ms)");
  if (ttl > kMaxDuration)
    throw InvalidArgument(std::string(what) + " " + format_duration(ttl) +
                          " is longer than the maximum of 365 days");
}

namespace {

void validate_slots(int slots) {
  if (slots < 0 || slots > kMaxSlots)
    throw InvalidArgument("slots = " + std::to_string(slots) + " is outside 0.." +
                          std::to_string(kMaxSlots));
}

}  // namespace

void validate_request(const LeaseRequest& request, std::string_view store) {
  validate_lock_name(request.lock);
  validate_owner_token(request.owner);
  validate_node_id(request.node_id, store);
  validate_ttl(request.ttl, "lease ttl");
  validate_slots(request.slots);
}

void validate_lease(const Lease& lease) {
  validate_lock_name(lease.lock);
  validate_owner_token(lease.owner);
  validate_slots(lease.slots);
  const int limit = lease.slots >= 1 ? lease.slots : kMaxSlots;
  if (lease.slot < 0 || lease.slot >= limit)
    throw InvalidArgument("slot " + std::to_string(lease.slot) + " of lock '" + lease.lock +
                          "' is outside 0.." + std::to_string(limit - 1));
}

void validate_candidate(std::string_view group, const std::string_view* node_id,
                        std::string_view store) {
  validate_lock_name(group);
  if (node_id != nullptr) validate_node_id(*node_id, store);
}

namespace {

template <typename Since>
WallTime clamped_wall_time(Since since_epoch) {
  using Full = WallTime::duration;
  constexpr Since kMax = std::chrono::duration_cast<Since>(Full::max());
  constexpr Since kMin = std::chrono::duration_cast<Since>(Full::min());
  if (since_epoch >= kMax) return WallTime::max();
  if (since_epoch <= kMin) return WallTime::min();
  return WallTime(std::chrono::duration_cast<Full>(since_epoch));
}

}  // namespace

WallTime wall_time_from_epoch_ms(std::int64_t ms) {
  return clamped_wall_time(std::chrono::milliseconds(ms));
}

WallTime wall_time_from_epoch_us(std::int64_t us) {
  return clamped_wall_time(std::chrono::microseconds(us));
}

}  // namespace leader::detail
