// One replica of the scheduler integration test: a Scheduler with one 1 s task on the store given,
// appending "start" and "end" lines with the firing's instant and fencing token to a shared
// ledger file. Prints "ready" once started; SIGTERM stops it (Scheduler::stop) and exits 0.
//
// Usage: scheduler_replica URI TASK TRIGGER SKEW_MS LEASE_MS TASK_MS LEDGER NODE
//   TRIGGER: rate:<ms> or cron:<expression>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "leader/open.hpp"
#include "leader/scheduler.hpp"

namespace {

using namespace std::chrono_literals;

long long ms(leader::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

void append(int fd, const std::string& line) {
  [[maybe_unused]] auto n = ::write(fd, line.data(), line.size());  // O_APPEND: one write per line
}

class Printer : public leader::SchedulerListener {
 public:
  explicit Printer(std::string node) : node_(std::move(node)) {}
  void on_firing(const leader::FiringRecord& r) override {
    std::fprintf(stderr, "%s %lld %s %s\n", node_.c_str(), r.instant ? ms(*r.instant) : 0LL,
                 std::string(leader::to_string(r.outcome)).c_str(), r.detail.c_str());
  }

 private:
  std::string node_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s URI TASK TRIGGER SKEW_MS LEASE_MS TASK_MS LEDGER NODE\n",
                 argv[0]);
    return 64;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts
  std::string trigger_text = argv[3];
  leader::Duration skew{std::stoll(argv[4])}, lease{std::stoll(argv[5])}, work{std::stoll(argv[6])};
  int ledger = ::open(argv[7], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  std::string node = argv[8];
  auto store = leader::open(argv[1]);
  leader::ElectionOptions e = leader::scheduled_election_options();
  e.lease_time = lease;
  e.node_id = node;
  leader::Scheduler scheduler(leader::LeaderElector(store, e),
                              {.max_clock_skew = skew,
                               .latency_allowance = 100ms,
                               .listener = std::make_shared<Printer>(node)});
  leader::Trigger trigger =
      trigger_text.rfind("rate:", 0) == 0
          ? leader::Trigger::fixed_rate(leader::Duration{std::stoll(trigger_text.substr(5))})
          : leader::Trigger::cron(trigger_text.substr(5));
  scheduler.schedule({.name = argv[2], .trigger = trigger}, [&](leader::LeaderContext& ctx,
                                                                const leader::FiringInfo& firing) {
    std::string id = std::to_string(firing.instant ? ms(*firing.instant) : 0) + " " +
                     std::to_string(ctx.fencing_token()) + " " + node;
    append(ledger, "start " + id + "\n");
    auto until = std::chrono::steady_clock::now() + work;
    while (std::chrono::steady_clock::now() < until && !ctx.stop_token().stop_requested())
      std::this_thread::sleep_for(5ms);
    append(ledger, "end " + id + "\n");
  });
  scheduler.start();
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  scheduler.stop();
  std::fprintf(stderr, "%s stopped\n", node.c_str());
  return 0;
}
