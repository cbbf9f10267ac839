// The options of `leader serve`: their CLI definition and checks.

#include "serve_options.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "command_options.hpp"
#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"
#include "log_options.hpp"

namespace leader::cli {
namespace {

ListenAddress parse_listen(const std::string& text) {
  ListenAddress l;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw UsageError("--listen '" + text + "': expected [IPV6]:PORT");
    l.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw UsageError("--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:9464");
    l.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    throw UsageError("--listen '" + text + "': the port must be a number in 0..65535");
  l.port = std::stoi(port);
  return l;
}

// Loopback: "localhost", an IPv4 address in 127.0.0.0/8 or the IPv6 address ::1, as parsed by
// inet_pton (a host name such as "127.0.0.1.example.com" is not one).
bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--token-file '" + path + "': cannot read it: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front())))
    token.erase(0, 1);
  if (token.size() < 16)
    throw UsageError("--token-file '" + path +
                     "': the token must be at least 16 characters (e.g. openssl rand -hex 32)");
  return token;
}

// One line of --clients-file as (name, token); nullopt for a blank line or a # comment.
std::optional<std::pair<std::string, std::string>> client_line(const std::string& line,
                                                               const std::string& where) {
  std::istringstream fields(line);
  std::string name, token, extra;
  if (!(fields >> name) || name[0] == '#') return std::nullopt;
  if (!(fields >> token) || (fields >> extra)) throw UsageError(where + ": expected 'NAME TOKEN'");
  if (!std::isalnum(static_cast<unsigned char>(name[0])) ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
          std::string::npos ||
      name.size() > 64)
    throw UsageError(where + ": client name '" + name +
                     "' must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$ (at most 64 characters)");
  if (token.size() < 16)
    throw UsageError(where +
                     ": the token must be at least 16 characters (e.g. openssl rand -hex 32)");
  return std::pair{name, token};
}

// The `name token` lines of --clients-file (blank lines and # comments skipped); names and tokens
// unique.
std::vector<std::pair<std::string, std::string>> read_clients(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--clients-file '" + path + "': cannot read it: " + std::strerror(errno));
  std::vector<std::pair<std::string, std::string>> clients;
  std::set<std::string> names, tokens;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string where = "--clients-file '" + path + "' line ";
    where += std::to_string(n);
    auto client = client_line(line, where);
    if (!client) continue;
    where += ": client '";
    where += client->first;
    if (!names.insert(client->first).second) throw UsageError(where + "' repeated");
    if (!tokens.insert(client->second).second)
      throw UsageError(where + "' has the token of another client");
    clients.push_back(std::move(*client));
  }
  if (clients.empty()) throw UsageError("--clients-file '" + path + "': no client in it");
  return clients;
}

constexpr const char* kServeFooter =
    "\nAPI (JSON): GET /healthz /readyz /metrics /v1/locks /v1/locks/NAME /v1/leases\n"
    "/v1/leases/ID /v1/leader/NAME[?wait=30s&version=N] /v1/history, GET\n"
    "/v1/locks/NAME/watch (Server-Sent Events); POST /v1/locks/NAME/acquire\n"
    "{ttl,wait,node_id,slots}, .../renew {lease_id,ttl}, .../release {lease_id},\n"
    "POST /v1/leader/NAME/resign. Routes: docs/openapi.yaml.\n"
    "Leases held for clients are released on SIGTERM/SIGINT. Details: docs/serve.md.\n\n"
    "Exit codes: 0 stopped by SIGTERM/SIGINT, 64 usage error, 69 store unavailable or\n"
    "the address cannot be bound (e.g. another process listens on it).";

// --listen, --allow-remote, --token-file.
void add_listen_options(CLI::App* serve, ServeOptions& o) {
  serve->add_option("--listen", o.listen, "Address to listen on (HOST:PORT, port 0: any)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  serve->add_flag("--allow-remote", o.allow_remote,
                  "Allow a non-loopback --listen (requires --token-file or --clients-file)");
  serve
      ->add_option("--token-file", o.token_file,
                   "File with the bearer token every API request must send")
      ->type_name("FILE");
  serve
      ->add_option("--clients-file", o.clients_file,
                   "File of 'NAME TOKEN' lines: a bearer token per client, leases bound to it")
      ->type_name("FILE");
}

// --campaign, --campaign-ttl, --lock, --node-id, --history.
void add_lock_options(CLI::App* serve, ServeOptions& o) {
  serve->add_option("--campaign", o.campaigns, "Keep campaigning for LOCK (repeatable)")
      ->type_name("LOCK");
  serve->add_option("--campaign-ttl", o.campaign_ttl, "Lease time of campaigns")
      ->type_name("DURATION")
      ->capture_default_str();
  serve->add_option("--lock", o.locks, "Also show LOCK in /v1/locks and the page (repeatable)")
      ->type_name("LOCK");
  serve->add_option("--node-id", o.node_id, "This instance's id (default: <host>:<pid>)")
      ->type_name("ID");
  serve->add_option("--history", o.history, "Also write history records to this sink URI")
      ->type_name("URI");
}

// --ready-timeout, --max-wait, --max-ttl, --threads: the bounds of what requests may cost.
void add_limit_options(CLI::App* serve, ServeOptions& o) {
  serve
      ->add_option("--ready-timeout", o.ready_timeout,
                   "Bound of a store call of /readyz, "
                   "/v1/locks")
      ->type_name("DURATION")
      ->capture_default_str();
  serve->add_option("--max-wait", o.max_wait, "Longest 'wait' an acquire may ask for")
      ->type_name("DURATION")
      ->capture_default_str();
  serve->add_option("--max-ttl", o.max_ttl, "Longest 'ttl' an acquire or renew may ask for")
      ->type_name("DURATION")
      ->capture_default_str();
  serve->add_option("--threads", o.threads, "HTTP worker threads")
      ->check(CLI::Range(2, 256))
      ->capture_default_str();
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* serve = app.add_subcommand("serve",
                                   "HTTP sidecar: leases for any language, campaign "
                                   "mode, health, status page");
  serve->footer(kServeFooter);
  add_store_option(serve, o.store);
  add_listen_options(serve, o);
  add_lock_options(serve, o);
  add_limit_options(serve, o);
  serve->add_flag("-v,--verbose", o.verbose, "Log every request");
  add_log_format_option(serve);
  return serve;
}

ListenSettings listen_settings(const ServeOptions& o) {
  ListenSettings settings{parse_listen(o.listen), "", {}};
  if (!is_loopback(settings.address.host) && !o.allow_remote)
    throw UsageError("--listen " + o.listen +
                     " is not a loopback address: add --allow-remote and --token-file FILE");
  if (o.allow_remote && o.token_file.empty() && o.clients_file.empty())
    throw UsageError(
        "--allow-remote requires --token-file FILE (a bearer token) or --clients-file FILE");
  if (!o.token_file.empty()) settings.token = read_token(o.token_file);
  if (!o.clients_file.empty()) settings.clients = read_clients(o.clients_file);
  for (const auto& [name, token] : settings.clients)
    if (token == settings.token)
      throw UsageError("--clients-file: client '" + name + "' has the token of --token-file");
  return settings;
}

Duration duration_option(const std::string& text, const char* flag) {
  try {
    return leader::parse_duration(text, flag);
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace leader::cli
