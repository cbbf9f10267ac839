// virtual-thread-runner: many small jobs, each under its own lock, run by a few threads. Java
// services run each such job on a virtual thread; here the executor model does the same:
// `leader::run_if_leader_on(executor, elector, lock, action)` waits for the lease on leader's
// blocking pool and runs the action on the executor (a fixed pool of --threads workers), so
// waiting for locks never occupies a worker. Every replica submits every job at once; each job
// runs on exactly one replica (min_lease_time keeps a finished job's lock for the whole batch, so
// a slower replica does not run it again).
//
//   example_virtual_thread_runner <sqlite-uri> <replica> [--prefix NAME] [--jobs N]
//                                 [--threads N] [--job-ms N]
//
// Output (one line per event; the test driver greps them):
//   RAN job=<k> replica=<r> token=<t>                 this replica ran job k
//   SUMMARY replica=<r> ran=<n> skipped=<n> peak=<p>  p = most actions running at once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <leader/async.hpp>
#include <leader/leader.hpp>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../common.hpp"

namespace {

// A fixed pool of worker threads.
class Workers {
 public:
  explicit Workers(long n) {
    for (long i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Workers() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> f) const {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto f = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      f();
    }
  }
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::deque<std::function<void()>> queue_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

// The executor handed to leader: copyable, with the `execute(f)` member its dispatch looks for.
struct WorkerExecutor {
  std::shared_ptr<const Workers> workers;
  void execute(std::function<void()> f) const { workers->submit(std::move(f)); }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<sqlite-uri> <replica> [--prefix NAME] [--jobs N] [--threads N] [--job-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string prefix = args.get("--prefix", "invoice");
    const long jobs = args.number("--jobs", 60);
    const auto job_time = std::chrono::milliseconds(args.number("--job-ms", 20));
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 0s, .lease_time = 20s, .min_lease_time = 10s, .node_id = replica});
    const WorkerExecutor workers{std::make_shared<const Workers>(args.number("--threads", 4))};
    std::atomic<int> running{0}, peak{0};
    std::vector<std::future<bool>> runs;
    for (long k = 1; k <= jobs; ++k) {
      const std::string lock = prefix + "-" + std::to_string(k);
      runs.push_back(
          leader::run_if_leader_on(workers, elector, lock, [&, k](leader::LeaderContext& ctx) {
            const int now = ++running;
            int seen = peak.load();
            while (now > seen && !peak.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::sleep_for(job_time);  // render and send one invoice
            --running;
            std::printf("RAN job=%ld replica=%s token=%llu\n", k, replica.c_str(),
                        static_cast<unsigned long long>(ctx.fencing_token()));
          }));
    }
    long ran = 0;
    for (auto& r : runs) ran += r.get() ? 1 : 0;  // rethrows a backend error
    std::printf("SUMMARY replica=%s ran=%ld skipped=%ld peak=%d\n", replica.c_str(), ran,
                jobs - ran, peak.load());
    return 0;
  });
}
