// `leader cron` end to end: several long-lived processes on one SQLite file run each firing of a
// 1 s schedule exactly once, log one line per firing, and stop cleanly on SIGTERM; --crontab runs
// several jobs and refuses a bad line naming it; a failing command does not stop the schedule; a
// SIGTERM during a firing terminates the command's group and frees the lock.

#include <signal.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class CronTest : public CliTest {
 protected:
  Process start_cron(const std::vector<std::string>& options,
                     const std::vector<std::string>& command = {}) {
    std::vector<std::string> argv = {leader_binary(), "cron", "--store", store_};
    argv.insert(argv.end(), options.begin(), options.end());
    if (!command.empty()) {
      argv.emplace_back("--");
      argv.insert(argv.end(), command.begin(), command.end());
    }
    return Process(argv, dir_);
  }
  // "instant token node" lines written by the commands.
  std::map<std::string, std::vector<std::string>> firings(const std::string& file) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& line : read_lines(path(file))) {
      std::istringstream in(line);
      std::string instant, rest;
      in >> instant;
      std::getline(in, rest);
      out[instant].push_back(rest);
    }
    return out;
  }
};

constexpr const char* kRecord =
    "echo \"$LEADER_SCHEDULED_AT $LEADER_FENCING_TOKEN $LEADER_NODE_ID\" >> ";

TEST_F(CronTest, ThreeReplicasRunEachFiringOnceAndStopCleanly) {
  std::vector<Process> replicas;
  for (const char* node : {"a", "b", "c"})
    replicas.push_back(start_cron({"--schedule", "* * * * * *", "--max-clock-skew", "200ms",
                                   "--lock", "tick", "--node-id", node, "-v"},
                                  sh(kRecord + path("firings"))));
  std::this_thread::sleep_for(7s);
  for (auto& r : replicas) r.signal(SIGTERM);
  for (auto& r : replicas) EXPECT_EQ(r.wait(), 0) << r.err();
  auto runs = firings("firings");
  EXPECT_GE(runs.size(), 5u);
  for (const auto& [instant, who] : runs) EXPECT_EQ(who.size(), 1u) << instant;
  std::string logs;
  for (auto& r : replicas) logs += r.err();
  EXPECT_THAT(logs, HasSubstr("ran here (fencing token"));
  EXPECT_THAT(logs, HasSubstr("ran elsewhere"));
  EXPECT_THAT(logs, HasSubstr("stopped (signal 15); every lease released"));
  EXPECT_EQ(status("tick").code, 3) << "the lock is still held after SIGTERM";
}

TEST_F(CronTest, RanElsewhereIsSaidOnlyWithVerbose) {
  std::vector<Process> replicas;
  for (const char* node : {"a", "b"})
    replicas.push_back(start_cron({"--schedule", "* * * * * *", "--max-clock-skew", "200ms",
                                   "--lock", "tock", "--node-id", node},
                                  sh(kRecord + path("firings"))));
  std::this_thread::sleep_for(5s);
  for (auto& r : replicas) r.signal(SIGTERM);
  for (auto& r : replicas) EXPECT_EQ(r.wait(), 0) << r.err();
  EXPECT_GE(firings("firings").size(), 3u);
  std::string logs;
  for (auto& r : replicas) logs += r.err();
  EXPECT_THAT(logs, HasSubstr("ran here (fencing token"));
  EXPECT_THAT(logs, ::testing::Not(HasSubstr("ran elsewhere")));
}

TEST_F(CronTest, ACrontabRunsEveryJobAndSigtermStopsThemAll) {
  std::ofstream(path("crontab")) << "# two jobs\n\nCRON_TZ=Europe/Berlin\n"
                                 << "\"* * * * * *\" first  echo one >> " << path("one") << "\n"
                                 << "\"*/2 * * * * *\" second echo two >> " << path("two") << "\n";
  Process cron = start_cron({"--crontab", path("crontab"), "--max-clock-skew", "200ms"});
  EXPECT_TRUE(eventually(
      [&] { return !read_lines(path("one")).empty() && !read_lines(path("two")).empty(); }, 15s));
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
  EXPECT_THAT(cron.err(), HasSubstr("2 job(s) from"));
  EXPECT_EQ(status("first").code, 3);
  EXPECT_EQ(status("second").code, 3);
}

TEST_F(CronTest, ABadCrontabLineIsRefusedWithItsNumber) {
  std::ofstream(path("crontab"))
      << "# ok\n*/5 * * * * report ./report.sh\n0 0 L * * monthly ./m.sh\n";
  Finished f = leader({"cron", "--store", store_, "--crontab", path("crontab")});
  EXPECT_EQ(f.code, 64);
  EXPECT_THAT(f.err, HasSubstr("crontab:3: "));
  EXPECT_THAT(f.err, HasSubstr("day of month field 'L'"));
  std::ofstream(path("crontab2")) << "*/5 * * * * report ./a.sh\n*/5 * * * * report ./b.sh\n";
  f = leader({"cron", "--store", store_, "--crontab", path("crontab2")});
  EXPECT_EQ(f.code, 64);
  EXPECT_THAT(f.err, HasSubstr("crontab2:2: lock 'report' is used by an earlier line"));
  f = leader({"cron", "--store", store_, "--schedule", "* * * * * *", "--lock", "x", "--", "true"});
  EXPECT_EQ(f.code, 64);
  EXPECT_THAT(f.err, HasSubstr("too close together"));
}

TEST_F(CronTest, AFailingCommandIsLoggedAndTheScheduleGoesOn) {
  Process cron =
      start_cron({"--schedule", "* * * * * *", "--max-clock-skew", "200ms", "--lock", "fails"},
                 sh("echo x >> " + path("calls") + "; exit 3"));
  EXPECT_TRUE(eventually([&] { return read_lines(path("calls")).size() >= 3; }, 15s));
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0);
  EXPECT_THAT(cron.err(), HasSubstr("ran here and failed (fencing token"));
  EXPECT_THAT(cron.err(), HasSubstr("exit 3"));
}

TEST_F(CronTest, SigtermDuringAFiringTerminatesTheCommandAndFreesTheLock) {
  Process cron = start_cron({"--schedule", "* * * * * *", "--max-clock-skew", "200ms", "--lock",
                             "long", "--grace", "1s", "--ttl", "10s"},
                            sh("echo started >> " + path("long") + "; trap 'echo term >> " +
                               path("long") + "; exit 0' TERM; sleep 30 & wait"));
  ASSERT_TRUE(eventually([&] { return !read_lines(path("long")).empty(); }, 15s));
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
  EXPECT_THAT(read_file(path("long")), HasSubstr("term"));
  EXPECT_THAT(cron.err(), HasSubstr("stopping: SIGTERM to process group"));
  EXPECT_EQ(status("long").code, 3);
}

}  // namespace
}  // namespace leader::cli_test
