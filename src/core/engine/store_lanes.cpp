#include "store_lanes.hpp"

#include <utility>

namespace leader::detail {

StoreLanes::~StoreLanes() {
  std::map<std::thread::id, std::thread> running;
  std::vector<std::thread> exited;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [key, lane] : lanes_) lane.cv.notify_all();
    running = std::move(threads_);
    threads_.clear();
    exited = take_exited_locked();
  }
  for (auto& [id, t] : running) t.join();
  for (auto& t : exited) t.join();
}

void StoreLanes::open(const void* key) {
  std::vector<std::thread> exited;
  {
    std::lock_guard lock(mu_);
    ++lanes_[key].open;
    exited = take_exited_locked();
  }
  for (auto& t : exited) t.join();
}

void StoreLanes::close(const void* key) {
  std::lock_guard lock(mu_);
  auto it = lanes_.find(key);
  if (it == lanes_.end()) return;
  Lane& lane = it->second;
  if (--lane.open == 0) lane.cv.notify_all();  // idle workers of an unused lane end now
  retire_locked(key, &lane);
}

void StoreLanes::post(const void* key, Job job) {
  std::vector<std::thread> exited;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    Lane& lane = lanes_[key];
    lane.jobs.push_back(std::move(job));
    if (lane.idle > 0) {
      lane.cv.notify_one();
    } else if (lane.workers < kWorkersPerLane) {
      ++lane.workers;
      std::thread t([this, key, l = &lane] { work(key, l); });
      auto id = t.get_id();
      threads_.emplace(id, std::move(t));
    }
    exited = take_exited_locked();
  }
  for (auto& t : exited) t.join();
}

void StoreLanes::work(const void* key, Lane* lane) {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!lane->jobs.empty()) {
      Job job = std::move(lane->jobs.front());
      lane->jobs.pop_front();
      lock.unlock();
      job();
      job = nullptr;  // drop captured state outside the lock
      lock.lock();
      continue;
    }
    if (lane->open <= 0) break;
    ++lane->idle;
    bool woken = lane->cv.wait_for(lock, kIdleExit) == std::cv_status::no_timeout;
    --lane->idle;
    if (!woken && lane->jobs.empty()) break;
  }
  --lane->workers;
  if (stopping_) return;  // the destructor joins every thread
  auto self = threads_.find(std::this_thread::get_id());
  exited_.push_back(std::move(self->second));
  threads_.erase(self);
  retire_locked(key, lane);
}

void StoreLanes::retire_locked(const void* key, Lane* lane) {
  if (lane->open <= 0 && lane->workers == 0 && lane->jobs.empty()) lanes_.erase(key);
}

std::vector<std::thread> StoreLanes::take_exited_locked() {
  std::vector<std::thread> out;
  out.swap(exited_);
  return out;
}

}  // namespace leader::detail
