#include "leader/detail/store_support.hpp"

#include <algorithm>
#include <string>

#include "leader/errors.hpp"
#include "leader/names.hpp"

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
  if (node_id.empty() || node_id.size() > 255)
    throw InvalidArgument("node id '" + std::string(node_id.substr(0, 64)) +
                          "' must be 1..255 characters for the " + std::string(store) + " store");
}

void validate_request(const LeaseRequest& request, std::string_view store) {
  validate_lock_name(request.lock);
  validate_owner_token(request.owner);
  validate_node_id(request.node_id, store);
  if (request.ttl <= Duration{0})
    throw InvalidArgument("lease ttl must be > 0 (got " + std::to_string(request.ttl.count()) +
                          " ms)");
  if (request.slots < 0)
    throw InvalidArgument("slots must be >= 0 (got " + std::to_string(request.slots) + ")");
}

void validate_lease(const Lease& lease) {
  validate_lock_name(lease.lock);
  validate_owner_token(lease.owner);
  if (lease.slot < 0) throw InvalidArgument("slot " + std::to_string(lease.slot) + " is < 0");
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
