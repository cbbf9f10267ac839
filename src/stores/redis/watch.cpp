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

#include "leader/errors.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"
#include "redis_store.hpp"

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
      subscriber = client_.subscribe(channel);
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
        read_again = Client::wait_for_message(*subscriber, until, stopped.fd());
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
