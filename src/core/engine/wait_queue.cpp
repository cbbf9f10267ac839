#include "wait_queue.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>

namespace leader::detail {

struct WaitTicket::Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::uint64_t> order;  // ticket ids, arrival order
  std::uint64_t next_id = 0;
  std::uint64_t releases = 0;  // releases of the lock by this process while queued
  int held = 0;                // leases granted to waiters of this queue, not yet released
};

namespace {

struct Key {
  const void* store;
  std::string lock;
};
struct KeyView {
  const void* store;
  std::string_view lock;
};
struct KeyLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    if (a.store != b.store) return std::less<const void*>{}(a.store, b.store);
    return std::string_view(a.lock) < std::string_view(b.lock);
  }
};

struct Registry {
  std::mutex mu;
  std::map<Key, std::shared_ptr<WaitTicket::Queue>, KeyLess> queues;
  std::atomic<std::size_t> count{0};  // queues.size(), read without the mutex
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: electors may outlive static destructors
  return *r;
}

// Drops `q` from the registry (its last waiter left and no lease of it is held).
void erase_locked(Registry& r, const std::shared_ptr<WaitTicket::Queue>& q) {
  for (auto it = r.queues.begin(); it != r.queues.end(); ++it) {
    if (it->second == q) {
      r.queues.erase(it);
      break;
    }
  }
  r.count.store(r.queues.size());
}

}  // namespace

WaitTicket::WaitTicket(const void* store, std::string_view lock) {
  Registry& r = registry();
  std::lock_guard lock_r(r.mu);
  auto it = r.queues.find(KeyView{store, lock});
  if (it == r.queues.end()) {
    it = r.queues.emplace(Key{store, std::string(lock)}, std::make_shared<Queue>()).first;
    r.count.store(r.queues.size());
  }
  queue_ = it->second;
  std::lock_guard lock_q(queue_->mu);
  id_ = queue_->next_id++;
  queue_->order.push_back(id_);
  seen_ = queue_->releases;
}

WaitTicket::~WaitTicket() {
  Registry& r = registry();
  std::lock_guard lock_r(r.mu);
  bool empty;
  {
    std::lock_guard lock_q(queue_->mu);
    auto& order = queue_->order;
    const bool was_head = !order.empty() && order.front() == id_;
    order.erase(std::find(order.begin(), order.end(), id_));
    empty = order.empty() && queue_->held == 0;
    if (was_head && !order.empty()) queue_->cv.notify_all();  // the next one is the head now
  }
  if (!empty) return;
  erase_locked(r, queue_);
}

bool WaitTicket::queued(const void* store, std::string_view lock) {
  Registry& r = registry();
  if (r.count.load() == 0) return false;
  std::lock_guard lock_r(r.mu);
  return r.queues.find(KeyView{store, lock}) != r.queues.end();  // erased once unused
}

bool WaitTicket::head() const {
  std::lock_guard lock(queue_->mu);
  return queue_->order.front() == id_;
}

bool WaitTicket::wait_while_held_here(const Clock& clock, TimePoint until,
                                      const std::stop_token& stop, int slots) {
  Queue& q = *queue_;
  std::stop_callback wake(stop, [&q] {
    std::lock_guard lock(q.mu);
    q.cv.notify_all();
  });
  std::unique_lock lock(q.mu);
  const int full = std::max(slots, 1);
  bool slept = false;
  while (q.held >= full && !stop.stop_requested() && clock.now() < until) {
    clock.wait_until(lock, q.cv, until);
    slept = true;
  }
  return slept;
}

LocalHold WaitTicket::mark_held() {
  {
    std::lock_guard lock(queue_->mu);
    ++queue_->held;
  }
  return LocalHold(queue_);
}

void LocalHold::drop() noexcept {
  const std::shared_ptr<WaitTicket::Queue> q = std::move(queue_);
  Registry& r = registry();
  std::lock_guard lock_r(r.mu);
  bool unused = false;
  {
    std::lock_guard lock(q->mu);
    --q->held;
    ++q->releases;
    q->cv.notify_all();
    unused = q->order.empty() && q->held == 0;
  }
  if (unused) erase_locked(r, q);
}

void WaitTicket::before_attempt() {
  std::lock_guard lock(queue_->mu);
  seen_ = queue_->releases;
}

bool WaitTicket::wait(const Clock& clock, TimePoint until, const std::stop_token& stop) {
  Queue& q = *queue_;
  // Registered before the queue's mutex is taken: a stop already requested runs it at once.
  std::stop_callback wake(stop, [&q] {
    std::lock_guard lock(q.mu);
    q.cv.notify_all();
  });
  std::unique_lock lock(q.mu);
  const bool was_head = q.order.front() == id_;
  while (!stop.stop_requested() && clock.now() < until) {
    const bool is_head = q.order.front() == id_;
    if (is_head && (!was_head || q.releases != seen_)) return true;
    clock.wait_until(lock, q.cv, until);
  }
  return false;
}

void notify_released(const void* store, std::string_view lock) noexcept {
  Registry& r = registry();
  if (r.count.load() == 0) return;
  std::shared_ptr<WaitTicket::Queue> q;
  {
    std::lock_guard lock_r(r.mu);
    auto it = r.queues.find(KeyView{store, lock});
    if (it == r.queues.end()) return;
    q = it->second;
  }
  std::lock_guard lock_q(q->mu);
  ++q->releases;
  q->cv.notify_all();
}

}  // namespace leader::detail
