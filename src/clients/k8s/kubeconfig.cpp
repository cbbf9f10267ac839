#include "kubeconfig.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "http/base64.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

namespace fs = std::filesystem;

/// One named context, cluster or user: its body and the file that defined it.
struct Stanza {
  YAML::Node node;   ///< the map under "context", "cluster" or "user" (may be null)
  std::string file;  ///< the kubeconfig file, for messages and relative paths
  std::string what;  ///< e.g. "user 'admin'", for messages
};

/// Several kubeconfig files merged by client-go's rules.
struct Kubeconfig {
  std::string files;            ///< ':'-joined, for messages
  std::string current_context;  ///< from the first file that sets it
  std::map<std::string, Stanza> contexts, clusters, users;
};

/// Fields of a user this client cannot act on, and why.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kUnsupportedUserFields{{
    {"exec", "credential plugins are not supported: use a token file or client certificate"},
    {"auth-provider",
     "auth-provider plugins are not supported: use a token file or client certificate"},
    {"username", "basic authentication is not supported: use a token file or client certificate"},
    {"password", "basic authentication is not supported: use a token file or client certificate"},
    {"as", "impersonation is not supported"},
    {"as-uid", "impersonation is not supported"},
    {"as-groups", "impersonation is not supported"},
    {"as-user-extra", "impersonation is not supported"},
}};

[[noreturn]] void refuse(const std::string& file, const std::string& what,
                         const std::string& rule) {
  throw InvalidArgument("kubeconfig '" + file + "': " + (what.empty() ? "" : what + ": ") + rule);
}

/// Empty when `path` can be read, else the reason.
std::string unreadable(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "is a directory";
  errno = 0;
  std::ifstream in(path);
  if (in) return {};
  return errno != 0 ? std::error_code(errno, std::generic_category()).message() : "cannot open";
}

/// The string value of `field` of a map, "" when absent or null; refuses a non-scalar.
std::string scalar(const YAML::Node& map, std::string_view field, const std::string& file,
                   const std::string& what) {
  if (!map.IsMap()) return {};
  const YAML::Node v = map[std::string(field)];
  if (!v || v.IsNull()) return {};
  if (!v.IsScalar()) refuse(file, what, "'" + std::string(field) + "' is not a string");
  return v.Scalar();
}

std::string scalar(const Stanza& s, std::string_view field) {
  return scalar(s.node, field, s.file, s.what);
}

bool present(const Stanza& s, std::string_view field) {
  if (!s.node.IsMap()) return false;
  const YAML::Node v = s.node[std::string(field)];
  return v && !v.IsNull();
}

bool flag(const Stanza& s, std::string_view field) {
  if (!present(s, field)) return false;
  const YAML::Node v = s.node[std::string(field)];
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out))
    refuse(s.file, s.what, "'" + std::string(field) + "' must be true or false");
  return out;
}

/// A path field, resolved against the folder of the stanza's file, checked readable; or "".
std::string path_field(const Stanza& s, std::string_view field) {
  std::string text = scalar(s, field);
  if (text.empty()) return text;
  fs::path path(text);
  if (path.is_relative()) path = fs::absolute(s.file).parent_path() / path;
  std::string resolved = path.lexically_normal().string();
  if (const std::string why = unreadable(resolved); !why.empty())
    refuse(s.file, s.what, std::string(field) + " '" + resolved + "' cannot be read (" + why + ")");
  return resolved;
}

/// Standard base64 with padding (line breaks skipped, as Go's decoder does), or nullopt.
std::optional<std::string> base64_decode(std::string_view text) {
  std::string digits;
  for (char c : text)
    if (c != '\n' && c != '\r') digits += c;
  return http::base64_decode(digits);
}

/// A base64 PEM field (-data), decoded; or "". The value is never quoted.
std::string pem_field(const Stanza& s, std::string_view field) {
  std::string text = scalar(s, field);
  if (text.empty()) return text;
  const std::optional<std::string> pem = base64_decode(text);
  if (!pem) refuse(s.file, s.what, std::string(field) + " is not valid base64");
  if (pem->find("-----BEGIN ") == std::string::npos)
    refuse(s.file, s.what, std::string(field) + " does not hold PEM text after base64 decoding");
  return *pem;
}

YAML::Node parse_file(const std::string& path) {
  if (const std::string why = unreadable(path); !why.empty())
    refuse(path, "", "cannot be read (" + why + ")");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    refuse(path, "",
           "is not valid YAML (line " + std::to_string(e.mark.line + 1) + ", column " +
               std::to_string(e.mark.column + 1) + ": " + e.msg + ")");
  }
}

/// Adds the named entries of list `list` ("contexts") whose body is `item` ("context"); a name
/// defined already (by an earlier file) is kept.
void merge_list(const YAML::Node& root, const std::string& list, const std::string& item,
                const std::string& file, std::map<std::string, Stanza>& into) {
  const YAML::Node entries = root[list];
  if (!entries || entries.IsNull()) return;
  if (!entries.IsSequence()) refuse(file, "", "'" + list + "' is not a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node entry = entries[i];
    const std::string at = list + "[" + std::to_string(i) + "]";
    if (!entry.IsMap()) refuse(file, at, "is not a map with 'name' and '" + item + "'");
    const std::string name = scalar(entry, "name", file, at);
    if (name.empty()) refuse(file, at, "has no name");
    std::string what = item;
    what.append(" '").append(name).append("'");
    const YAML::Node body = entry[item];
    if (body && !body.IsNull() && !body.IsMap()) refuse(file, what, "'" + item + "' is not a map");
    into.try_emplace(name, Stanza{body, file, what});
  }
}

void merge_file(Kubeconfig& k, const std::string& file) {
  const YAML::Node root = parse_file(file);
  if (!root || root.IsNull()) return;  // an empty file sets nothing
  if (!root.IsMap()) refuse(file, "", "is not a YAML map of clusters, contexts and users");
  if (k.current_context.empty()) k.current_context = scalar(root, "current-context", file, "");
  merge_list(root, "contexts", "context", file, k.contexts);
  merge_list(root, "clusters", "cluster", file, k.clusters);
  merge_list(root, "users", "user", file, k.users);
}

std::string names_of(const std::map<std::string, Stanza>& stanzas) {
  std::string names;
  for (const auto& [name, stanza] : stanzas) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

void apply_cluster(const Stanza& s, ClusterConfig& c) {
  std::string server = scalar(s, "server");
  if (server.empty()) refuse(s.file, s.what, "has no server");
  const bool https = server.rfind("https://", 0) == 0;
  if (!https && server.rfind("http://", 0) != 0)
    refuse(s.file, s.what, "server '" + server + "' is not an http:// or https:// URL");
  while (server.back() == '/') server.pop_back();
  c.base_url = server;
  if (present(s, "proxy-url")) refuse(s.file, s.what, "'proxy-url' is not supported");
  c.tls_server_name = scalar(s, "tls-server-name");
  c.tls_verify = !flag(s, "insecure-skip-tls-verify");
  c.ca_file = path_field(s, "certificate-authority");
  c.ca_pem = pem_field(s, "certificate-authority-data");
  const bool has_ca = !c.ca_file.empty() || !c.ca_pem.empty();
  if (!c.ca_file.empty() && !c.ca_pem.empty())
    refuse(s.file, s.what,
           "gives both certificate-authority and certificate-authority-data; give one");
  if (!c.tls_verify && has_ca)
    refuse(s.file, s.what,
           "insecure-skip-tls-verify is set together with a certificate authority; give one");
  if (!https && (has_ca || !c.tls_verify || !c.tls_server_name.empty()))
    refuse(s.file, s.what, "TLS fields need an https:// server, not '" + server + "'");
}

void apply_user(const Stanza& s, ClusterConfig& c) {
  for (const auto& [field, reason] : kUnsupportedUserFields)
    if (present(s, field))
      refuse(s.file, s.what, "'" + std::string(field) + "': " + std::string(reason));
  c.token = scalar(s, "token");
  c.token_file = path_field(s, "tokenFile");
  if (!c.token.empty() && !c.token_file.empty())
    refuse(s.file, s.what, "gives both token and tokenFile; give one");
  c.cert_file = path_field(s, "client-certificate");
  c.cert_pem = pem_field(s, "client-certificate-data");
  c.key_file = path_field(s, "client-key");
  c.key_pem = pem_field(s, "client-key-data");
  if (!c.cert_file.empty() && !c.cert_pem.empty())
    refuse(s.file, s.what, "gives both client-certificate and client-certificate-data; give one");
  if (!c.key_file.empty() && !c.key_pem.empty())
    refuse(s.file, s.what, "gives both client-key and client-key-data; give one");
  const bool has_cert = !c.cert_file.empty() || !c.cert_pem.empty();
  const bool has_key = !c.key_file.empty() || !c.key_pem.empty();
  if (has_cert != has_key)
    refuse(s.file, s.what,
           has_cert ? "gives a client certificate without client-key or client-key-data"
                    : "gives a client key without client-certificate or client-certificate-data");
  if (has_cert && c.base_url.rfind("https://", 0) != 0)
    refuse(s.file, s.what, "a client certificate needs an https:// server");
}

}  // namespace

std::vector<std::string> default_kubeconfig_files() {
  std::vector<std::string> files;
  std::error_code ec;
  const char* list = std::getenv("KUBECONFIG");
  if (list != nullptr && *list != '\0') {
    std::string_view rest(list);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string file(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (file.empty() || !fs::exists(file, ec)) continue;
      if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    }
    return files;
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    const std::string file = std::string(home) + "/.kube/config";
    if (fs::exists(file, ec)) files.push_back(file);
  }
  return files;
}

ClusterConfig load_kubeconfig(const std::vector<std::string>& files, const std::string& context) {
  Kubeconfig k;
  for (const std::string& file : files) {
    k.files += (k.files.empty() ? "" : ":") + file;
    merge_file(k, file);
  }
  const std::string name = context.empty() ? k.current_context : context;
  if (name.empty()) refuse(k.files, "", "sets no current-context; choose one with ?context=NAME");
  const auto cx = k.contexts.find(name);
  if (cx == k.contexts.end())
    refuse(k.files, "",
           (context.empty() ? "current-context '" : "context '") + name +
               "' is not defined (contexts: " + names_of(k.contexts) + ")");
  const Stanza& ctx = cx->second;
  const std::string cluster = scalar(ctx, "cluster");
  if (cluster.empty()) refuse(ctx.file, ctx.what, "names no cluster");
  const auto cl = k.clusters.find(cluster);
  if (cl == k.clusters.end())
    refuse(ctx.file, ctx.what, "cluster '" + cluster + "' is not defined");
  ClusterConfig c;
  c.kubeconfig = k.files;
  c.context = name;
  apply_cluster(cl->second, c);
  if (const std::string user = scalar(ctx, "user"); !user.empty()) {
    const auto u = k.users.find(user);
    if (u == k.users.end()) refuse(ctx.file, ctx.what, "user '" + user + "' is not defined");
    apply_user(u->second, c);
  }
  if (const std::string ns = scalar(ctx, "namespace"); !ns.empty()) c.ns = ns;
  return c;
}

}  // namespace leader::k8s
