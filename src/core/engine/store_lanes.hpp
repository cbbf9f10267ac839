#pragma once
// Internal: the worker threads that send renewals, one lane per store. Each lane has its own
// queue and at most kWorkersPerLane threads, started on demand and ended when idle, so a store
// whose calls hang until their timeout (a black-holed server) delays only its own leases.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace leader::detail {

class StoreLanes {
 public:
  using Job = std::function<void()>;
  /// Store calls of one store that may run at once.
  static constexpr int kWorkersPerLane = 2;
  /// How long an idle worker waits for a job before it ends (real time).
  static constexpr std::chrono::seconds kIdleExit{5};

  StoreLanes() = default;
  StoreLanes(const StoreLanes&) = delete;
  StoreLanes& operator=(const StoreLanes&) = delete;
  /// Stops every worker after its current job; queued jobs are dropped.
  ~StoreLanes();

  /// A lease of `key`'s store is being watched (its lane stays while one is).
  void open(const void* key);
  /// That lease is no longer watched; idle workers of an unused lane end at once.
  void close(const void* key);
  /// Runs `job` on a worker of `key`'s lane.
  void post(const void* key, Job job);

 private:
  struct Lane {
    std::deque<Job> jobs;
    std::condition_variable cv;
    int workers = 0;
    int idle = 0;
    int open = 0;
  };
  void work(const void* key, Lane* lane);
  void retire_locked(const void* key, Lane* lane);
  std::vector<std::thread> take_exited_locked();

  std::mutex mu_;
  std::map<const void*, Lane> lanes_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread> exited_;  // ended workers, joined by the next post() or on destruction
  bool stopping_ = false;
};

}  // namespace leader::detail
