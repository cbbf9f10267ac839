#include "leader/open.hpp"

#include <algorithm>
#include <map>
#include <mutex>

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

// Every scheme this project knows, with the component that provides it.
const std::map<std::string, std::string>& known_schemes() {
  static const std::map<std::string, std::string> k = {
      {"memory", "memory"},       {"sqlite", "sqlite"},       {"redis", "redis"},
      {"rediss", "redis"},        {"unix", "redis"},          {"redis-sentinel", "redis"},
      {"redis-cluster", "redis"}, {"postgresql", "postgres"}, {"postgres", "postgres"},
      {"mysql", "mysql"},         {"mariadb", "mysql"},       {"etcd", "etcd"},
      {"etcds", "etcd"},          {"zk", "zookeeper"},        {"zookeeper", "zookeeper"},
      {"dynamodb", "dynamodb"},   {"mongodb", "mongodb"},     {"consul", "consul"},
      {"k8s", "kubernetes"},
  };
  return k;
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
    auto known = known_schemes().find(uri.scheme);
    if (known != known_schemes().end())
      throw InvalidArgument("store URI '" + uri.redacted() + "': the " + known->second +
                            " store is not built into this program (link leader::" + known->second +
                            "); available: " + have);
    throw InvalidArgument("store URI '" + uri.redacted() + "': unknown scheme '" + uri.scheme +
                          "'; available: " + have);
  }
  // Every store is validated once, by the CheckedStore (src/core/checked_store.hpp), never by
  // the store itself.
  return detail::checked(factory(uri));
}

}  // namespace leader
