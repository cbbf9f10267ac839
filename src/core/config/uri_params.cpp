// URI parameter names: the canonical scheme shared by every store (docs/uri-parameters.md) and
// the old spellings each store accepted before it, kept as deprecated aliases.

#include "leader/detail/uri_params.hpp"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <set>
#include <string>

#include "leader/errors.hpp"
#include "leader/uri.hpp"

namespace leader {
namespace {

// The one alias table. A store asks for the canonical name (Uri::param("tls_ca")); the old
// spelling of its own scheme is found here.
constexpr UriParamAlias kAliases[] = {
    {"etcd etcds", "cacert", "tls_ca"},
    {"etcd etcds", "cert", "tls_cert"},
    {"etcd etcds", "key", "tls_key"},
    {"dynamodb", "cacert", "tls_ca"},
    {"redis rediss unix", "pool", "pool_size"},
    {"sqlite", "table_prefix", "prefix"},
    {"postgres postgresql", "table_prefix", "prefix"},
    {"mysql mariadb", "table_prefix", "prefix"},
    {"zk zookeeper", "root", "prefix"},
};

bool applies(const UriParamAlias& a, std::string_view scheme) {
  std::string_view rest = a.schemes;
  while (!rest.empty()) {
    auto space = rest.find(' ');
    if (rest.substr(0, space) == scheme) return true;
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return false;
}

// One line on stderr per old spelling and process: the library has no logger of its own.
void warn_deprecated(const UriParamAlias& a, std::string_view scheme) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::string id = std::string(scheme) + "?" + std::string(a.alias);
  std::lock_guard lock(mutex);
  if (!warned.insert(id).second) return;
  std::cerr << "leader: URI parameter '" << a.alias << "' of " << scheme
            << ":// is deprecated; use '" << a.canonical << "' (docs/uri-parameters.md)\n";
}

}  // namespace

std::span<const UriParamAlias> uri_param_aliases() { return kAliases; }

std::optional<std::string> Uri::param(const std::string& key) const {
  auto it = query.find(key);
  std::optional<std::string> value;
  if (it != query.end()) value = it->second;
  for (const UriParamAlias& a : kAliases) {
    if (a.canonical != key || !applies(a, scheme)) continue;
    auto old = query.find(std::string(a.alias));
    if (old == query.end()) continue;
    if (value && *value != old->second) {
      std::string message = "URI parameters '";
      message.append(a.alias).append("' and '").append(key).append("' of '");
      message.append(redacted()).append("' differ ('").append(a.alias);
      message.append("' is the deprecated spelling of '").append(key).append("'): give one");
      throw InvalidArgument(message);
    }
    warn_deprecated(a, scheme);
    value = old->second;
  }
  return value;
}

void Uri::expect_params(std::initializer_list<std::string_view> known) const {
  auto is_known = [&](std::string_view key) {
    if (std::find(known.begin(), known.end(), key) != known.end()) return true;
    return std::any_of(std::begin(kAliases), std::end(kAliases), [&](const UriParamAlias& a) {
      return a.alias == key && applies(a, scheme) &&
             std::find(known.begin(), known.end(), a.canonical) != known.end();
    });
  };
  for (const auto& [key, value] : query) {
    if (is_known(key)) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InvalidArgument("unknown parameter '" + key + "' in store URI '" + redacted() +
                          "' (known: " + (list.empty() ? "none" : list) + ")");
  }
}

}  // namespace leader
