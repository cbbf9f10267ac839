// AsyncLane (async_lane.hpp). The thread's loop: deliver what is due (ended waits, woken
// waits), send the queued commands in one pipeline and deliver the replies, bring the
// subscriptions up to date, then sleep on the subscriber connection and an eventfd (rung by
// submit/wait/cancel/the destructor) until a message, a request or the earliest wait's end.

#include "async_lane.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "leader/errors.hpp"
#include "pool.hpp"
#include "reply_reader.hpp"
#include "send.hpp"

namespace leader::redis {
namespace {

using Clock = std::chrono::steady_clock;

// How long a channel stays subscribed after its last attempt or wait: an acquisition that waits
// again soon finds it subscribed (its attempt then reports a change count).
constexpr std::chrono::seconds kLinger{10};
// The pause before opening the subscriber connection again after it failed to open or dropped.
constexpr std::chrono::milliseconds kResubscribePause{200};
// The shortest pause of a wait that became its channel's first because the first one's pause
// ended (end_wait_locked): the longest backoff of the elector's attempts.
constexpr Duration kPromotedByTimer = std::chrono::seconds(1);
// Most commands one pipeline carries (as Client::kPipelineChunk for send_each).
constexpr std::size_t kMaxPipeline = 1000;
// Most channels one SUBSCRIBE or UNSUBSCRIBE names.
constexpr std::size_t kChannelsPerCommand = 512;

struct Pending {
  Command command;
  std::string channel;
  Deadline deadline;
  AsyncLane::Done done;
};

using Timers = std::multimap<Clock::time_point, std::uint64_t>;  // when -> wait id

struct Wait {
  std::string channel;
  std::uint64_t order = 0;
  Duration pause{};  // until - when it began: a wait that becomes its channel's first gets it anew
  Deadline until;    // the end of its pause, while it is its channel's first wait
  Deadline last;     // the end of the caller's whole wait, while others come first
  std::function<void(bool)> woken;
  Timers::iterator timer;
};

struct Channel {
  enum class State { none, subscribing, subscribed, unsubscribing };
  State state = State::none;
  std::uint64_t changes = 1;                     // never 0: 0 is "not known" in seen
  std::map<std::uint64_t, std::uint64_t> waits;  // order -> wait id
  Clock::time_point used{};                      // last attempt or wait
};

}  // namespace

struct AsyncLane::Shared {
  explicit Shared(ConnectionPool& p) : pool(&p) {}

  [[nodiscard]] bool stopped() const {
    std::lock_guard lock(mu);
    return stopping;
  }
  void check_open_locked() const {
    if (stopping) throw BackendError(ErrorCode::unavailable, "redis", "the store is closing");
  }

  // Sets the timer of wait `id` (under mu): the end of its pause when it is its channel's first
  // wait (the one that polls, for an expiry, which publishes nothing), else the end of the
  // caller's wait (changes wake the first only, so the others need no timer of their own).
  void schedule_locked(std::uint64_t id, Clock::time_point at) {
    Wait& w = waits.at(id);
    if (w.timer != timers.end()) timers.erase(w.timer);
    w.timer = timers.emplace(at, id);
  }

  // Ends wait `id` (under mu): its callback goes to `ready` with `changed`. When it was its
  // channel's first wait, the next one becomes first and polls, its pause counted from now; at
  // least kPromotedByTimer after a first wait whose pause ended (`by_timer`): that one asks the
  // store again and, unless it got the lock or gave up, is first again within a round trip.
  void end_wait_locked(std::uint64_t id, bool changed, bool by_timer = false) {
    auto it = waits.find(id);
    if (it == waits.end()) return;
    Wait& w = it->second;
    if (w.timer != timers.end()) timers.erase(w.timer);
    auto ch = channels.find(w.channel);
    if (ch != channels.end()) {
      auto& queue = ch->second.waits;
      const bool was_first = !queue.empty() && queue.begin()->first == w.order;
      queue.erase(w.order);
      ch->second.used = Clock::now();
      if (was_first && !queue.empty()) {
        const Wait& next = waits.at(queue.begin()->second);
        const Duration pause = by_timer ? std::max(next.pause, kPromotedByTimer) : next.pause;
        schedule_locked(queue.begin()->second, std::min(next.last.at(), Clock::now() + pause));
      }
    }
    ready.emplace_back(std::move(w.woken), changed);
    waits.erase(it);
  }

  // A change of `channel` (under mu): counted; wakes its earliest wait, or all of them.
  void changed_locked(const std::string& channel, bool all) {
    auto it = channels.find(channel);
    if (it == channels.end()) return;
    Channel& ch = it->second;
    ++ch.changes;
    if (all) {
      const std::map<std::uint64_t, std::uint64_t> ids = ch.waits;
      for (const auto& entry : ids) end_wait_locked(entry.second, true);
    } else if (!ch.waits.empty()) {
      end_wait_locked(ch.waits.begin()->second, true);
    }
  }

  // The subscriber connection is gone (under mu): every channel must be subscribed again.
  void unsubscribed_all_locked() {
    for (auto& [name, ch] : channels) {
      ch.state = Channel::State::none;
      ++ch.changes;
    }
  }

  ConnectionPool* pool;        // outlives the lane (the store owns both); unused once stopping
  EventFd wake{"async lane"};  // rung by submit, wait, cancel and the destructor
  mutable std::mutex mu;
  bool stopping = false;
  std::deque<Pending> pending;
  std::map<std::uint64_t, Wait> waits;
  Timers timers;
  std::map<std::string, Channel, std::less<>> channels;
  std::vector<std::pair<std::function<void(bool)>, bool>> ready;  // woken callbacks to run
  std::uint64_t next_id = 0;
  Stats stats;
  // Used by the thread only.
  std::unique_ptr<Connection> command;
  std::unique_ptr<Connection> subscriber;
  Clock::time_point subscribe_again{};  // no new subscriber connection before this
  bool refused = false;                 // SUBSCRIBE refused (ACL): waits end at their timers
};

namespace {

using Shared = AsyncLane::Shared;

// Runs `f`, a callback: its failure never stops the lane.
template <class F>
void quietly(F&& f) noexcept {
  try {
    f();
  } catch (...) {
  }
}

// Runs the woken callbacks collected in `ready`.
void run_ready(std::vector<std::pair<std::function<void(bool)>, bool>>& ready) {
  for (auto& entry : ready) quietly([&entry] { entry.first(entry.second); });
  ready.clear();
}

// Sends `batch` as one pipeline (send_calls(), as the blocking calls do) and delivers each
// reply. False when the lane is stopping (a callback may have destroyed the store).
bool send_batch(const std::shared_ptr<Shared>& s, std::vector<Pending>& batch) {
  Deadline by = Deadline::after(std::chrono::hours(1));
  std::vector<Pending> late;  // deadline passed before it could be sent
  std::vector<Pending> go;
  for (Pending& p : batch) (p.deadline.expired() ? late : go).push_back(std::move(p));
  std::vector<Reply> replies;
  std::exception_ptr failure;
  std::vector<std::uint64_t> seen(go.size(), 0);
  std::vector<TimePoint> sent;
  if (!go.empty()) {
    for (const Pending& p : go) by = by.min(p.deadline);
    std::vector<Command> commands;
    commands.reserve(go.size());
    for (Pending& p : go) commands.push_back(std::move(p.command));
    try {
      ConnectionPool& pool = *s->pool;
      by = by.min(Deadline::after(pool.config().command_timeout));
      // Sentinel: the blocking path's schedule and discovery, so no attempt goes to a primary
      // the Sentinels stopped naming more than `sentinel_check` ago (a moved primary bumps the
      // pool's generation: the command connection below is then replaced).
      pool.recheck_primary(by);
      if (s->command != nullptr &&
          (s->command->closed_while_idle() || s->command->generation() != pool.generation()))
        s->command.reset();
      if (s->command == nullptr) s->command = pool.open_connection(by);
      {
        std::lock_guard lock(s->mu);
        const auto now = Clock::now();
        for (std::size_t i = 0; i < go.size(); ++i) {
          Channel& ch = s->channels[go[i].channel];
          ch.used = now;
          if (ch.state == Channel::State::subscribed) seen[i] = ch.changes;
        }
        ++s->stats.pipelines;
        s->stats.commands += go.size();
      }
      send_calls(*s->command, commands, replies, by, false, &sent);
    } catch (const BackendError& e) {
      failure = std::current_exception();
      s->command.reset();
      if (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded)
        s->pool->forget_primary();  // Sentinel: maybe a failover; no-op otherwise
    } catch (...) {
      failure = std::current_exception();
      s->command.reset();
    }
  }
  // Replies are delivered after the lane's own state is settled: a callback may submit again.
  std::exception_ptr too_late = std::make_exception_ptr(
      BackendError(ErrorCode::deadline_exceeded, "redis",
                   "the deadline passed before the attempt was sent to redis"));
  for (Pending& p : late) quietly([&] { p.done(nullptr, too_late, TimePoint{}, 0); });
  replies.resize(go.size());
  sent.resize(go.size());
  for (std::size_t i = 0; i < go.size(); ++i) {
    const std::exception_ptr error = replies[i] ? nullptr : failure;
    quietly([&] { go[i].done(std::move(replies[i]), error, sent[i], seen[i]); });
  }
  late.clear();
  go.clear();
  return !s->stopped();
}

// One pushed reply of the subscriber connection.
void on_pushed(Shared& s, const redisReply* r) {
  std::lock_guard lock(s.mu);
  if (r->type == REDIS_REPLY_ERROR) {  // SUBSCRIBE refused (ACL NOPERM): no notifications
    s.refused = true;
    s.unsubscribed_all_locked();
    return;
  }
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) return;
  const std::string_view kind = text_of(r->element[0]);
  const std::string channel(text_of(r->element[1]));
  auto it = s.channels.find(channel);
  if (it == s.channels.end()) return;
  Channel& ch = it->second;
  if (kind == "message") {
    ++s.stats.messages;
    s.changed_locked(channel, false);
  } else if (kind == "subscribe") {
    if (ch.state == Channel::State::subscribing) {
      ch.state = Channel::State::subscribed;
      s.changed_locked(channel, true);  // a change before now may have been missed
    }
  } else if (kind == "unsubscribe") {
    if (ch.state == Channel::State::unsubscribing) ch.state = Channel::State::none;
  }
}

// Sends the SUBSCRIBE and UNSUBSCRIBE commands the channels need now, opening the subscriber
// connection when one is needed.
void sync_subscriptions(Shared& s) {
  std::vector<std::string> subscribe;
  std::vector<std::string> unsubscribe;
  if (s.subscriber != nullptr && s.subscriber->generation() != s.pool->generation()) {
    // Sentinel: opened for a primary the pool left (a failover); the scripts publish on the new
    // one. Subscribed again there, which wakes the waits (a change may have been missed).
    s.subscriber.reset();
    std::lock_guard lock(s.mu);
    s.unsubscribed_all_locked();
  }
  {
    std::lock_guard lock(s.mu);
    if (s.refused) return;
    const auto now = Clock::now();
    for (auto it = s.channels.begin(); it != s.channels.end();) {
      Channel& ch = it->second;
      const bool wanted = !ch.waits.empty() || now - ch.used < kLinger;
      if (wanted && ch.state == Channel::State::none) subscribe.push_back(it->first);
      if (!wanted && ch.state == Channel::State::subscribed) unsubscribe.push_back(it->first);
      if (!wanted && ch.state == Channel::State::none) {
        it = s.channels.erase(it);
        continue;
      }
      ++it;
    }
    if (subscribe.empty() && unsubscribe.empty()) return;
    if (s.subscriber == nullptr && (subscribe.empty() || now < s.subscribe_again)) return;
  }
  try {
    const ClientConfig& config = s.pool->config();
    if (s.subscriber == nullptr)
      // Sentinel discovery bounds each Sentinel by connect_timeout, the whole by this deadline.
      s.subscriber = s.pool->open_connection(
          Deadline::after(std::max(config.connect_timeout, config.command_timeout)));
    const Deadline by = Deadline::after(config.command_timeout);
    auto send = [&](const char* verb, const std::vector<std::string>& names) {
      for (std::size_t i = 0; i < names.size(); i += kChannelsPerCommand) {
        Command c{verb};
        const std::size_t end = std::min(names.size(), i + kChannelsPerCommand);
        c.insert(c.end(), names.begin() + static_cast<std::ptrdiff_t>(i),
                 names.begin() + static_cast<std::ptrdiff_t>(end));
        s.subscriber->send(c, by);
      }
    };
    send("SUBSCRIBE", subscribe);
    send("UNSUBSCRIBE", unsubscribe);
    std::lock_guard lock(s.mu);
    for (const std::string& name : subscribe)
      if (auto it = s.channels.find(name); it != s.channels.end())
        it->second.state = Channel::State::subscribing;
    for (const std::string& name : unsubscribe)
      if (auto it = s.channels.find(name); it != s.channels.end())
        it->second.state = Channel::State::unsubscribing;
  } catch (const BackendError&) {
    s.subscriber.reset();
    std::lock_guard lock(s.mu);
    s.subscribe_again = Clock::now() + kResubscribePause;
    s.unsubscribed_all_locked();
  }
}

// Sleeps until a pushed message, a ring of the eventfd or `until`, handling the messages.
void sleep_until(Shared& s, Clock::time_point until) {
  if (s.subscriber != nullptr) {
    try {
      Reply r = s.subscriber->next_reply(Deadline(until), s.wake.fd());
      if (r) {
        on_pushed(s, r.get());
        const Deadline now(Clock::now());
        while ((r = s.subscriber->next_reply(now, -1))) on_pushed(s, r.get());
      }
      if (s.refused) s.subscriber.reset();
    } catch (const BackendError&) {
      s.subscriber.reset();  // dropped: subscribe again after a pause (their changes count up)
      std::lock_guard lock(s.mu);
      s.subscribe_again = Clock::now() + kResubscribePause;
      s.unsubscribed_all_locked();
    }
  } else {
    s.wake.wait(Deadline(until));
  }
  s.wake.drain();
}

void run(const std::shared_ptr<Shared>& s) {
  std::vector<std::pair<std::function<void(bool)>, bool>> ready;
  std::vector<Pending> batch;
  for (;;) {
    Clock::time_point until = Clock::now() + std::chrono::hours(1);
    {
      std::lock_guard lock(s->mu);
      if (s->stopping) return;
      const auto now = Clock::now();
      while (!s->timers.empty() && s->timers.begin()->first <= now)
        s->end_wait_locked(s->timers.begin()->second, false, true);
      if (!s->timers.empty()) until = std::min(until, s->timers.begin()->first);
      ready.swap(s->ready);
      const auto take = s->pending.begin() +
                        static_cast<std::ptrdiff_t>(std::min(s->pending.size(), kMaxPipeline));
      batch.assign(std::make_move_iterator(s->pending.begin()), std::make_move_iterator(take));
      s->pending.erase(s->pending.begin(), take);  // the rest go in the next round trip
      if (s->subscriber == nullptr && !s->refused && !s->waits.empty())
        until = std::min(until, std::max(s->subscribe_again, now));  // subscribe (again) then
      if (!s->channels.empty()) until = std::min(until, now + kLinger);
    }
    run_ready(ready);
    if (s->stopped() || (!batch.empty() && !send_batch(s, batch))) return;
    batch.clear();
    sync_subscriptions(*s);
    bool more = false;  // queued meanwhile: only read what was pushed, then go on at once
    {
      std::lock_guard lock(s->mu);
      if (s->stopping) return;
      more = !s->pending.empty() || !s->ready.empty();
    }
    sleep_until(*s, more ? Clock::now() : until);
  }
}

}  // namespace

AsyncLane::AsyncLane(ConnectionPool& pool) : shared_(std::make_shared<Shared>(pool)) {
  thread_ = std::thread([s = shared_] { run(s); });
}

AsyncLane::~AsyncLane() {
  std::deque<Pending> pending;
  std::vector<std::pair<std::function<void(bool)>, bool>> ready;
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopping = true;
    pending.swap(shared_->pending);
    std::vector<std::uint64_t> ids;
    for (const auto& [id, w] : shared_->waits) ids.push_back(id);
    for (std::uint64_t id : ids) shared_->end_wait_locked(id, false);
    ready.swap(shared_->ready);
  }
  shared_->wake.ring();
  // Inside one of the lane's callbacks, the thread ends when that returns.
  thread_.get_id() == std::this_thread::get_id() ? thread_.detach() : thread_.join();
  const auto closed = std::make_exception_ptr(BackendError(
      ErrorCode::unavailable, "redis", "the store was closed before the call was sent"));
  for (Pending& p : pending) quietly([&] { p.done(nullptr, closed, TimePoint{}, 0); });
  run_ready(ready);
}

void AsyncLane::submit(Command command, std::string channel, Deadline deadline, Done done) {
  {
    std::lock_guard lock(shared_->mu);
    shared_->check_open_locked();
    shared_->pending.push_back(
        Pending{std::move(command), std::move(channel), deadline, std::move(done)});
  }
  shared_->wake.ring();
}

std::uint64_t AsyncLane::wait(const std::string& channel, std::uint64_t seen, Deadline until,
                              Deadline last, std::uint64_t order, std::function<void(bool)> woken) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(shared_->mu);
    shared_->check_open_locked();
    id = ++shared_->next_id;
    Channel& ch = shared_->channels[channel];
    ch.used = Clock::now();
    if (ch.state == Channel::State::subscribed && seen != ch.changes) {
      shared_->ready.emplace_back(std::move(woken), true);  // a change came after the attempt
    } else {
      while (ch.waits.contains(order)) ++order;  // one order per wait of a channel
      const std::uint64_t first_before = ch.waits.empty() ? 0 : ch.waits.begin()->second;
      ch.waits.emplace(order, id);
      const auto now = Clock::now();
      const Duration pause =
          std::chrono::duration_cast<Duration>(std::max(until.at() - now, Clock::duration::zero()));
      if (last.at() < until.at()) last = until;
      shared_->waits.emplace(
          id, Wait{channel, order, pause, until, last, std::move(woken), shared_->timers.end()});
      if (ch.waits.begin()->second == id) {  // first: it polls; the one before waits its turn
        shared_->schedule_locked(id, until.at());
        if (first_before != 0)
          shared_->schedule_locked(first_before, shared_->waits.at(first_before).last.at());
      } else {
        shared_->schedule_locked(id, last.at());
      }
    }
  }
  shared_->wake.ring();
  return id;
}

void AsyncLane::cancel(std::uint64_t id) noexcept {
  {
    std::lock_guard lock(shared_->mu);
    if (!shared_->waits.contains(id)) return;
    shared_->end_wait_locked(id, false);
  }
  shared_->wake.ring();
}

AsyncLane::Stats AsyncLane::stats() const {
  std::lock_guard lock(shared_->mu);
  Stats out = shared_->stats;
  out.waits = shared_->waits.size();
  for (const auto& [name, ch] : shared_->channels)
    if (ch.state == Channel::State::subscribing || ch.state == Channel::State::subscribed)
      ++out.channels;
  return out;
}

}  // namespace leader::redis
