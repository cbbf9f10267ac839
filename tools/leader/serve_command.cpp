// `leader serve`: the HTTP sidecar (docs/serve.md). HTTP is cpp-httplib 0.11 from Debian
// (libcpp-httplib-dev); why that library: tools/leader/README.md.

#include "serve_command.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "exit_codes.hpp"
#include "holders_json.hpp"
#include "leader/errors.hpp"
#include "leader/history.hpp"
#ifdef LEADER_HAVE_METRICS
#include "leader/metrics.hpp"
#endif
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "log_options.hpp"
#include "serve_campaign.hpp"
#include "serve_leases.hpp"
#include "serve_page.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxBodyBytes = std::size_t{16} * 1024;
constexpr Duration kMaxLongPoll = std::chrono::seconds(60);
constexpr const char* kReadyProbeLock = "leader-serve.readyz";

struct Listen {
  std::string host;
  int port = 0;
};

Listen parse_listen(const std::string& text) {
  Listen l;
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

// Listening sockets get SO_REUSEADDR only (a restart may bind while old connections linger in
// TIME_WAIT). cpp-httplib's default sets SO_REUSEPORT, which lets a second process bind the same
// port and take half of the connections: renewals then reach a sidecar that never heard of the
// lease.
void exclusive_socket_options(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// The numeric host and port of a socket address.
std::pair<std::string, int> host_and_port(const sockaddr_storage& addr, socklen_t len) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, port,
                  sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {"", -1};
  return {host, std::atoi(port)};
}

// The socket of the connection that carries `req`, or -1: cpp-httplib 0.11 does not hand it to
// handlers, so it is found among this process's descriptors by its two addresses (unique while the
// handler runs, since the worker keeps the connection open until the handler returns).
int connection_socket(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
      continue;
    if (host_and_port(local, local_len).second == req.local_port &&
        host_and_port(peer, peer_len) == std::pair{req.remote_addr, req.remote_port})
      return fd;
  }
  return -1;
}

// Whether the client closed its side of the connection (EOF or an error pending). Bytes of a
// pipelined next request do not count.
bool connection_gone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) != 0) return true;
  char c = 0;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// The stop token of one waiting request: fires when the sidecar stops or when the client closes
// its connection (checked every 100 ms), so that a client that gave up is not granted the lock.
class WaitWatch {
 public:
  WaitWatch(const httplib::Request& req, const std::stop_token& stopping)
      : fd_(connection_socket(req)), relay_(stopping, [this] { source_.request_stop(); }) {
    if (fd_ >= 0) poller_ = std::jthread([this](const std::stop_token& done) { poll(done); });
  }
  WaitWatch(const WaitWatch&) = delete;
  WaitWatch& operator=(const WaitWatch&) = delete;
  ~WaitWatch() = default;  // poller_ (declared last) is stopped and joined first

  [[nodiscard]] std::stop_token token() const { return source_.get_token(); }
  /// True once the client was seen gone (now or by the poller).
  [[nodiscard]] bool client_gone() {
    if (!gone_ && fd_ >= 0 && connection_gone(fd_)) gone_ = true;
    return gone_;
  }

 private:
  void poll(const std::stop_token& done) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    while (!done.stop_requested()) {
      if (connection_gone(fd_)) {
        gone_ = true;
        source_.request_stop();
        return;
      }
      cv.wait_for(lock, done, std::chrono::milliseconds(100), [] { return false; });
    }
  }

  int fd_;
  std::stop_source source_;
  std::atomic<bool> gone_{false};
  std::stop_callback<std::function<void()>> relay_;
  std::jthread poller_;
};

// One of the bounded places for requests that wait (long-polls, acquires with a wait): at most
// `limit` at once, so that waiting requests never hold every HTTP worker and renewals, releases
// and health checks are still answered. The excess is refused with 429 and Retry-After.
class WaitSlot {
 public:
  WaitSlot(std::atomic<int>& count, int limit) : count_(count) {
    if (count_.fetch_add(1) >= limit) {
      count_.fetch_sub(1);
      throw ApiError(429, "too_many_waits",
                     "at most " + std::to_string(limit) +
                         " waiting requests (acquires with 'wait', long-polls) at once "
                         "(--threads - 2); retry later");
    }
  }
  WaitSlot(const WaitSlot&) = delete;
  WaitSlot& operator=(const WaitSlot&) = delete;
  ~WaitSlot() { count_.fetch_sub(1); }

 private:
  std::atomic<int>& count_;
};

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

Duration duration_option(const std::string& text, const char* flag) {
  try {
    return parse_duration(text, flag);
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump() + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& reason) {
  send_json(res, status, error_json(code, without_secrets(reason)));
}

// The request body as a JSON object ({} when empty); 400 otherwise.
json body_object(const httplib::Request& req, const std::set<std::string>& allowed) {
  if (req.body.empty()) return json::object();
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    throw ApiError(400, "bad_body", "the request body must be a JSON object");
  for (auto& [key, value] : body.items()) {
    if (!allowed.count(key)) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      // NOLINTNEXTLINE(performance-inefficient-string-concatenation): once, the throw ends the loop
      throw ApiError(400, "unknown_field", "unknown field '" + key + "' (allowed: " + names + ")");
    }
  }
  return body;
}

// A duration field: "1m30s"-style string or a number of seconds.
Duration duration_field(const json& body, const char* name, Duration fallback) {
  if (!body.contains(name)) return fallback;
  const json& v = body[name];
  try {
    if (v.is_string()) return parse_duration(v.get<std::string>(), name);
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0))
      return parse_duration(std::to_string(v.get<std::int64_t>()) + "s", name);
  } catch (const InvalidArgument& e) {
    throw ApiError(400, "invalid_argument", e.what());
  }
  throw ApiError(400, "invalid_argument",
                 std::string("'") + name + "' must be a duration such as \"30s\" or whole seconds");
}

std::string string_field(const json& body, const char* name) {
  if (!body.contains(name)) return {};
  if (!body[name].is_string())
    throw ApiError(400, "invalid_argument", std::string("'") + name + "' must be a string");
  return body[name].get<std::string>();
}

std::string query_or(const httplib::Request& req, const char* name, const std::string& fallback) {
  return req.has_param(name) ? req.get_param_value(name) : fallback;
}

// The sidecar: its store, leases, campaigns and HTTP routes.
class Sidecar {
 public:
  Sidecar(const ServeOptions& o, std::shared_ptr<LeaseStore> store, std::string store_shown,
          const Log& log)
      : o_(o),
        log_(log),
        store_(instrumented(std::move(store))),
        store_shown_(std::move(store_shown)),
        node_id_(o.node_id.empty() ? default_node_id() : o.node_id),
        ready_timeout_(duration_option(o.ready_timeout, "--ready-timeout")),
        max_wait_(duration_option(o.max_wait, "--max-wait")),
        max_ttl_(duration_option(o.max_ttl, "--max-ttl")),
        bus_(std::make_shared<EventBus>()),
        memory_history_(std::make_shared<MemoryHistory>(200)),
        leases_(store_, bus_, node_id_) {
    for (const auto& l : o.locks) check_lock(l, "--lock");
    for (const auto& l : o.campaigns) check_lock(l, "--campaign");
    Duration campaign_ttl = duration_option(o.campaign_ttl, "--campaign-ttl");
    if (!o.history.empty()) {
      try {
        history_ = open_history(o.history);
      } catch (const InvalidArgument& e) {
        throw UsageError(std::string("--history: ") + e.what());
      } catch (const std::exception& e) {
        throw StoreUnavailable(std::string("--history: ") + e.what());
      }
    }
    feeds_.push_back(attach_history(*bus_, memory_history_));
#ifdef LEADER_HAVE_METRICS
    feeds_.push_back(metrics_.attach(*bus_));
#endif
    if (history_) feeds_.push_back(attach_history(*bus_, history_));
    if (!o.campaigns.empty()) {
      try {
        std::vector<std::shared_ptr<HistorySink>> sinks{memory_history_};
        if (history_) sinks.push_back(history_);
        std::function<std::vector<Subscription>(EventBus&)> attach;
#ifdef LEADER_HAVE_METRICS
        attach = [this](EventBus& bus) {
          std::vector<Subscription> feeds;
          feeds.push_back(metrics_.attach(bus));  // campaign elections, held gauge, token gauge
          return feeds;
        };
#endif
        campaigns_ = std::make_unique<Campaigns>(store_, o.campaigns, campaign_ttl, node_id_, sinks,
                                                 log_, attach);
      } catch (const InvalidArgument& e) {
        throw UsageError(std::string("--campaign-ttl: ") + e.what());
      }
    }
  }

  void routes(httplib::Server& svr, const std::string& token) {
    if (!token.empty()) {
      svr.set_pre_routing_handler([token](
                                      const httplib::Request& req,
                                      httplib::Response& res) -> httplib::Server::HandlerResponse {
        if (req.path == "/healthz" || req.path == "/readyz" || req.path == "/")
          return httplib::Server::HandlerResponse::Unhandled;
        if (same_secret(req.get_header_value("Authorization"), "Bearer " + token))
          return httplib::Server::HandlerResponse::Unhandled;
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "unauthorized", "a valid 'Authorization: Bearer <token>' is required");
        return httplib::Server::HandlerResponse::Handled;
      });
    }
    svr.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req,
           httplib::Response& res) -> httplib::Server::HandlerResponse {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          if (res.status == 404)
            send_error(res, 404, "not_found", "no route " + req.method + " " + req.path);
          else if (res.status == 413)
            send_error(res, 413, "body_too_large",
                       "request bodies are limited to " + std::to_string(kMaxBodyBytes) + " bytes");
          else
            send_error(res, res.status, "http_error", "HTTP " + std::to_string(res.status));
          return httplib::Server::HandlerResponse::Handled;
        }));
    svr.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr& error) {
          try {
            rethrow_as_api_error(error);
          } catch (const ApiError& e) {
            if (e.status() == 429) res.set_header("Retry-After", "1");
            send_error(res, e.status(), e.code(), e.what());
          } catch (const std::exception& e) {
            send_error(res, 500, "internal", e.what());
          } catch (...) {
            send_error(res, 500, "internal", "unknown exception");
          }
        });
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      log_.info(req.method + " " + req.path + " -> " + std::to_string(res.status));
    });

    svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"status", "ok"}});
    });
    svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { ready(res); });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
#ifdef LEADER_HAVE_METRICS
      res.set_content(metrics_.serialize(), "text/plain; version=0.0.4; charset=utf-8");
#else
      res.status = 503;
      res.set_content("metrics not built (leader::metrics is not part of this build)\n",
                      "text/plain");
#endif
    });
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(status_page_html(), "text/html; charset=utf-8");
    });
    svr.Get("/v1/locks", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, all_locks());
    });
    svr.Get(R"(/v1/locks/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, lock_json(checked_lock(req.matches[1])));
    });
    svr.Post(R"(/v1/locks/([^/]+)/acquire)",
             [this](const httplib::Request& req, httplib::Response& res) { acquire(req, res); });
    svr.Post(R"(/v1/locks/([^/]+)/renew)",
             [this](const httplib::Request& req, httplib::Response& res) {
               json body = body_object(req, {"lease_id", "ttl"});
               send_json(res, 200,
                         leases_.renew(checked_lock(req.matches[1]), required_id(body),
                                       capped_ttl(duration_field(body, "ttl", Duration{0}))));
             });
    svr.Post(R"(/v1/locks/([^/]+)/release)", [this](const httplib::Request& req,
                                                    httplib::Response& res) {
      json body = body_object(req, {"lease_id"});
      send_json(res, 200, leases_.release(checked_lock(req.matches[1]), required_id(body)));
    });
    svr.Get("/v1/leases", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"leases", leases_.list()}});
    });
    svr.Get(R"(/v1/leader/([^/]+))",
            [this](const httplib::Request& req, httplib::Response& res) { leader(req, res); });
    svr.Get("/v1/history", [this](const httplib::Request&, httplib::Response& res) {
      json records = json::array();
      for (const auto& r : memory_history_->records())
        records.push_back(json::parse(to_json_line(r)));
      send_json(res, 200, {{"records", records}});
    });
  }

  // Ends acquire waits and long-polls, so that the HTTP worker pool can drain.
  void stop_waits() { stopping_.request_stop(); }

  // Stops campaigns and releases every lease (after the HTTP server stopped).
  void shut_down() {
    stopping_.request_stop();
    if (campaigns_) campaigns_->stop();
    std::vector<std::string> failures;
    std::size_t n = leases_.release_all(&failures);
    if (n > 0) log_.notice("released " + std::to_string(n) + " lease(s) held for API clients");
    for (const auto& f : failures)
      log_.error("could not release " + f + "; it expires on the store at its ttl");
  }

  void reap(const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    while (!stop.stop_requested()) {
      cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
      if (!stop.stop_requested()) leases_.drop_expired();
    }
  }

  [[nodiscard]] std::stop_token stopping() const { return stopping_.get_token(); }

 private:
  static void check_lock(const std::string& name, const char* flag) {
    try {
      validate_lock_name(name);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string(flag) + ": " + e.what());
    }
  }

  static std::string checked_lock(const std::string& name) {
    try {
      validate_lock_name(name);
    } catch (const InvalidArgument& e) {
      throw ApiError(400, "invalid_lock_name", e.what());
    }
    return name;
  }

  static std::string required_id(const json& body) {
    std::string id = string_field(body, "lease_id");
    if (id.empty()) throw ApiError(400, "missing_lease_id", "'lease_id' is required");
    return id;
  }

  void ready(httplib::Response& res) {
    try {
      (void)store_->inspect(kReadyProbeLock, Deadline::after(ready_timeout_));
      send_json(res, 200, {{"ready", true}, {"store", store_->scheme()}});
    } catch (const BackendError& e) {
      send_json(res, 503,
                {{"ready", false},
                 {"error", std::string(to_string(e.code()))},
                 {"reason", without_secrets(e.what())}});
    }
  }

  json lock_json(const std::string& lock) {
    LockState state = store_->inspect(lock, Deadline::after(ready_timeout_));
    json out = {{"lock", lock},
                {"held", state.held()},
                {"holders", holders_json(state)},
                {"sidecar_leases", leases_.held_for(lock)},
                {"campaign", campaigns_ && campaigns_->campaigns(lock)}};
    int slots = leases_.slots_of(lock);
    if (slots > 0) {
      out["slots"] = slots;
      out["available"] = std::max(0, slots - static_cast<int>(state.holders.size()));
    }
    return out;
  }

  json all_locks() {
    std::set<std::string> names(o_.locks.begin(), o_.locks.end());
    names.insert(o_.campaigns.begin(), o_.campaigns.end());
    for (const auto& l : leases_.locks_seen()) names.insert(l);
    json locks = json::array();
    for (const auto& name : names) locks.push_back(lock_json(name));
    return {{"locks", locks},
            {"node_id", node_id_},
            {"store", store_shown_},
            {"now", format_utc(std::chrono::system_clock::now())}};
  }

  // A ttl a client asked for, refused (400) above --max-ttl: a lease whose client vanished
  // stays on the store for its whole ttl.
  [[nodiscard]] Duration capped_ttl(Duration ttl) const {
    if (ttl > max_ttl_)
      throw ApiError(400, "invalid_argument",
                     "'ttl' " + format_duration(ttl) + " exceeds this sidecar's --max-ttl " +
                         format_duration(max_ttl_));
    return ttl;
  }

  [[nodiscard]] int wait_limit() const { return std::max(1, o_.threads - 2); }

  void acquire(const httplib::Request& req, httplib::Response& res) {
    json body = body_object(req, {"ttl", "wait", "node_id", "slots"});
    AcquireRequest r;
    r.lock = checked_lock(req.matches[1]);
    r.ttl = capped_ttl(duration_field(body, "ttl", r.ttl));
    r.wait = duration_field(body, "wait", Duration{0});
    if (r.wait > max_wait_)
      throw ApiError(400, "invalid_argument",
                     "'wait' " + format_duration(r.wait) + " exceeds this sidecar's --max-wait " +
                         format_duration(max_wait_));
    r.node_id = string_field(body, "node_id");
    if (body.contains("slots")) {
      const json& s = body["slots"];
      if (!s.is_number_integer() || s.get<std::int64_t>() < 1 || s.get<std::int64_t>() > 1000)
        throw ApiError(400, "invalid_argument", "'slots' must be an integer in 1..1000");
      r.slots = s.get<int>();
    }
    json lease;
    if (r.wait.count() == 0) {
      lease = leases_.acquire(r, stopping_.get_token());
    } else {
      WaitSlot slot(waits_, wait_limit());
      WaitWatch watch(req, stopping_.get_token());
      try {
        lease = leases_.acquire(r, watch.token());
      } catch (const ApiError&) {
        if (watch.client_gone())
          throw ApiError(499, "client_closed", "the client closed its connection while waiting");
        throw;
      }
      if (watch.client_gone()) {
        release_unreceived(lease);
        throw ApiError(499, "client_closed", "the client closed its connection while waiting");
      }
    }
    send_lease(res, lease);
  }

  // Sends a lease reply; a lease whose reply cannot be written (the client went away) is released
  // at once, since nobody else can ever renew or release it.
  void send_lease(httplib::Response& res, const json& lease) {
    auto text = std::make_shared<const std::string>(lease.dump() + "\n");
    res.status = 200;
    res.set_content_provider(
        text->size(), "application/json",
        [text](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
          return sink.is_writable() && sink.write(text->data() + offset, length);
        },
        [this, lease](bool written) {
          if (!written) release_unreceived(lease);
        });
  }

  // Releases a lease granted to a client that is gone. Never throws (it runs in a destructor).
  void release_unreceived(const json& lease) noexcept {
    try {
      std::string lock = lease.at("lock").get<std::string>();
      std::string what = "the lease of '" + lock + "' (fencing token " +
                         std::to_string(lease.at("fencing_token").get<std::uint64_t>()) + ")";
      try {
        leases_.release(lock, lease.at("lease_id").get<std::string>());
        log_.notice(what + " was released: its client went away before the reply");
      } catch (const ApiError& e) {
        if (e.status() != 404)  // 404: the client's own release (or the reaper) came first
          log_.error(what + ", whose client went away, could not be released: " +
                     without_secrets(e.what()));
      }
    } catch (...) {  // NOLINT(bugprone-empty-catch): logging failed; nothing more can be done
    }
  }

  void leader(const httplib::Request& req, httplib::Response& res) {
    std::string lock = checked_lock(req.matches[1]);
    if (!campaigns_ || !campaigns_->campaigns(lock))
      throw ApiError(404, "not_campaigning",
                     "this sidecar does not campaign for '" + lock +
                         "' (start it with --campaign " + lock + ")");
    if (!req.has_param("wait")) {
      send_json(res, 200, campaigns_->state(lock));
      return;
    }
    Duration wait;
    std::uint64_t version = 0;
    try {
      wait = parse_duration(req.get_param_value("wait"), "wait");
      version = std::stoull(query_or(req, "version", "0"));
    } catch (const InvalidArgument& e) {
      throw ApiError(400, "invalid_argument", e.what());
    } catch (const std::exception&) {
      throw ApiError(400, "invalid_argument", "'version' must be a non-negative integer");
    }
    if (wait > kMaxLongPoll) throw ApiError(400, "invalid_argument", "'wait' is limited to 60s");
    WaitSlot slot(waits_, wait_limit());  // keep workers for other requests
    send_json(res, 200, campaigns_->wait_change(lock, version, wait, stopping_.get_token()));
  }

  std::shared_ptr<LeaseStore> instrumented(std::shared_ptr<LeaseStore> store) {
#ifdef LEADER_HAVE_METRICS
    return metrics_.instrument(std::move(store));
#else
    return store;
#endif
  }

#ifdef LEADER_HAVE_METRICS
  metrics::Metrics metrics_;  // declared first: store_ is instrumented by it
#endif
  const ServeOptions& o_;
  Log log_;
  std::shared_ptr<LeaseStore> store_;
  std::string store_shown_;
  std::string node_id_;
  Duration ready_timeout_, max_wait_, max_ttl_;
  std::shared_ptr<EventBus> bus_;
  std::shared_ptr<MemoryHistory> memory_history_;
  std::shared_ptr<HistorySink> history_;
  std::vector<Subscription> feeds_;
  ClientLeases leases_;
  std::unique_ptr<Campaigns> campaigns_;
  std::stop_source stopping_;
  std::atomic<int> waits_{0};  ///< long-polls and acquires with a wait under way
};

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* serve = app.add_subcommand("serve",
                                   "HTTP sidecar: leases for any language, campaign "
                                   "mode, health, status page");
  serve->footer(
      "\nAPI (JSON): GET /healthz /readyz /metrics /v1/locks /v1/locks/NAME /v1/leases\n"
      "/v1/leader/NAME[?wait=30s&version=N] /v1/history; POST /v1/locks/NAME/acquire\n"
      "{ttl,wait,node_id,slots}, .../renew {lease_id,ttl}, .../release {lease_id}.\n"
      "Leases held for clients are released on SIGTERM/SIGINT. Details: docs/serve.md.\n\n"
      "Exit codes: 0 stopped by SIGTERM/SIGINT, 64 usage error, 69 store unavailable or\n"
      "the address cannot be bound (e.g. another process listens on it).");
  serve->add_option("--store", o.store, "Store URI (default: $LEADER_STORE, else SQLite file)")
      ->check(
          CLI::Validator([](std::string& uri) { return store_uri_problem(uri, "--store"); }, "URI"))
      ->type_name("URI");
  serve->add_option("--listen", o.listen, "Address to listen on (HOST:PORT, port 0: any)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  serve->add_flag("--allow-remote", o.allow_remote,
                  "Allow a non-loopback --listen (requires --token-file)");
  serve
      ->add_option("--token-file", o.token_file,
                   "File with the bearer token every API request must send")
      ->type_name("FILE");
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
  serve->add_flag("-v,--verbose", o.verbose, "Log every request");
  add_log_format_option(serve);
  return serve;
}

int serve(const ServeOptions& o) {
  Log log(o.verbose ? 1 : 0);
  Listen listen = parse_listen(o.listen);
  if (!is_loopback(listen.host) && !o.allow_remote)
    throw UsageError("--listen " + o.listen +
                     " is not a loopback address: add --allow-remote and --token-file FILE");
  if (o.allow_remote && o.token_file.empty())
    throw UsageError("--allow-remote requires --token-file FILE (a bearer token)");
  std::string token = o.token_file.empty() ? "" : read_token(o.token_file);

  // SIGTERM/SIGINT/SIGHUP are taken by one thread (sigwait), blocked in every other.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  StoreChoice choice = choose_store(o.store);
  std::string shown = redact_uri(choice.uri);
  std::shared_ptr<LeaseStore> store;
  try {
    shown = announce_store(choice, log);
    store = leader::open(choice.uri);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--store: ") + e.what());
  } catch (const std::exception& e) {
    throw StoreUnavailable("cannot open store " + shown + ": " + e.what());
  }
  Sidecar sidecar(o, store, shown, log);

  httplib::Server svr;
  svr.new_task_queue = [n = o.threads] { return new httplib::ThreadPool(n); };
  svr.set_payload_max_length(kMaxBodyBytes);
  svr.set_read_timeout(std::chrono::seconds(10));
  svr.set_write_timeout(std::chrono::seconds(10));
  svr.set_socket_options(exclusive_socket_options);
  sidecar.routes(svr, token);
  int port = listen.port;
  if (port == 0) {
    port = svr.bind_to_any_port(listen.host);
    if (port < 0)
      throw StoreUnavailable("cannot listen on " + o.listen + ": " + std::strerror(errno));
  } else if (!svr.bind_to_port(listen.host, port)) {
    // Exclusive (no SO_REUSEPORT): a second sidecar on the same port ends here with EADDRINUSE.
    throw StoreUnavailable("cannot listen on " + o.listen + ": " + std::strerror(errno));
  }
  std::string host =
      listen.host.find(':') != std::string::npos ? "[" + listen.host + "]" : listen.host;
  log.notice("serving http://" + host + ":" + std::to_string(port) + "/ (store " + shown +
             ", node " + (o.node_id.empty() ? default_node_id() : o.node_id) + ")");

  std::jthread reaper([&sidecar](const std::stop_token& stop) { sidecar.reap(stop); });
  std::atomic<int> got_signal{0};
  std::atomic<bool> listen_failed{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!listen_failed) got_signal = sig;
    sidecar.stop_waits();
    // stop() does nothing until listen_after_bind() has started: a signal right after the bind
    // would otherwise be lost and the process would serve on, deaf to SIGTERM.
    while (!listen_failed && !svr.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    svr.stop();
  });
  (void)svr.listen_after_bind();
  if (got_signal ==
      0) {  // the server stopped on its own (stop() follows a signal): wake the waiter
    listen_failed = true;
    // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread): SIGTERM is blocked, the waiter sigwait()s
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  reaper.request_stop();
  reaper.join();
  sidecar.shut_down();
  if (listen_failed) {
    log.error("the HTTP server stopped on its own (listen failed)");
    return kExitUnavailable;
  }
  log.notice("stopped (signal " + std::to_string(got_signal.load()) + ")");
  return kExitOk;
}

}  // namespace leader::cli
