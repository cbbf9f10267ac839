#include "leader/campaign.hpp"

#include <condition_variable>
#include <stdexcept>

#include "leader/async.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"

namespace leader {
namespace {

bool retryable(ErrorCode code) {
  return code == ErrorCode::unavailable || code == ErrorCode::deadline_exceeded ||
         code == ErrorCode::internal;
}

// Sleeps up to `d` (real time), returning early when `stop` is requested; true when it was.
bool sleep_for(Duration d, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  return cv.wait_for(lock, stop, d, [] { return false; }) || stop.stop_requested();
}

void check_period(std::string_view type, std::string_view field, Duration d) {
  if (d <= Duration{0})
    throw InvalidArgument(std::string(type) + "." + std::string(field) + " = " +
                          format_duration(d) + " breaks the rule: " + std::string(field) + " > 0");
  check_duration_bound(type, field, d);
}

// Polls `inspect` every `interval`, calling `on_change` with the first snapshot and each one
// whose holders differ from the last; `on_error` gets a failed poll (rethrow to end the loop).
void poll_changes(const std::function<LockState()>& inspect,
                  const std::function<bool(const LockState&)>& on_change,
                  const std::function<void(const BackendError&)>& on_error,
                  const std::stop_token& stop, Duration interval) {
  std::optional<LockState> last;
  while (!stop.stop_requested()) {
    try {
      LockState now = inspect();
      if (!last || !same_holders(*last, now)) {
        if (!on_change(now)) return;
        last = std::move(now);
      }
    } catch (const BackendError& e) {
      on_error(e);
    }
    if (sleep_for(interval, stop)) return;
  }
}

std::string describe(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

void CampaignOptions::validate() const {
  check_period("CampaignOptions", "retry_period", retry_period);
  check_period("CampaignOptions", "observe_interval", observe_interval);
  if (resign_hold_off < Duration{0})
    throw InvalidArgument("CampaignOptions.resign_hold_off = " + format_duration(resign_hold_off) +
                          " breaks the rule: resign_hold_off >= 0");
  check_duration_bound("CampaignOptions", "resign_hold_off", resign_hold_off);
}

void observe_lock(LeaseStore& store, std::string_view lock,
                  const std::function<bool(const LockState&)>& on_change,
                  const std::stop_token& stop, ObserveOptions options) {
  validate_lock_name(lock);
  check_period("ObserveOptions", "interval", options.interval);
  check_period("ObserveOptions", "call_timeout", options.call_timeout);
  check_period("ObserveOptions", "recheck", options.recheck);
  const std::string name(lock);
  LockWatcher* watcher = lock_watcher(store);
  if (watcher == nullptr) {
    poll_changes([&] { return store.inspect(name, Deadline::after(options.call_timeout)); },
                 on_change, [](const BackendError& e) { throw e; }, stop, options.interval);
    return;
  }
  LockState last = store.inspect(name, Deadline::after(options.call_timeout));
  if (!on_change(last)) return;
  while (!stop.stop_requested()) {
    // The safety net: re-read at the earliest holder's expiry (plus a little, as etcd and others
    // round it) and at least every `recheck`; never more often than every `interval`.
    Duration wait = options.recheck;
    for (const Holder& h : last.holders)
      if (h.expires_in > Duration{0})
        wait = std::min(wait, h.expires_in + std::chrono::milliseconds(100));
    wait = std::max(wait, options.interval);
    const Deadline until = Deadline::after(wait);
    LockState now = watcher->watch(name, last, until, stop);
    if (stop.stop_requested()) return;
    if (same_holders(last, now)) {
      // A watch that gave up early without a change: wait out its term rather than spin.
      if (!until.expired() && sleep_for(until.remaining(), stop)) return;
      // The safety net's own read: a watch that missed a change (or an expiry that changed no
      // record) is caught here, whatever the watcher returned.
      now = store.inspect(name, Deadline::after(options.call_timeout));
    }
    if (!same_holders(last, now) && !on_change(now)) return;
    last = std::move(now);  // also when unchanged: its expires_in is newer
  }
}

Campaign::Campaign(Setup setup, CampaignCallbacks callbacks, CampaignOptions options)
    : acquire_(std::move(setup.acquire)),
      inspect_(std::move(setup.inspect)),
      election_(std::move(setup.election)),
      bus_(std::move(setup.bus)),
      lock_(std::move(setup.lock)),
      store_(std::move(setup.store)),
      stored_lock_(std::move(setup.stored_lock)),
      callbacks_(std::move(callbacks)),
      options_(options) {
  validate_lock_name(lock_);
  options_.validate();
  if (!election_.auto_extend)
    throw InvalidArgument("Campaign on '" + lock_ +
                          "': the elector's auto_extend = false breaks the rule: a campaign "
                          "holds its lease for the whole term, so auto_extend must be true");
  if (election_.on_backend_error == OnBackendError::fail_open)
    throw InvalidArgument("Campaign on '" + lock_ +
                          "': the elector's on_backend_error = fail_open breaks the rule: every "
                          "replica would lead during an outage; use rethrow or skip");
  if (options_.resign_hold_off == Duration{0}) options_.resign_hold_off = election_.lease_time;
}

Campaign::~Campaign() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void Campaign::run(const std::stop_token& stop) {
  if (running_.exchange(true))
    throw std::logic_error("Campaign on '" + lock_ + "' is already running");
  struct Running {
    std::atomic<bool>& flag;
    ~Running() { flag = false; }
  } running{running_};
  std::jthread observer;
  if (callbacks_.on_new_leader)
    observer = std::jthread([this](const std::stop_token& own) { observe_loop(own); });
  bool after_resign = false;
  while (!stop.stop_requested()) {
    if (after_resign) {
      after_resign = false;
      pause(options_.resign_hold_off, stop, true);
      continue;
    }
    std::stop_source term_stop;
    std::stop_callback link(stop, [&term_stop] { term_stop.request_stop(); });
    std::optional<Acquisition> acq;
    try {
      acq.emplace(acquire_(term_stop.get_token()));
    } catch (const BackendError& e) {
      if (!retryable(e.code())) throw;
      if (callbacks_.on_error) {
        try {
          callbacks_.on_error(e);
        } catch (...) {  // a failing error callback never ends the campaign
        }
      }
      pause(options_.retry_period, stop, false);
      continue;
    }
    if (!*acq) {  // contention, a skipped backend error (events carry it), or stopped
      pause(options_.retry_period, stop, false);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      term_stop_ = &term_stop;
      resigned_ = false;
    }
    try {
      lead(*acq->guard, stop);
    } catch (...) {
      std::lock_guard lock(mu_);
      term_stop_ = nullptr;
      throw;
    }
    std::lock_guard lock(mu_);
    term_stop_ = nullptr;
    after_resign = resigned_;
  }
}

void Campaign::lead(LeaseGuard& guard, const std::stop_token& campaign_stop) {
  LeaderContext& ctx = guard.context();
  {
    std::lock_guard lock(mu_);
    term_ = guard.info();
  }
  terms_.fetch_add(1);
  leading_ = true;  // before the callback below: it may run at once
  std::stop_callback ended(ctx.stop_token(), [this] { leading_ = false; });
  std::exception_ptr failure;
  try {
    detail::ThreadHold on_this_thread(guard.store(), ctx);
    if (callbacks_.on_started_leading) callbacks_.on_started_leading(ctx);
  } catch (...) {
    failure = std::current_exception();
  }
  if (!failure && !options_.resign_on_return) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, ctx.stop_token(), [] { return false; });
  }
  leading_ = false;
  {
    std::lock_guard lock(mu_);
    term_.reset();
    if (options_.resign_on_return && !failure) resigned_ = true;
  }
  if (campaign_stop.stop_requested() && !options_.release_on_cancel && !failure) {
    guard.abandon();
  } else {
    guard.release(failure != nullptr, describe(failure));
  }
  if (callbacks_.on_stopped_leading) {
    try {
      callbacks_.on_stopped_leading();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

void Campaign::pause(Duration d, const std::stop_token& stop, bool until_other_holder) {
  if (!until_other_holder) {
    sleep_for(d, stop);
    return;
  }
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) {
    try {
      if (inspect_().held()) return;  // our lease was released: any holder is another replica
    } catch (const BackendError&) {   // the hold-off then simply runs out
    }
    auto left = std::chrono::duration_cast<Duration>(until - std::chrono::steady_clock::now());
    if (sleep_for(std::min(options_.retry_period, std::max(left, Duration{1})), stop)) return;
  }
}

void Campaign::observe_loop(const std::stop_token& stop) {
  // observe_lock reports its first snapshot again after a restart: only real changes go on.
  std::optional<LockState> last;
  const auto on_change = [&](const LockState& now) {
    if (last && same_holders(*last, now)) return true;
    last = now;
    try {
      callbacks_.on_new_leader(now);
    } catch (...) {  // a failing observer callback never ends the campaign
    }
    return true;
  };
  const ObserveOptions observe{.interval = options_.observe_interval,
                               .call_timeout = election_.effective_call_timeout()};
  while (!stop.stop_requested()) {
    try {
      observe_lock(*store_, stored_lock_, on_change, stop, observe);
      return;                          // stopped
    } catch (const BackendError& e) {  // a failed read or watch: report, pause, follow again
      if (callbacks_.on_error) {
        try {
          callbacks_.on_error(e);
        } catch (...) {
        }
      }
    }
    if (sleep_for(options_.observe_interval, stop)) return;
  }
}

void Campaign::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || running_.load())
    throw std::logic_error("Campaign on '" + lock_ + "' is already running");
  error_ = nullptr;
  thread_ = std::jthread([this](const std::stop_token& stop) {
    try {
      run(stop);
    } catch (...) {
      std::lock_guard inner(mu_);
      error_ = std::current_exception();
    }
  });
}

void Campaign::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  std::exception_ptr error;
  {
    std::lock_guard lock(mu_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

std::future<void> Campaign::run_async(std::stop_token stop, BlockingPool* pool) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> result = done->get_future();
  (pool ? *pool : BlockingPool::shared()).post([this, stop = std::move(stop), done] {
    try {
      run(stop);
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  return result;
}

bool Campaign::resign() {
  std::lock_guard lock(mu_);
  if (term_stop_ == nullptr || !leading_.load()) return false;
  resigned_ = true;
  term_stop_->request_stop();
  return true;
}

std::optional<LeaseInfo> Campaign::term() const {
  std::lock_guard lock(mu_);
  return term_;
}

}  // namespace leader
