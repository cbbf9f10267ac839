// `leader run --wait forever` (hot standby, --restart) and `leader observe`, with the real binary
// against a SQLite file. Who holds the lock is read from the store (`leader status`), and the
// commands record their fencing tokens in files.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class Standby : public CliTest {};

TEST_F(Standby, WaitForeverRunsOneReplicaAtATimeWithIncreasingTokens) {
  // Each replica appends "start TOKEN" and "end TOKEN" around a short sleep; with --wait forever
  // the second waits for the first instead of skipping.
  std::string log = path("log");
  auto script = sh("echo start $LEADER_FENCING_TOKEN >> " + log + "; sleep 1; echo end " +
                   "$LEADER_FENCING_TOKEN >> " + log);
  Process a = start_run("svc", {"--wait", "forever", "--ttl", "3s"}, script);
  wait_until_held("svc");
  Process b = start_run("svc", {"--wait", "forever", "--ttl", "3s"}, script);
  EXPECT_EQ(a.wait(), 0);
  EXPECT_EQ(b.wait(), 0);
  EXPECT_EQ(read_lines(log), (std::vector<std::string>{"start 1", "end 1", "start 2", "end 2"}));
}

TEST_F(Standby, RestartOnFailureRunsTheCommandAgainUnderTheSameLease) {
  std::string count = path("count");
  std::string tokens = path("tokens");
  auto script = sh("n=$(cat " + count + " 2>/dev/null || echo 0); n=$((n+1)); echo $n > " + count +
                   "; echo $LEADER_FENCING_TOKEN >> " + tokens + "; [ $n -ge 3 ]");
  Finished r = run("svc", {"--wait", "forever", "--restart", "on-failure", "--ttl", "3s"}, script);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_lines(tokens), (std::vector<std::string>{"1", "1", "1"}));
  EXPECT_EQ(status("svc").code, 3) << "stepped down without releasing";
}

TEST_F(Standby, RestartNeverStepsDownWithTheCommandsExitCode) {
  Finished r = run("svc", {"--wait", "forever", "--restart", "never"}, sh("exit 7"));
  EXPECT_EQ(r.code, 7);
  EXPECT_EQ(status("svc").code, 3);
}

TEST_F(Standby, SigtermStopsRestartAlwaysAndReleasesTheLock) {
  std::string runs = path("runs");
  Process p = start_run("svc", {"--wait", "forever", "--restart", "always", "--ttl", "3s"},
                        sh("echo run >> " + runs + "; exec sleep 30"));
  wait_until_held("svc");
  ASSERT_TRUE(eventually([&] { return read_lines(runs).size() == 1; }));
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), 128 + SIGTERM);
  EXPECT_EQ(read_lines(runs).size(), 1u) << "restarted after SIGTERM";
  EXPECT_EQ(status("svc").code, 3);
}

TEST_F(Standby, SigtermOnTheActiveReplicaHandsOverToAStandbyBeforeTheLeaseCouldExpire) {
  // Two replicas of the same line; the active one gets SIGTERM. The standby must start well
  // before the 10 s lease could expire on the store: only the release lets it in that early.
  std::string log = path("log");
  auto line = [&](const std::string& name) {
    return start_run(
        "svc", {"--wait", "forever", "--restart", "always", "--ttl", "10s", "--node-id", name},
        sh("echo $LEADER_NODE_ID $LEADER_FENCING_TOKEN >> " + log + "; exec sleep 30"));
  };
  Process a = line("node-a");
  ASSERT_TRUE(eventually([&] { return read_lines(log).size() == 1; }));
  Process b = line("node-b");
  std::this_thread::sleep_for(300ms);  // b is waiting
  ASSERT_EQ(read_lines(log), std::vector<std::string>{"node-a 1"});
  auto sent = std::chrono::steady_clock::now();
  a.signal(SIGTERM);
  ASSERT_TRUE(eventually([&] { return read_lines(log).size() == 2; }, 9s));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - sent);
  RecordProperty("handover_ms", static_cast<int>(took.count()));
  std::printf("SIGTERM to the standby's COMMAND start: %lld ms\n",
              static_cast<long long>(took.count()));
  EXPECT_EQ(read_lines(log)[1], "node-b 2");
  EXPECT_EQ(a.wait(10s), 128 + SIGTERM);
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait(10s), 128 + SIGTERM);
  EXPECT_EQ(status("svc").code, 3);
}

TEST_F(Standby, AStandbyWaitingForeverStopsOnSigterm) {
  Process holder = start_run("svc", {"--ttl", "5s"}, {"sleep", "20"});
  wait_until_held("svc");
  Process standby = start_run("svc", {"--wait", "forever"}, {"true"});
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(standby.exited()) << standby.err();
  standby.signal(SIGTERM);
  EXPECT_EQ(standby.wait(10s), 128 + SIGTERM);
  holder.signal(SIGTERM);
  (void)holder.wait();
}

TEST_F(Standby, AStandbyOutlivesAnUnreachableStoreAndSaysSoOnce) {
  // Without --wait forever this is exit 69; a standby keeps trying (every 250-500 ms) and warns
  // once, until a signal.
  Process p({leader_binary(), "run", "--store", "redis://127.0.0.1:1?connect_timeout=200ms",
             "--lock", "svc", "--wait", "forever", "--", "true"},
            dir_);
  ASSERT_TRUE(eventually([&] { return p.err().find("still waiting") != std::string::npos; }));
  std::this_thread::sleep_for(1500ms);  // several more attempts
  EXPECT_FALSE(p.exited()) << p.err();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(10s), 128 + SIGTERM);
  std::string err = p.err();
  EXPECT_EQ(err.find("still waiting"), err.rfind("still waiting"))
      << "warned more than once: " << err;
  EXPECT_THAT(err, HasSubstr("unavailable"));
}

TEST_F(Standby, RestartWithoutWaitForeverAndBadValuesAreUsageErrors) {
  Finished r = run("svc", {"--restart", "always"}, {"true"});
  EXPECT_EQ(r.code, 64);
  EXPECT_THAT(r.err, HasSubstr("--restart needs --wait forever"));
  EXPECT_EQ(run("svc", {"--wait", "forever", "--restart", "sometimes"}, {"true"}).code, 64);
  EXPECT_EQ(run("svc", {"--wait", "inf"}, {"true"}).code, 64);
}

class Observe : public CliTest {
 protected:
  Process start_observe(const std::vector<std::string>& options) {
    std::vector<std::string> argv = {leader_binary(), "observe", "--store",    store_,
                                     "--lock",        "svc",     "--interval", "50ms"};
    argv.insert(argv.end(), options.begin(), options.end());
    return Process(argv, dir_);
  }
};

TEST_F(Observe, PrintsEachChangeOfHolderAndExitsWhenTheLockIsFreeWithUntilFree) {
  // The holder ends only once the observer has printed its first line (a fixed sleep let a
  // loaded host start the observer after the lock was free again).
  std::string go = path("go");
  Process holder = start_run("svc", {"--node-id", "node-a"},
                             sh("while [ ! -e " + go + " ]; do sleep 0.05; done"));
  wait_until_held("svc");
  Process obs = start_observe({"--json", "--until-free"});
  ASSERT_TRUE(eventually([&] { return obs.out().find("node-a") != std::string::npos; }))
      << obs.err();
  { std::ofstream(go).put('\n'); }
  EXPECT_EQ(obs.wait(20s), 0) << obs.err();
  std::vector<nlohmann::json> lines;
  std::istringstream in(obs.out());
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u) << obs.out();
  EXPECT_EQ(lines[0]["held"], true);
  EXPECT_EQ(lines[0]["holders"][0]["node_id"], "node-a");
  EXPECT_EQ(lines[0]["holders"][0]["fencing_token"], 1);
  EXPECT_EQ(lines[1]["held"], false);
  EXPECT_EQ(lines[1]["lock"], "svc");
  EXPECT_EQ(holder.wait(), 0);
}

TEST_F(Observe, TextLinesFollowAHandOverAndSigtermEndsIt) {
  Process obs = start_observe({});
  ASSERT_TRUE(eventually([&] { return obs.out().find("svc: free") != std::string::npos; }));
  EXPECT_EQ(run("svc", {"--node-id", "node-a"}, {"sleep", "0.5"}).code, 0);
  EXPECT_EQ(run("svc", {"--node-id", "node-b"}, {"sleep", "0.5"}).code, 0);
  ASSERT_TRUE(eventually([&] { return obs.out().find("node-b") != std::string::npos; }));
  obs.signal(SIGTERM);
  EXPECT_EQ(obs.wait(10s), 0);
  std::string out = obs.out();
  EXPECT_THAT(out, HasSubstr("held by node-a (fencing token 1"));
  EXPECT_THAT(out, HasSubstr("held by node-b (fencing token 2"));
  EXPECT_LT(out.find("node-a"), out.find("node-b"));
}

TEST_F(Observe, BadOptionsAreUsageErrorsAndAnUnreachableStoreIs69) {
  EXPECT_EQ(leader({"observe", "--store", store_, "--lock", "svc", "--interval", "0s"}).code, 64);
  EXPECT_EQ(leader({"observe", "--store", store_, "--lock", "bad name!"}).code, 64);
  EXPECT_EQ(leader({"observe", "--store", store_}).code, 64);
  Finished down =
      leader({"observe", "--store", "redis://127.0.0.1:1?connect_timeout=200ms", "--lock", "svc"});
  EXPECT_EQ(down.code, 69) << down.err;
}

}  // namespace
}  // namespace leader::cli_test
