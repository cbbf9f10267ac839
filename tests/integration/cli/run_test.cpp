// `leader run` driven as separate processes against one SQLite file: election, skip, exit codes,
// environment, slots and min-hold.

#include <algorithm>
#include <fstream>
#include <set>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Each started command holds its lease until the test creates the `release` file, after every
// replica that did not get a lease has exited: no timing assumption.
class Run : public CliTest {
 protected:
  std::string held_until_released(const std::string& record) {
    return "echo " + record + " >> " + path("ran") + "; while [ ! -e " + path("release") +
           " ]; do sleep 0.02; done";
  }
  void release_when_skipped_exited(std::vector<Process>& replicas, std::size_t skipped) {
    ASSERT_TRUE(eventually([&] {
      return std::count_if(replicas.begin(), replicas.end(),
                           [](Process& p) { return p.exited(); }) == static_cast<long>(skipped);
    }));
    std::ofstream(path("release")) << "go\n";
  }
};

TEST_F(Run, ConcurrentReplicasRunTheCommandExactlyOnce) {
  std::vector<Process> replicas;
  for (int i = 0; i < 6; ++i)
    replicas.push_back(start_run("once", {"-v", "--node-id", "replica-" + std::to_string(i)},
                                 sh(held_until_released("$LEADER_NODE_ID"))));
  release_when_skipped_exited(replicas, 5);
  int skipped = 0;
  for (auto& r : replicas) {
    EXPECT_EQ(r.wait(), 0) << r.err();
    if (r.err().find("is held by") != std::string::npos) ++skipped;
  }
  EXPECT_EQ(read_lines(path("ran")).size(), 1u);
  EXPECT_EQ(skipped, 5);
}

TEST_F(Run, WaitWaitsForTheHolderAndThenRuns) {
  Process first = start_run(
      "waited", {},
      sh("echo first >> " + path("log") + "; sleep 1; echo " + "first-end >> " + path("log")));
  wait_until_held("waited");
  Finished second = run("waited", {"--wait", "30s"}, sh("echo second >> " + path("log")));
  EXPECT_EQ(first.wait(), 0);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(read_lines(path("log")), (std::vector<std::string>{"first", "first-end", "second"}));
}

TEST_F(Run, SkippedReplicaExitsWithTheSkipExitCodeAndQuietSilencesIt) {
  Process holder = start_run("busy", {"--node-id", "holder-node"}, {"sleep", "3"});
  wait_until_held("busy");
  Finished skipped = run("busy", {"-v"}, {"touch", path("ran")});
  EXPECT_EQ(skipped.code, 0);
  EXPECT_THAT(skipped.err, HasSubstr("'busy' is held by holder-node"));
  Finished coded = run("busy", {"--skip-exit-code", "7"}, {"touch", path("ran")});
  EXPECT_EQ(coded.code, 7);
  Finished quiet = run("busy", {"--quiet"}, {"touch", path("ran")});
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(read_file(path("ran")), "");
  EXPECT_EQ(holder.wait(), 0);
}

TEST_F(Run, ExitStatusAndSignalDeathOfTheCommandArePassedThrough) {
  EXPECT_EQ(run("codes", {}, sh("exit 3")).code, 3);
  EXPECT_EQ(run("codes", {}, sh("kill -KILL $$")).code, 128 + 9);
  EXPECT_EQ(run("codes", {}, sh("kill -TERM $$")).code, 128 + 15);
  EXPECT_EQ(run("codes", {}, {"true"}).code, 0);
  EXPECT_EQ(status("codes").code, 3) << "every run released the lock";
}

TEST_F(Run, CommandSeesLockNodeAndStrictlyIncreasingFencingTokens) {
  auto script =
      sh("echo \"$LEADER_LOCK $LEADER_NODE_ID $LEADER_FENCING_TOKEN ${LEADER_SLOT-none}\"");
  Finished a = run("env-lock", {"--node-id", "n1"}, script);
  Finished b = run("env-lock", {"--node-id", "n1"}, script);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  std::string lock_a, node_a, slot_a, lock_b, node_b, slot_b;
  std::uint64_t token_a = 0, token_b = 0;
  std::istringstream(a.out) >> lock_a >> node_a >> token_a >> slot_a;
  std::istringstream(b.out) >> lock_b >> node_b >> token_b >> slot_b;
  EXPECT_EQ(lock_a, "env-lock");
  EXPECT_EQ(node_a, "n1");
  EXPECT_EQ(slot_a, "none");
  EXPECT_GT(token_a, 0u);
  EXPECT_GT(token_b, token_a);
}

TEST_F(Run, SlotsRunAtMostNAtOnceEachInItsOwnSlot) {
  std::vector<Process> replicas;
  for (int i = 0; i < 6; ++i)
    replicas.push_back(
        start_run("pool", {"--slots", "3", "--quiet"}, sh(held_until_released("$LEADER_SLOT"))));
  release_when_skipped_exited(replicas, 3);
  for (auto& r : replicas) EXPECT_EQ(r.wait(), 0) << r.err();
  auto slots = read_lines(path("ran"));
  EXPECT_EQ(slots.size(), 3u);
  std::set<std::string> distinct(slots.begin(), slots.end());
  EXPECT_EQ(distinct, (std::set<std::string>{"0", "1", "2"}));
}

TEST_F(Run, MinHoldKeepsTheLockAfterAFastCommand) {
  ASSERT_EQ(run("held-on", {"--min-hold", "5s", "--ttl", "20s"}, {"true"}).code, 0);
  EXPECT_EQ(status("held-on").code, 0);
  Finished next = run("held-on", {"-v"}, {"touch", path("ran")});
  EXPECT_EQ(next.code, 0);
  EXPECT_THAT(next.err, HasSubstr("is held by"));
  EXPECT_EQ(read_file(path("ran")), "");
}

TEST_F(Run, UsageErrorsExit64WithTheUsageLine) {
  const std::vector<std::vector<std::string>> cases = {
      {"run", "--store", store_, "--", "true"},                            // no --lock
      {"run", "--store", store_, "--lock", "x", "--bogus", "--", "true"},  // unknown option
      {"run", "--store", store_, "--lock", "x", "--ttl", "5 parsecs", "--", "true"},
      {"run", "--store", store_, "--lock", "x", "--ttl", "4s", "--grace", "3s", "--", "true"},
      {"run", "--store", store_, "--lock", "x", "--ttl", "1500ms", "--", "true"},
      {"run", "--store", store_, "--lock", "bad/name", "--", "true"},
      {"run", "--store", store_, "--lock", "x", "--min-hold", "1m", "--", "true"},
      {"run", "--store", store_, "--lock", "x", "--slots", "0", "--", "true"},
      {"run", "--store", store_, "--lock", "x"},  // no command
      {"status", "--store", store_},              // no --lock
      {},                                         // no subcommand
  };
  for (const auto& args : cases) {
    Finished f = leader(args);
    EXPECT_EQ(f.code, 64) << f.err;
    EXPECT_THAT(f.err, HasSubstr("Usage: leader"));
  }
  EXPECT_THAT(leader({"run", "--store", store_, "--lock", "x", "--ttl", "4s", "--grace", "3s", "--",
                      "true"})
                  .err,
              HasSubstr("--grace 3s does not fit in --ttl 4s"));
}

TEST_F(Run, ShortTtlWithoutGraceShortensTheDefaultGrace) {
  EXPECT_EQ(run("short", {"--ttl", "2s"}, {"true"}).code, 0);
  EXPECT_EQ(run("short", {"--ttl", "6s"}, {"true"}).code, 0);
  EXPECT_EQ(run("short", {"--ttl", "6s", "--grace", "5s"}, {"true"}).code, 64);
}

TEST_F(Run, UnusableStoreExitsByCauseWithAOneLineReason) {
  for (const auto& [store, code] : std::vector<std::pair<std::string, int>>{
           {"sqlite:///nonexistent-dir/sub/leader.db", 78},  // misconfigured: no such directory
           {"nosuchstore://x", 78}}) {
    Finished f = leader({"run", "--store", store, "--lock", "x", "--", "touch", path("ran")});
    EXPECT_EQ(f.code, code) << store << "\n" << f.err;
    EXPECT_EQ(std::count(f.err.begin(), f.err.end(), '\n'), 1) << f.err;
    EXPECT_EQ(leader({"status", "--store", store, "--lock", "x"}).code, code) << store;
  }
  EXPECT_EQ(read_file(path("ran")), "");
}

TEST_F(Run, MissingCommandExits127WithoutTakingTheLock) {
  Finished f = run("nocmd", {}, {"no-such-command-leader-test"});
  EXPECT_EQ(f.code, 127);
  EXPECT_THAT(f.err, HasSubstr("no-such-command-leader-test"));
  EXPECT_EQ(run("nocmd", {}, {path("missing/script.sh")}).code, 127);
  EXPECT_EQ(status("nocmd").code, 3);
}

TEST_F(Run, HelpListsTheExitCodesAndVersionPrintsTheVersion) {
  Finished help = leader({"run", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("Exit codes"));
  EXPECT_THAT(help.out, HasSubstr("75"));
  EXPECT_EQ(leader({"status", "--help"}).code, 0);
  EXPECT_EQ(leader({"--help"}).code, 0);
  Finished version = leader({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_THAT(version.out, HasSubstr("leader "));
  EXPECT_THAT(version.out, HasSubstr("sqlite"));
}

TEST_F(Run, VerboseNamesTheStoreAndTheFencingToken) {
  Finished f = run("chatty", {"-v"}, {"true"});
  EXPECT_EQ(f.code, 0);
  EXPECT_THAT(f.err, HasSubstr("store " + store_));
  EXPECT_THAT(f.err, HasSubstr("fencing token"));
  EXPECT_THAT(run("chatty", {}, {"true"}).err, Not(HasSubstr("fencing token")));
}

}  // namespace
}  // namespace leader::cli_test
