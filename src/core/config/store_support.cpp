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

void check_sql_schema_version(std::string_view scheme, int version, int expected,
                              std::string_view prefix, std::string_view schema_table) {
  if (version <= 0)
    throw BackendError(ErrorCode::failed_precondition, std::string(scheme),
                       "the tables " + std::string(prefix) +
                           "* do not exist (create_schema=false); apply the DDL of "
                           "docs/sql-schema.md or drop that option");
  if (version != expected)
    throw BackendError(ErrorCode::failed_precondition, std::string(scheme),
                       "schema version " + std::to_string(version) + " of " +
                           std::string(schema_table) + " is not the one this library uses (" +
                           std::to_string(expected) + ")");
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
