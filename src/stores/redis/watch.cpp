// RedisStore::watch: a lock's holder changes by pub/sub. The store's scripts PUBLISH on the
// lock's channel in the same script that changes a holder (acquire, release, a renew or release
// that shortens a lease); a watch SUBSCRIBEs on a connection of its own and only then reads the
// lock, so every change after that read sends it a message, and reads again after each message,
// after each re-subscription (a message sent while it reconnected is lost: fire-and-forget) and
// at the earliest holder's expiry (an expiry publishes nothing). README.md, section Watching.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "leader/campaign.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "redis_store.hpp"
#include "replies.hpp"

namespace leader::redis {
namespace {

// How often a watch re-reads when the server refuses its SUBSCRIBE (a Redis 7 ACL user without
// the channel): it polls then, as observe_lock polls a store that cannot watch.
constexpr Duration kPollWhenRefused = std::chrono::seconds(1);
// A read this long after a holder's PTTL ran out finds its key gone (PTTL is in whole ms).
constexpr Duration kAfterExpiry = std::chrono::milliseconds(2);
// The pause before subscribing again once a subscriber connection dropped twice in one watch,
// so that a server closing every connection does not make the watch spin.
constexpr Duration kResubscribePause = std::chrono::milliseconds(200);

// A new connection subscribed to `channel`, or null when the server refuses the channel (ACL
// NOPERM). Throws BackendError as the pool's connections do.
std::unique_ptr<Connection> subscribe(ConnectionPool& pool, const std::string& channel) {
  const ClientConfig& config = pool.config();
  // Sentinel discovery bounds each Sentinel by connect_timeout, the whole by this deadline.
  auto c = pool.open_connection(
      Deadline::after(std::max(config.connect_timeout, config.command_timeout)));
  const Deadline by = Deadline::after(config.command_timeout);
  c->send({"SUBSCRIBE", channel}, by);
  Reply reply = c->next_reply(by, -1);
  if (!reply)
    throw BackendError(ErrorCode::deadline_exceeded, "redis",
                       "no answer from redis at " + config.endpoint() + " to SUBSCRIBE " + channel);
  if (const std::string text = error_text(reply.get()); !text.empty()) {
    if (text.rfind("NOPERM", 0) == 0) return nullptr;
    throw_reply_error(text, config, "SUBSCRIBE");
  }
  return c;
}

bool is_message(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         text_of(r->element[0]) == "message";
}

// Waits for a message on `subscriber` until `until` or a stop request; true when one came.
// Messages queued behind the first are consumed with it: one read answers them all.
bool wait_for_message(Connection& subscriber, Deadline until, int stop_fd) {
  for (;;) {
    Reply r = subscriber.next_reply(until, stop_fd);
    if (!r) return false;
    if (!is_message(r.get())) continue;
    const Deadline now(std::chrono::steady_clock::now());
    while (subscriber.next_reply(now, stop_fd)) {
    }
    return true;
  }
}

// When to read again without a message: just after the earliest holder's expiry, which changes
// no record and publishes nothing, or at `deadline`.
Deadline reread_at(const LockState& state, Deadline deadline) {
  for (const Holder& h : state.holders)
    if (h.expires_in < Duration::max())
      deadline = deadline.min(Deadline::after(h.expires_in + kAfterExpiry));
  return deadline;
}

}  // namespace

LockState RedisStore::watch(std::string_view lock, const LockState& last_seen, Deadline deadline,
                            const std::stop_token& stop) {
  validate_lock_name(lock);
  const Duration read_bound = client_.config().command_timeout;
  if (deadline.expired() || stop.stop_requested())
    return inspect(lock, Deadline::after(read_bound));
  const std::string channel = changes_channel(lock);
  // Readable once `stop` is requested, polled beside the subscriber's socket; the callback is
  // deregistered (declaration order) before the descriptor closes.
  const EventFd stopped("watch");
  const std::stop_callback on_stop(stop, [&stopped]() noexcept { stopped.ring(); });
  std::unique_ptr<Connection> subscriber;
  bool refused = false;  // SUBSCRIBE refused by an ACL: poll every kPollWhenRefused
  int drops = 0;
  for (;;) {
    if (subscriber == nullptr && !refused) {
      subscriber = subscribe(client_.pool_for(channel, Deadline::after(read_bound)), channel);
      refused = subscriber == nullptr;
    }
    // After (re)subscribing: a change before it is in this read, every later one sends a message.
    LockState now = inspect(lock, Deadline::after(read_bound));
    if (!same_holders(now, last_seen) || deadline.expired() || stop.stop_requested()) return now;
    const Deadline until =
        refused ? deadline.min(Deadline::after(kPollWhenRefused)) : reread_at(now, deadline);
    bool read_again = false;  // a message came, or the subscription broke: read now
    if (subscriber == nullptr) {
      stopped.wait(until);
    } else {
      try {
        read_again = wait_for_message(*subscriber, until, stopped.fd());
      } catch (const BackendError& e) {
        if (e.code() != ErrorCode::unavailable) throw;
        subscriber.reset();  // dropped (CLIENT KILL, restart, timeout): subscribe, read again
        read_again = true;
        if (++drops > 1) stopped.wait(deadline.min(Deadline::after(kResubscribePause)));
      }
    }
    // Otherwise this was the deadline, a stop, a holder's expiry or a poll (the last two: read).
    if (!read_again && (deadline.expired() || stop.stop_requested())) return now;
  }
}

}  // namespace leader::redis
