// The sidecar of `leader serve` (serve_sidecar.hpp): start-up, the route table, the read-only
// views and shutdown.

#include "serve_sidecar.hpp"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>

#include "command_options.hpp"
#include "exit_codes.hpp"
#include "holders_json.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"
#include "serve_http.hpp"
#include "serve_page.hpp"
#include "serve_waits.hpp"

namespace leader::cli {
namespace {

using nlohmann::json;

constexpr const char* kReadyProbeLock = "leader-serve.readyz";

}  // namespace

Sidecar::Sidecar(const ServeOptions& o, std::shared_ptr<LeaseStore> store, std::string store_shown,
                 const Log& log)
    : o_(o),
      log_(log),
      observed_store_(store),
      store_(instrumented(std::move(store))),
      store_shown_(std::move(store_shown)),
      node_id_(o.node_id.empty() ? default_node_id() : o.node_id),
      ready_timeout_(duration_option(o.ready_timeout, "--ready-timeout")),
      max_wait_(duration_option(o.max_wait, "--max-wait")),
      max_ttl_(duration_option(o.max_ttl, "--max-ttl")),
      bus_(std::make_shared<EventBus>()),
      memory_history_(std::make_shared<MemoryHistory>(200)),
      leases_(store_, bus_, node_id_) {
  for (const auto& l : o.locks) check_lock_option(l, "--lock");
  for (const auto& l : o.campaigns) check_lock_option(l, "--campaign");
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
  if (!o.campaigns.empty()) start_campaigns(campaign_ttl);
}

void Sidecar::start_campaigns(Duration ttl) {
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
    campaigns_ =
        std::make_unique<Campaigns>(store_, o_.campaigns, ttl, node_id_, sinks, log_, attach);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--campaign-ttl: ") + e.what());
  }
}

std::shared_ptr<LeaseStore> Sidecar::instrumented(std::shared_ptr<LeaseStore> store) {
#ifdef LEADER_HAVE_METRICS
  return metrics_.instrument(std::move(store));
#else
  return store;
#endif
}

void Sidecar::routes(httplib::Server& svr, const Credentials& credentials) {
  using Request = httplib::Request;
  using Response = httplib::Response;
#ifdef LEADER_HAVE_METRICS
  install_guards(svr, credentials, log_,
                 [this](const Request& req, const Response& res, double seconds) {
                   serve_metrics_.observe(req.method, req.path, res.status, seconds);
                 });
#else
  install_guards(svr, credentials, log_, {});
#endif
  svr.Get("/healthz", [](const Request&, Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  svr.Get("/readyz", [this](const Request&, Response& res) { ready(res); });
  svr.Get("/metrics", [this](const Request&, Response& res) {
#ifdef LEADER_HAVE_METRICS
    serve_metrics_.refresh_process();
    res.set_content(metrics_.serialize(), "text/plain; version=0.0.4; charset=utf-8");
#else
    res.status = 503;
    res.set_content("metrics not built (leader::metrics is not part of this build)\n",
                    "text/plain");
#endif
  });
  svr.Get("/", [](const Request&, Response& res) {
    res.set_content(status_page_html(), "text/html; charset=utf-8");
  });
  svr.Get("/v1/locks", [this](const Request&, Response& res) { send_json(res, 200, all_locks()); });
  svr.Get(R"(/v1/locks/([^/]+))", [this](const Request& req, Response& res) {
    send_json(res, 200, lock_json(checked_lock(req.matches[1])));
  });
  svr.Post(R"(/v1/locks/([^/]+)/acquire)",
           optional_body([this](const Request& req, Response& res) { acquire(req, res); }));
  svr.Post(R"(/v1/locks/([^/]+)/renew)",
           optional_body([this](const Request& req, Response& res) { renew(req, res); }));
  svr.Post(R"(/v1/locks/([^/]+)/release)",
           optional_body([this](const Request& req, Response& res) { release(req, res); }));
  svr.Get("/v1/leases", [this](const Request&, Response& res) {
    send_json(res, 200, {{"leases", leases_.list()}});
  });
  svr.Get(R"(/v1/leases/([^/]+))",
          [this](const Request& req, Response& res) { own_lease(req, res); });
  svr.Get(R"(/v1/locks/([^/]+)/watch)",
          [this](const Request& req, Response& res) { watch(req, res); });
  svr.Get(R"(/v1/leader/([^/]+))", [this](const Request& req, Response& res) { leader(req, res); });
  svr.Post(R"(/v1/leader/([^/]+)/resign)", optional_body([this](const Request& req, Response& res) {
             (void)body_object(req, {});
             resign(req, res);
           }));
  svr.Get("/v1/history",
          [this](const Request&, Response& res) { send_json(res, 200, history_json()); });
}

void Sidecar::shut_down() {
  stopping_.request_stop();
  if (campaigns_) campaigns_->stop();
  std::vector<std::string> failures;
  std::size_t n = leases_.release_all(&failures);
  if (n > 0) log_.notice("released " + std::to_string(n) + " lease(s) held for API clients");
  for (const auto& f : failures)
    log_.error("could not release " + f + "; it expires on the store at its ttl");
}

void Sidecar::reap(const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  while (!stop.stop_requested()) {
    cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    if (!stop.stop_requested()) leases_.drop_expired();
  }
}

void Sidecar::ready(httplib::Response& res) {
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

json Sidecar::lock_json(const std::string& lock) {
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

// GET /v1/leases/{id}: the caller's own lease; the id in the path is the secret.
void Sidecar::own_lease(const httplib::Request& req, httplib::Response& res) {
  send_json(res, 200, leases_.get(req.matches[1], request_client()));
}

// GET /v1/locks/{name}/watch: Server-Sent Events of the lock's holders (observe_lock: watched
// where the store can, else polled), one `holders` event per change, until the client leaves or
// the sidecar stops; a store failure ends the stream with an `error` event. It holds a worker for
// as long as it runs, so it takes a wait slot as a long-poll does.
void Sidecar::watch(const httplib::Request& req, httplib::Response& res) {
  std::string lock = checked_lock(req.matches[1]);
  auto slot = std::make_shared<WaitSlot>(waits_, wait_limit());
  auto client = std::make_shared<WaitWatch>(req, stopping_.get_token());
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, lock, slot, client](std::size_t /*offset*/, httplib::DataSink& sink) {
        std::uint64_t id = 0;
        auto send = [&sink, &id](const char* event, const json& data) {
          std::string text = "event: " + std::string(event) + "\nid: " + std::to_string(++id) +
                             "\ndata: " + data.dump() + "\n\n";
          return sink.is_writable() && sink.write(text.data(), text.size());
        };
        bool written = true;
        try {
          ObserveOptions options;
          options.call_timeout = ready_timeout_;
          observe_lock(
              *observed_store_, lock,
              [&](const LockState& state) {
                written = send(
                    "holders",
                    {{"lock", lock}, {"held", state.held()}, {"holders", holders_json(state)}});
                return written;
              },
              client->token(), options);
        } catch (const BackendError& e) {
          written = send("error",
                         error_json(std::string(to_string(e.code())), without_secrets(e.what())));
        } catch (const std::exception& e) {
          written = send("error", error_json("internal", without_secrets(e.what())));
        }
        if (!written || client->client_gone()) return false;
        sink.done();
        return true;
      });
}

json Sidecar::all_locks() {
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

json Sidecar::history_json() {
  json records = json::array();
  for (const auto& r : memory_history_->records()) records.push_back(json::parse(to_json_line(r)));
  return {{"records", records}};
}

}  // namespace leader::cli
