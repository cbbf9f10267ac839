// `leader run` when things go wrong: the holder is killed, the lease is lost while the command
// runs, and signals reach leader while it waits or while the command runs.

#include <signal.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using ::testing::HasSubstr;

class Lease : public CliTest {
 protected:
  // Runs `script` under leader after writing its own pid (and its background child's) to files.
  Process start_family(const std::string& lock, const std::vector<std::string>& options,
                       const std::string& grandchild) {
    Process p = start_run(lock, options,
                          sh(grandchild + " & echo $! > " + path("grandchild.pid") +
                             "; echo $$ > " + path("child.pid") + "; wait"));
    EXPECT_TRUE(eventually([&] {
      return read_lines(path("child.pid")).size() == 1 &&
             read_lines(path("grandchild.pid")).size() == 1;
    }));
    return p;
  }
  pid_t pid_in(const std::string& file) { return std::stoi(read_file(path(file))); }
};

// A connection holding BEGIN EXCLUSIVE: every write to the store gets SQLITE_BUSY (renewals fail).
class WriterLock {
 public:
  explicit WriterLock(const std::string& db) {
    EXPECT_EQ(sqlite3_open(db.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
  }
  ~WriterLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  sqlite3* db_ = nullptr;
};

TEST_F(Lease, CrashedHolderTakesItsCommandGroupAlongAndIsReplacedAfterTheTtl) {
  Process holder = start_family("crash", {"--ttl", "5s", "--grace", "0s"}, "sleep 300");
  pid_t child = pid_in("child.pid");
  pid_t grandchild = pid_in("grandchild.pid");
  holder.signal(SIGKILL);
  EXPECT_EQ(holder.wait(), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return !process_running(child) && !process_running(grandchild); }))
      << "the command group outlived a SIGKILLed leader";
  Finished early = run("crash", {"-v"}, {"touch", path("early")});
  EXPECT_EQ(early.code, 0);
  EXPECT_THAT(early.err, HasSubstr("is held by")) << "the dead holder's lease is still valid";
  Finished later = run("crash", {"--wait", "30s"}, sh("echo $LEADER_FENCING_TOKEN"));
  EXPECT_EQ(later.code, 0) << later.err;
  EXPECT_EQ(later.out, "2\n");
  EXPECT_EQ(read_file(path("early")), "");
}

TEST_F(Lease, LostLeaseKillsTheWholeGroupIncludingAGrandchildBeforeTheTtl) {
  const auto ttl = std::chrono::seconds(3);
  // The grandchild ignores SIGTERM, so only the SIGKILL after --grace can end it.
  Process holder = start_family("lost", {"--ttl", "3s", "--grace", "500ms"},
                                "sh -c 'trap \"\" TERM; exec sleep 300'");
  pid_t grandchild = pid_in("grandchild.pid");
  ASSERT_TRUE(process_running(grandchild));
  WriterLock outage(db_);
  // No renewal can commit any more; the store's own expiry (read: WAL readers still proceed) is
  // the earliest instant another holder could get in, and the group must be gone before it.
  // (Bounding by outage start + ttl would measure from the latest possible expiry instead.)
  const auto asked = std::chrono::steady_clock::now();
  auto doc = nlohmann::json::parse(status("lost", {"--json"}).out);
  ASSERT_EQ(doc["holders"].size(), 1u);
  const auto expires_in = std::chrono::milliseconds(doc["holders"][0]["expires_in_ms"].get<long>());
  ASSERT_LE(expires_in, ttl);
  const auto earliest_expiry = asked + expires_in;
  ASSERT_TRUE(eventually([&] { return !process_running(grandchild); }, std::chrono::seconds(30)));
  EXPECT_LT(std::chrono::steady_clock::now(), earliest_expiry)
      << "the group outlived the store's expiry of the lease";
  EXPECT_EQ(holder.wait(), 75);
  EXPECT_THAT(holder.err(), HasSubstr("lease on 'lost' lost"));
  EXPECT_FALSE(process_running(pid_in("child.pid")));
}

TEST_F(Lease, SigtermIsForwardedToTheCommandWhichDecidesTheExitStatus) {
  Process holder = start_run("fwd", {},
                             sh("trap 'echo got-term > " + path("trapped") + "; exit 7' TERM; " +
                                "echo ready > " + path("ready") + "; sleep 300 & wait"));
  ASSERT_TRUE(eventually([&] { return read_file(path("ready")) == "ready\n"; }));
  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(), 7);
  EXPECT_EQ(read_file(path("trapped")), "got-term\n");
  EXPECT_EQ(status("fwd").code, 3) << "released after the group exited";
}

TEST_F(Lease, SigintKillsAPlainCommandAndLeaderExits130) {
  Process holder = start_run("int", {}, {"sleep", "300"});
  wait_until_held("int");
  holder.signal(SIGINT);
  EXPECT_EQ(holder.wait(), 128 + SIGINT);
  EXPECT_EQ(status("int").code, 3);
}

TEST_F(Lease, StragglersLeftInTheGroupAfterAForwardedSignalAreTerminated) {
  // sh starts background jobs with SIGINT ignored: after the forwarded SIGINT kills sh, the
  // background sleep would keep the group (and the lease) alive; leader terminates it.
  Process holder = start_family("straggler", {"--grace", "1s"}, "sleep 300");
  pid_t grandchild = pid_in("grandchild.pid");
  holder.signal(SIGINT);
  EXPECT_EQ(holder.wait(), 128 + SIGINT);
  EXPECT_FALSE(process_running(grandchild));
  EXPECT_EQ(status("straggler").code, 3);
}

TEST_F(Lease, BackgroundChildKeepsTheLockUntilItExits) {
  Process holder = start_run("bg", {}, sh("(sleep 1; echo done > " + path("bg") + ") & exit 0"));
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(read_file(path("bg")), "done\n") << "leader returned before the group was empty";
}

TEST_F(Lease, SignalWhileWaitingForTheLockExitsWithoutRunning) {
  Process holder = start_run("queue", {}, {"sleep", "5"});
  wait_until_held("queue");
  Process waiter = start_run("queue", {"--wait", "60s"}, {"touch", path("ran")});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  waiter.signal(SIGTERM);
  EXPECT_EQ(waiter.wait(std::chrono::seconds(20)), 128 + SIGTERM);
  EXPECT_EQ(read_file(path("ran")), "");
  holder.signal(SIGTERM);
  EXPECT_EQ(holder.wait(), 128 + SIGTERM);
}

}  // namespace
}  // namespace leader::cli_test
