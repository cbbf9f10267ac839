// One replica of the scheduler integration tests: a Scheduler on the store given with one or more
// tasks. Each run of a task sends a "start" and an "end" datagram (task, the firing's instant,
// fencing token, node) to the observer's Unix socket; the observer (the test process, whose clock
// is not faked) stamps them on arrival, so the judge never reads this replica's clock. Prints
// "ready" once started; SIGTERM stops it (Scheduler::stop) and exits 0.
//
// Usage: scheduler_replica URI OBSERVER_SOCKET NODE SKEW_MS ALLOWANCE_MS LEASE_MS TASK...
//   TASK: NAME|TRIGGER|WORK_MS, TRIGGER: rate:<ms> or cron:<expression>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "leader/open.hpp"
#include "leader/scheduler.hpp"

namespace {

using namespace std::chrono_literals;

long long ms(leader::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Sends datagrams to the observer's socket (one per ledger line).
class Observer {
 public:
  explicit Observer(const std::string& path)
      : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    addr_.sun_family = AF_UNIX;
    std::strncpy(addr_.sun_path, path.c_str(), sizeof(addr_.sun_path) - 1);
  }
  ~Observer() { ::close(fd_); }
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;
  void send(const std::string& line) const {
    for (int i = 0; i < 100; ++i) {  // a full receive queue: retry briefly, then report it
      if (::sendto(fd_, line.data(), line.size(), 0, reinterpret_cast<const sockaddr*>(&addr_),
                   sizeof(addr_)) >= 0)
        return;
      std::this_thread::sleep_for(1ms);
    }
    std::fprintf(stderr, "observer: lost '%s': %s\n", line.c_str(), std::strerror(errno));
  }

 private:
  int fd_;
  sockaddr_un addr_{};
};

class Printer : public leader::SchedulerListener {
 public:
  explicit Printer(std::string node) : node_(std::move(node)) {}
  void on_firing(const leader::FiringRecord& r) override {
    std::fprintf(stderr, "%s %s %lld %s %s\n", node_.c_str(), r.task.c_str(),
                 r.instant ? ms(*r.instant) : 0LL,
                 std::string(leader::to_string(r.outcome)).c_str(), r.detail.c_str());
  }

 private:
  std::string node_;
};

struct TaskSpec {
  std::string name, trigger;
  leader::Duration work{};
};

TaskSpec parse_task(const std::string& arg) {
  auto a = arg.find('|'), b = arg.rfind('|');
  if (a == std::string::npos || a == b) throw std::invalid_argument("bad task: " + arg);
  return {arg.substr(0, a), arg.substr(a + 1, b - a - 1),
          leader::Duration{std::stoll(arg.substr(b + 1))}};
}

leader::Trigger trigger_of(const std::string& text) {
  if (text.rfind("rate:", 0) == 0)
    return leader::Trigger::fixed_rate(leader::Duration{std::stoll(text.substr(5))});
  if (text.rfind("cron:", 0) == 0) return leader::Trigger::cron(text.substr(5));
  throw std::invalid_argument("bad trigger: " + text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: %s URI OBSERVER_SOCKET NODE SKEW_MS ALLOWANCE_MS LEASE_MS "
                 "NAME|TRIGGER|WORK_MS...\n",
                 argv[0]);
    return 64;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts
  Observer observer(argv[2]);
  std::string node = argv[3];
  leader::Duration skew{std::stoll(argv[4])}, allowance{std::stoll(argv[5])},
      lease{std::stoll(argv[6])};
  auto store = leader::open(argv[1]);
  leader::ElectionOptions e = leader::scheduled_election_options();
  e.lease_time = lease;
  e.node_id = node;
  leader::Scheduler scheduler(leader::LeaderElector(store, e),
                              {.max_clock_skew = skew,
                               .latency_allowance = allowance,
                               .listener = std::make_shared<Printer>(node)});
  for (int i = 7; i < argc; ++i) {
    TaskSpec spec = parse_task(argv[i]);
    scheduler.schedule(
        {.name = spec.name, .trigger = trigger_of(spec.trigger)},
        [&observer, &node, spec](leader::LeaderContext& ctx, const leader::FiringInfo& firing) {
          std::string id = spec.name + " " +
                           std::to_string(firing.instant ? ms(*firing.instant) : 0) + " " +
                           std::to_string(ctx.fencing_token()) + " " + node;
          observer.send("start " + id);
          auto until = std::chrono::steady_clock::now() + spec.work;
          while (std::chrono::steady_clock::now() < until && !ctx.stop_token().stop_requested())
            std::this_thread::sleep_for(5ms);
          observer.send("end " + id);
        });
  }
  scheduler.start();
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  scheduler.stop();
  std::fprintf(stderr, "%s stopped\n", node.c_str());
  return 0;
}
