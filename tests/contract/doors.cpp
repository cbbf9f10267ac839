#include "doors.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "leader/async.hpp"
#include "leader/campaign.hpp"
#ifdef LEADER_CONTRACT_HAS_ASIO
#include <asio.hpp>

#include "leader/asio/async_elector.hpp"
#endif

namespace leader::contract {
namespace {

using Action = std::function<void(LeaderContext&)>;

/// A caller's executor with one thread (`execute(f)`), as an application's own would be.
class OneThreadExecutor {
 public:
  OneThreadExecutor() : state_(std::make_shared<State>()) {
    state_->thread = std::thread([s = state_] { s->work(); });
  }
  /// Queues `f`.
  void execute(std::function<void()> f) const {
    std::lock_guard lock(state_->mu);
    state_->queue.push_back(std::move(f));
    state_->cv.notify_one();
  }
  /// Runs what is queued, then ends the thread (the owner calls it once, at the end).
  void join() const {
    {
      std::lock_guard lock(state_->mu);
      state_->stopping = true;
      state_->cv.notify_one();
    }
    state_->thread.join();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool stopping = false;
    std::thread thread;
    void work() {
      std::unique_lock lock(mu);
      for (;;) {
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        auto f = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        f();
        lock.lock();
      }
    }
  };
  std::shared_ptr<State> state_;
};

RunResult<void> blocking(const LeaderElector& e, const std::string& lock, Action action,
                         const std::shared_future<void>&) {
  return e.run_if_leader_result(lock, std::move(action));
}

RunResult<void> futures(const LeaderElector& e, const std::string& lock, Action action,
                        const std::shared_future<void>&) {
  return run_if_leader_result_async(e, lock, std::move(action)).get();
}

RunResult<void> executor(const LeaderElector& e, const std::string& lock, Action action,
                         const std::shared_future<void>& busy_until) {
  OneThreadExecutor ex;
  if (busy_until.valid()) ex.execute([busy_until] { busy_until.wait(); });
  auto result = run_if_leader_result_on(ex, e, lock, std::move(action)).get();
  ex.join();
  return result;
}

#ifdef LEADER_CONTRACT_HAS_ASIO
RunResult<void> asio_door(const LeaderElector& e, const std::string& lock, Action action,
                          const std::shared_future<void>& busy_until) {
  ::asio::thread_pool pool(1);
  if (busy_until.valid()) ::asio::post(pool, [busy_until] { busy_until.wait(); });
  auto result = leader::asio::async_run_if_leader_result(pool.get_executor(), e, lock,
                                                         std::move(action), ::asio::use_future)
                    .get();
  pool.join();
  return result;
}
#endif

/// One term of a Campaign: the action is on_started_leading (the term ends when it returns), the
/// campaign is stopped once that term is over.
RunResult<void> campaign(const LeaderElector& e, const std::string& lock, Action action,
                         const std::shared_future<void>&) {
  std::mutex mu;
  std::condition_variable cv;
  bool ended = false;
  std::optional<LeaseInfo> lease;
  std::exception_ptr failure;
  CampaignCallbacks callbacks;
  callbacks.on_started_leading = [&](LeaderContext& ctx) {
    {
      std::lock_guard l(mu);
      lease = ctx.lease();
    }
    try {
      action(ctx);
    } catch (...) {
      std::lock_guard l(mu);
      failure = std::current_exception();
    }
  };
  callbacks.on_stopped_leading = [&] {
    std::lock_guard l(mu);
    ended = true;
    cv.notify_all();
  };
  CampaignOptions options;
  options.resign_on_return = true;
  options.retry_period = std::chrono::milliseconds(100);
  Campaign c(e, lock, std::move(callbacks), options);
  c.start();
  {
    std::unique_lock l(mu);
    // A contended lock is a skip: the judged cases start from a free lock, so one lease unit of
    // campaigning without a term means it was held elsewhere.
    if (!cv.wait_for(l, e.options().lease_time * 4, [&] { return ended || lease.has_value(); })) {
      l.unlock();
      c.stop();
      return Skipped{SkipReason::contention, "the campaign got no term"};
    }
    cv.wait(l, [&] { return ended; });
  }
  c.stop();
  if (failure) return ActionFailed{failure, *lease};
  return Elected<void>{*lease};
}

std::deque<Door>& doors() {
  static std::deque<Door> all{
      {"blocking", blocking, false}, {"futures", futures, false}, {"executor", executor, true},
#ifdef LEADER_CONTRACT_HAS_ASIO
      {"asio", asio_door, true},
#endif
      {"campaign", campaign, false},
  };
  return all;
}

}  // namespace

const Door* find_door(const std::string& name) {
  for (const Door& d : doors())
    if (name == d.name) return &d;
  return nullptr;
}

bool register_door(Door door) {
  doors().push_back(std::move(door));
  return true;
}

}  // namespace leader::contract
