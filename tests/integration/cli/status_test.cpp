// `leader status`: free and held locks, groups, JSON; and the example demo script.

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using ::testing::HasSubstr;

class Status : public CliTest {};

TEST_F(Status, FreeLockExits3) {
  Finished text = status("nobody");
  EXPECT_EQ(text.code, 3);
  EXPECT_EQ(text.out, "nobody: free\n");
  Finished json = status("nobody", {"--json"});
  EXPECT_EQ(json.code, 3);
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["held"], false);
  EXPECT_TRUE(doc["holders"].empty());
}

TEST_F(Status, HeldLockShowsTheHolderNodeTokenAndTimeLeft) {
  Process holder = start_run("shown", {"--node-id", "node-a"}, {"sleep", "3"});
  wait_until_held("shown");
  Finished text = status("shown");
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("shown: held"));
  EXPECT_THAT(text.out, HasSubstr("node node-a"));
  EXPECT_THAT(text.out, HasSubstr("fencing token 1"));
  auto doc = nlohmann::json::parse(status("shown", {"--json"}).out);
  EXPECT_EQ(doc["lock"], "shown");
  EXPECT_EQ(doc["held"], true);
  ASSERT_EQ(doc["holders"].size(), 1u);
  EXPECT_EQ(doc["holders"][0]["node_id"], "node-a");
  EXPECT_EQ(doc["holders"][0]["fencing_token"], 1);
  EXPECT_GT(doc["holders"][0]["expires_in_ms"].get<long>(), 0);
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(status("shown").code, 3);
}

TEST_F(Status, GroupLockShowsActiveAndAvailableSlots) {
  Process a = start_run("grp", {"--slots", "3", "--node-id", "a"}, {"sleep", "3"});
  Process b = start_run("grp", {"--slots", "3", "--node-id", "b"}, {"sleep", "3"});
  ASSERT_TRUE(eventually([&] {
    return nlohmann::json::parse(status("grp", {"--json", "--slots", "3"}).out)["active"] == 2;
  }));
  Finished text = status("grp", {"--slots", "3"});
  EXPECT_EQ(text.code, 0);
  EXPECT_THAT(text.out, HasSubstr("2 of 3 slots held, 1 available"));
  auto doc = nlohmann::json::parse(status("grp", {"--json", "--slots", "3"}).out);
  EXPECT_EQ(doc["available"], 1);
  EXPECT_EQ(a.wait(), 0);
  EXPECT_EQ(b.wait(), 0);
}

TEST_F(Status, CronOnceDemoRunsTheJobOnOneReplicaOnly) {
  Process demo({"sh", LEADER_CLI_DEMO}, dir_,
               {"LEADER_STORE=" + store_, "LEADER=" + leader_binary()});
  EXPECT_EQ(demo.wait(), 0) << demo.err();
  std::string out = demo.out();
  std::size_t runs = 0;
  for (std::size_t at = out.find("runs the job"); at != std::string::npos;
       at = out.find("runs the job", at + 1))
    ++runs;
  EXPECT_EQ(runs, 1u) << out;
}

TEST_F(Status, StoreComesFromTheEnvironmentThenFromThePerUserDefault) {
  Finished from_env = leader({"status", "--lock", "envlock", "-v"}, {"LEADER_STORE=" + store_});
  EXPECT_EQ(from_env.code, 3) << from_env.err;
  EXPECT_THAT(from_env.err, HasSubstr("store " + store_ + " (from $LEADER_STORE)"));
  if (::access("/var/lib/leader", W_OK) == 0 || ::geteuid() == 0)
    GTEST_SKIP() << "the host-wide default /var/lib/leader is writable here; not touching it";
  Finished fallback = leader({"status", "--lock", "deflock", "-v"},
                             {"HOME=" + dir_, "XDG_STATE_HOME=" + path("state")});
  EXPECT_EQ(fallback.code, 3) << fallback.err;
  EXPECT_THAT(fallback.err,
              HasSubstr("sqlite://" + path("state") + "/leader/leader.db (from default)"));
  // The default is announced without -v too.
  Finished quiet =
      leader({"status", "--lock", "deflock"}, {"HOME=" + dir_, "XDG_STATE_HOME=" + path("state")});
  EXPECT_THAT(quiet.err, HasSubstr("/leader/leader.db (from default)"));
}

TEST_F(Status, AnEmptyOrMemoryStoreIsAUsageErrorNotAFallback) {
  Finished empty_flag = leader({"run", "--store", "", "--lock", "e", "--", "true"});
  EXPECT_EQ(empty_flag.code, 64) << empty_flag.err;
  EXPECT_THAT(empty_flag.err, HasSubstr("--store is empty"));
  Finished memory_flag = leader({"status", "--store", "memory:", "--lock", "m"});
  EXPECT_EQ(memory_flag.code, 64) << memory_flag.err;
  EXPECT_THAT(memory_flag.err, HasSubstr("memory:"));
  // Set but empty (the helper's "NAME=" unsets, so env(1) sets it).
  Process empty_env({"env", "LEADER_STORE=", leader_binary(), "run", "--lock", "e", "--", "true"},
                    dir_, {});
  EXPECT_EQ(empty_env.wait(), 64) << empty_env.err();
  EXPECT_THAT(empty_env.err(), HasSubstr("$LEADER_STORE is empty"));
  Finished memory_env = leader({"status", "--lock", "m"}, {"LEADER_STORE=MEMORY:"});
  EXPECT_EQ(memory_env.code, 64) << memory_env.err;
  EXPECT_THAT(memory_env.err, HasSubstr("every replica would hold its own lock"));
}

TEST_F(Status, CommandMayFollowTheOptionsWithoutADoubleDash) {
  Finished f = leader({"run", "--store", store_, "--lock", "nodash", "sh", "-c", "echo $0", "ok"});
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "ok\n");
}

}  // namespace
}  // namespace leader::cli_test
