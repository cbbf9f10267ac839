// Lock names and tenants: validate_lock_name / is_valid_lock_name agree with the documented
// rule, and tenant mapping (tenant_lock_name, LeaderElector::for_tenant) only yields valid names.
// Input: "<tenant>\n<name>" (a single line is tried as a lock name and as a tenant).

#include <memory>

#include "fuzz_support.hpp"
#include "leader/elector.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"

namespace {

bool rule_allows(std::string_view name) {  // ^[A-Za-z0-9][A-Za-z0-9_.:-]*$, 1..255 characters
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (name.empty() || name.size() > leader::kMaxLockNameLength || !alnum(name[0])) return false;
  for (char c : name)
    if (!alnum(c) && c != '_' && c != '.' && c != ':' && c != '-') return false;
  return true;
}

void check_name(std::string_view name) {
  const bool valid = leader::is_valid_lock_name(name);
  if (valid != rule_allows(name)) __builtin_trap();
  bool threw = false;
  try {
    leader::validate_lock_name(name);
  } catch (const leader::InvalidArgument&) {
    threw = true;
  }
  if (threw == valid) __builtin_trap();
}

leader::LeaderElector& elector() {
  static leader::LeaderElector e(leader::open("memory:fuzz-lock-name"),
                                 leader::ElectionOptions{.wait_time = {}});
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = leader::fuzz::text_of(data, size);
  check_name(text);
  const auto nl = text.find('\n');
  const std::string tenant = text.substr(0, nl);
  const std::string name = nl == std::string::npos ? text : text.substr(nl + 1);
  check_name(name);
  leader::fuzz::expect_value_or_error([&] {
    const std::string full = leader::tenant_lock_name(tenant, name);
    if (full != "tenant:" + tenant + ":" + name || !rule_allows(full)) __builtin_trap();
  });
  leader::fuzz::expect_value_or_error([&] {
    const leader::LeaderElector scoped = elector().for_tenant(tenant);
    const leader::LockState s = scoped.inspect(name);  // maps the name, or throws
    if (s.lock != "tenant:" + tenant + ":" + name) __builtin_trap();
  });
  return 0;
}
