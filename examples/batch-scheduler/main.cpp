// batch-scheduler: every replica of a service runs the same leader::Scheduler with a cron job
// (Spring @Scheduled + ShedLock); each firing runs on exactly one replica, whose wall clock may
// differ from the others' by up to max_clock_skew. Every run is written to a history sink (a JSON
// Lines file here; an SQL audit table with `postgresql://...` or `mysql://...`).
//
//   example_batch_scheduler <redis-uri> <replica> <history-jsonl> [--task NAME]
//                           [--cron EXPR] [--run-ms N] [--work-ms N]
//
// Output (one line per event; the test driver greps them):
//   RAN task=<name> instant=<unix-seconds> replica=<r> token=<t>   this replica ran that firing
//   STOPPED replica=<r> runs=<n> elsewhere=<n>                      the scheduler shut down
#include <atomic>
#include <chrono>
#include <leader/leader.hpp>
#include <leader/scheduler.hpp>
#include <thread>

#include "../common.hpp"

namespace {

// Counts this replica's firings that another replica ran.
class Counter final : public leader::SchedulerListener {
 public:
  void on_firing(const leader::FiringRecord& record) override {
    if (record.outcome == leader::FiringOutcome::ran_elsewhere) ++elsewhere;
  }
  std::atomic<int> elsewhere{0};
};

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<redis-uri> <replica> <history-jsonl> [--task NAME] [--cron EXPR] [--run-ms N] "
      "[--work-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const auto work = std::chrono::milliseconds(args.number("--work-ms", 200));
    auto election = leader::scheduled_election_options();  // wait_time 0, auto_extend
    election.node_id = replica;
    leader::LeaderElector elector(leader::open(args.at(0)), election,
                                  {.history = leader::open_history("jsonl:" + args.at(2))});
    auto counter = std::make_shared<Counter>();
    leader::Scheduler scheduler(elector, {.max_clock_skew = 100ms,  // NTP-synced hosts
                                          .listener = counter});
    std::atomic<int> runs{0};
    scheduler.schedule(
        {.name = args.get("--task", "nightly-export"),
         .trigger = leader::Trigger::cron(args.get("--cron", "*/1 * * * * *"))},
        [&](leader::LeaderContext& ctx, const leader::FiringInfo& firing) {
          const auto instant =
              std::chrono::duration_cast<std::chrono::seconds>(firing.instant->time_since_epoch());
          std::printf("RAN task=%s instant=%lld replica=%s token=%llu\n", firing.task.c_str(),
                      static_cast<long long>(instant.count()), replica.c_str(),
                      static_cast<unsigned long long>(ctx.fencing_token()));
          ++runs;
          std::this_thread::sleep_for(work);  // the batch job
        });
    scheduler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(args.number("--run-ms", 3500)));
    scheduler.stop();                      // waits for a running firing, releases every lease
    elector.history_feed().wait_idle(2s);  // the history is written off the election path
    std::printf("STOPPED replica=%s runs=%d elsewhere=%d\n", replica.c_str(), runs.load(),
                counter->elsewhere.load());
    return 0;
  });
}
