// The lease API of `leader serve` (POST /v1/locks/NAME/acquire, renew, release) and the
// long-poll of a campaign (GET /v1/leader/NAME): Sidecar's handlers that change or wait for
// leadership. The leases themselves are ClientLeases' (serve_leases.hpp).

#include <cstdint>
#include <memory>

#include "leader/errors.hpp"
#include "leader/uri.hpp"
#include "serve_http.hpp"
#include "serve_sidecar.hpp"
#include "serve_waits.hpp"

namespace leader::cli {
namespace {

using nlohmann::json;

constexpr Duration kMaxLongPoll = std::chrono::seconds(60);

}  // namespace

// A ttl a client asked for, refused (400) above --max-ttl: a lease whose client vanished stays on
// the store for its whole ttl.
Duration Sidecar::capped_ttl(Duration ttl) const {
  if (ttl > max_ttl_)
    throw ApiError(400, "invalid_argument",
                   "'ttl' " + format_duration(ttl) + " exceeds this sidecar's --max-ttl " +
                       format_duration(max_ttl_));
  return ttl;
}

AcquireRequest Sidecar::acquire_request(const httplib::Request& req) const {
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
  r.client = request_client();
  if (body.contains("slots")) {
    const json& s = body["slots"];
    if (!s.is_number_integer() || s.get<std::int64_t>() < 1 || s.get<std::int64_t>() > 1000)
      throw ApiError(400, "invalid_argument", "'slots' must be an integer in 1..1000");
    r.slots = s.get<int>();
  }
  return r;
}

void Sidecar::acquire(const httplib::Request& req, httplib::Response& res) {
  AcquireRequest r = acquire_request(req);
  json lease =
      r.wait.count() == 0 ? leases_.acquire(r, stopping_.get_token()) : acquire_waiting(req, r);
  send_lease(res, lease);
}

// An acquire with a 'wait': in a wait slot, given up when the client leaves (499); a lease
// granted to a client that left meanwhile is released at once.
json Sidecar::acquire_waiting(const httplib::Request& req, const AcquireRequest& r) {
  WaitSlot slot(waits_, wait_limit());
  WaitWatch watch(req, stopping_.get_token());
  json lease;
  try {
    lease = leases_.acquire(r, watch.token());
  } catch (const ApiError&) {
    if (watch.client_gone())
      throw ApiError(499, "client_closed", "the client closed its connection while waiting");
    throw;
  }
  if (watch.client_gone()) {
    release_unreceived(lease, r.client);
    throw ApiError(499, "client_closed", "the client closed its connection while waiting");
  }
  return lease;
}

// Sends a lease reply; a lease whose reply cannot be written (the client went away) is released
// at once, since nobody else can ever renew or release it.
void Sidecar::send_lease(httplib::Response& res, const json& lease) {
  auto text = std::make_shared<const std::string>(lease.dump() + "\n");
  res.status = 200;
  res.set_content_provider(
      text->size(), "application/json",
      [text](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        return sink.is_writable() && sink.write(text->data() + offset, length);
      },
      [this, lease, client = request_client()](bool written) {
        if (!written) release_unreceived(lease, client);
      });
}

// Releases a lease granted to a client that is gone. Never throws (it runs in a destructor).
void Sidecar::release_unreceived(const json& lease, const std::string& client) noexcept {
  try {
    std::string lock = lease.at("lock").get<std::string>();
    std::string what = "the lease of '" + lock + "' (fencing token " +
                       std::to_string(lease.at("fencing_token").get<std::uint64_t>()) + ")";
    try {
      leases_.release(lock, lease.at("lease_id").get<std::string>(), client);
      log_.notice(what + " was released: its client went away before the reply");
    } catch (const ApiError& e) {
      if (e.status() != 404)  // 404: the client's own release (or the reaper) came first
        log_.error(what +
                   ", whose client went away, could not be released: " + without_secrets(e.what()));
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): logging failed; nothing more can be done
  }
}

void Sidecar::renew(const httplib::Request& req, httplib::Response& res) {
  json body = body_object(req, {"lease_id", "ttl"});
  send_json(res, 200,
            leases_.renew(checked_lock(req.matches[1]), required_lease_id(body), request_client(),
                          capped_ttl(duration_field(body, "ttl", Duration{0}))));
}

void Sidecar::release(const httplib::Request& req, httplib::Response& res) {
  json body = body_object(req, {"lease_id"});
  send_json(
      res, 200,
      leases_.release(checked_lock(req.matches[1]), required_lease_id(body), request_client()));
}

// A lock this sidecar campaigns for (404 not_campaigning otherwise).
std::string Sidecar::campaigned_lock(const std::string& name) const {
  std::string lock = checked_lock(name);
  if (!campaigns_ || !campaigns_->campaigns(lock))
    throw ApiError(404, "not_campaigning",
                   "this sidecar does not campaign for '" + lock + "' (start it with --campaign " +
                       lock + ")");
  return lock;
}

// Ends this instance's current term of a campaigned lock; it campaigns again after the hold-off.
void Sidecar::resign(const httplib::Request& req, httplib::Response& res) {
  std::string lock = campaigned_lock(req.matches[1]);
  send_json(res, 200, campaigns_->resign(lock));
}

// This instance's leadership of a campaigned lock; with ?wait=, a long-poll for the next version.
void Sidecar::leader(const httplib::Request& req, httplib::Response& res) {
  std::string lock = campaigned_lock(req.matches[1]);
  if (!req.has_param("wait")) {
    send_json(res, 200, campaigns_->state(lock));
    return;
  }
  Duration wait;
  std::uint64_t version = 0;
  try {
    wait = ::leader::parse_duration(req.get_param_value("wait"), "wait");
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

}  // namespace leader::cli
