#include "leader/open.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include "leader/detail/store_registration.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"

namespace leader {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StoreFactory> factories;
};
Registry& registry() {
  static Registry r;
  return r;
}

// Every scheme of every store in this source tree, with the store component that provides it
// (built into this program or not): generated at configure time from the SCHEMES of each
// store's leader_add_store (cmake/LeaderStore.cmake).
struct SchemeOwner {
  std::string_view scheme;
  std::string_view component;
};
constexpr SchemeOwner kStoreSchemes[] = {
#include "leader_store_schemes.inc"
};

const SchemeOwner* scheme_owner(std::string_view scheme) {
  for (const auto& entry : kStoreSchemes)
    if (entry.scheme == scheme) return &entry;
  return nullptr;
}

std::string no_schemes(std::string_view component) {
  return "store component '" + std::string(component) +
         "' declares no URI scheme: list them in SCHEMES of its leader_add_store";
}

}  // namespace

void register_store(std::string scheme, StoreFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(scheme)] = std::move(factory);
}

std::vector<std::string> registered_schemes() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, f] : r.factories) out.push_back(scheme);
  return out;
}

std::shared_ptr<LeaseStore> open(std::string_view text) {
  Uri uri = Uri::parse(text);
  StoreFactory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(uri.scheme); it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string have;
    for (const auto& s : registered_schemes()) have += (have.empty() ? "" : ", ") + s;
    if (const SchemeOwner* known = scheme_owner(uri.scheme)) {
      std::string component(known->component);
      throw InvalidArgument("store URI '" + uri.redacted() + "': the " + component +
                            " store is not built into this program (link leader::" + component +
                            "); available: " + have);
    }
    throw InvalidArgument("store URI '" + uri.redacted() + "': unknown scheme '" + uri.scheme +
                          "'; available: " + have);
  }
  // Every store is validated once, by the CheckedStore (src/core/checked_store.hpp), never by
  // the store itself.
  return detail::checked(factory(uri));
}

namespace detail {

std::vector<std::string_view> store_schemes(std::string_view component) {
  std::vector<std::string_view> out;
  for (const auto& entry : kStoreSchemes)
    if (entry.component == component) out.push_back(entry.scheme);
  return out;
}

bool register_store_schemes(std::string_view component, const StoreFactory& factory) {
  auto schemes = store_schemes(component);
  if (schemes.empty()) throw std::logic_error(no_schemes(component));
  for (std::string_view scheme : schemes) register_store(std::string(scheme), factory);
  return true;
}

bool register_history_schemes(std::string_view component, const HistoryFactory& factory) {
  auto schemes = store_schemes(component);
  if (schemes.empty()) throw std::logic_error(no_schemes(component));
  for (std::string_view scheme : schemes) register_history_sink(std::string(scheme), factory);
  return true;
}

}  // namespace detail
}  // namespace leader
