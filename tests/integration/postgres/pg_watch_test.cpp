// The PostgreSQL LockWatcher beyond the contract suite (tests/contract/watch_test.cpp): which
// statements notify and on which channel, a listening connection the server terminates, a change
// of another table prefix, and the watch's own re-read at an expiry (which notifies nothing).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <ctime>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "leader/leader.hpp"
#include "leader/lock_watching.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

std::string base_uri() {
  const char* v = std::getenv("LEADER_TEST_POSTGRES_URI");
  return v && *v ? v : "postgresql://postgres@127.0.0.1:15432/leader_test";
}
std::string with(const std::string& uri, const std::string& param) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + param;
}
std::string uri() { return with(base_uri(), "prefix=pgit_"); }
std::string unique(const std::string& what) {
  return "pgw-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }
LeaseRequest request(const std::string& lock, Duration ttl, int slots = 0) {
  return {lock, new_owner_token(), "watch-it", ttl, slots};
}

// A plain libpq session LISTENing on one channel: what the store's statements notify.
class RawListener {
 public:
  explicit RawListener(const std::string& channel) : conn_(PQconnectdb(base_uri().c_str())) {
    PGresult* r = PQexec(conn_, ("LISTEN \"" + channel + "\"").c_str());
    ok_ = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
  }
  ~RawListener() { PQfinish(conn_); }
  RawListener(const RawListener&) = delete;
  RawListener& operator=(const RawListener&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }

  // The payloads that arrive within `quiet` of each other (the first wait is `quiet` too).
  std::vector<std::string> payloads(Duration quiet = 300ms) {
    std::vector<std::string> out;
    for (;;) {
      PQconsumeInput(conn_);
      bool any = false;
      while (PGnotify* n = PQnotifies(conn_)) {
        out.emplace_back(n->extra);
        PQfreemem(n);
        any = true;
      }
      if (any) continue;
      pollfd p{PQsocket(conn_), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(quiet.count())) <= 0) return out;
    }
  }

 private:
  PGconn* conn_;
  bool ok_ = false;
};

// Runs SQL directly; returns the first value or "".
std::string sql(const std::string& text) {
  PGconn* c = PQconnectdb(base_uri().c_str());
  std::string out;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, text.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

using Strings = std::vector<std::string>;

TEST(PostgresWatch, ChangesOfTheHoldersNotifyTheirPrefixChannelWithTheLockNameAndNothingElseDoes) {
  RawListener mine("pgit_changed");
  RawListener other("pgwo_changed");
  ASSERT_TRUE(mine.ok() && other.ok());
  auto store = open(uri());
  const auto name = unique("notify");
  auto req = request(name, 30s);
  auto got = store->try_acquire(req, soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(mine.payloads(), Strings{name}) << "a granted acquisition";
  EXPECT_EQ(store->renew(*got.lease, 30s, soon()).status, LeaseStatus::ok);
  EXPECT_TRUE(store->try_acquire(req, soon())) << "the owner's own lease back";
  EXPECT_FALSE(store->try_acquire(request(name, 30s), soon())) << "contention";
  EXPECT_EQ(mine.payloads(), Strings{}) << "a renewal, the own lease again, a refused attempt";
  EXPECT_EQ(store->release(*got.lease, 2s, soon()), LeaseStatus::ok);
  EXPECT_EQ(mine.payloads(), Strings{name}) << "a keep (shorter expiry)";
  got = store->try_acquire(request(name, 30s), soon());
  EXPECT_FALSE(got) << "kept";

  const auto group = unique("notify-group");
  auto a = store->try_acquire(request(group, 30s, 2), soon());
  auto b = store->try_acquire(request(group, 30s, 2), soon());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(mine.payloads(), (Strings{group, group})) << "two slots granted";
  EXPECT_EQ(store->release(*a.lease, Duration{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(store->release(*a.lease, Duration{0}, soon()), LeaseStatus::lost);
  EXPECT_EQ(mine.payloads(), Strings{group}) << "one release; the refused one notifies nothing";
  EXPECT_EQ(store->release(*b.lease, Duration{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(mine.payloads(), Strings{group});
  EXPECT_EQ(other.payloads(10ms), Strings{}) << "another prefix hears nothing of these tables";
}

TEST(PostgresWatch, AChangeUnderAnotherTablePrefixDoesNotEndTheWatch) {
  auto store = open(uri());
  auto foreign = open(with(base_uri(), "prefix=pgwo_"));
  const auto name = unique("prefix");
  LockWatcher* w = lock_watcher(*store);
  ASSERT_NE(w, nullptr);
  auto watched = std::async(std::launch::async, [&] {
    return w->watch(name, LockState{name, {}}, Deadline::after(1500ms), {});
  });
  std::this_thread::sleep_for(300ms);
  const auto start = SteadyClock::now();
  auto got = foreign->try_acquire(request(name, 30s), soon());
  ASSERT_TRUE(got);
  const LockState state = watched.get();
  EXPECT_FALSE(state.held()) << "the same name under pgwo_ is another lock";
  EXPECT_GT(SteadyClock::now() - start, 1000ms) << "returned before its deadline";
  EXPECT_EQ(foreign->release(*got.lease, Duration{0}, soon()), LeaseStatus::ok);
}

TEST(PostgresWatch, AListeningConnectionTheServerTerminatesIsReplacedAndTheNextChangeReported) {
  const std::string app = "pgwatch" + std::to_string(getpid());
  auto watching = open(with(uri(), "application_name=" + app));
  auto changing = open(uri());
  const auto name = unique("terminated");
  LockWatcher* w = lock_watcher(*watching);
  ASSERT_NE(w, nullptr);
  const std::string backends =
      "FROM pg_stat_activity WHERE application_name = '" + app + "' AND pid <> pg_backend_pid()";
  auto watched = std::async(std::launch::async, [&] {
    return w->watch(name, LockState{name, {}}, Deadline::after(20s), {});
  });
  const auto listening = [&] { return sql("SELECT count(*) " + backends) == "1"; };
  for (int i = 0; i < 100 && !listening(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(listening()) << "no listening session of " << app;
  const std::string old_pid = sql("SELECT pid " + backends);
  ASSERT_EQ(sql("SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 5000) " + backends + ") t"),
            "1");
  // The watch notices the lost connection and listens again on a new one.
  const auto relistened = [&] {
    const std::string pid = sql("SELECT pid " + backends);
    return !pid.empty() && pid != old_pid;
  };
  for (int i = 0; i < 250 && !relistened(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(relistened()) << "the watch did not reconnect";
  ASSERT_EQ(watched.wait_for(0s), std::future_status::timeout) << "it returned unchanged";
  std::this_thread::sleep_for(100ms);  // its LISTEN and read are done by now
  const auto changed = SteadyClock::now();
  auto got = changing->try_acquire(request(name, 30s), soon());
  ASSERT_TRUE(got);
  const LockState state = watched.get();
  EXPECT_LT(SteadyClock::now() - changed, 2s) << "reported by a notification, not the deadline";
  ASSERT_TRUE(state.held());
  EXPECT_EQ(state.holders[0].fencing_token, got.lease->fencing_token);
  EXPECT_EQ(changing->release(*got.lease, Duration{0}, soon()), LeaseStatus::ok);
}

// The terminate of the test above can land before the watch's first LISTEN and read are done
// (seen once under a CI load: the watch then ended with the connection's error). Made certain
// here: another session holds the lease table in ACCESS EXCLUSIVE mode, so the new listener
// blocks in its set-up or read, visibly waiting on a lock, and is terminated there.
TEST(PostgresWatch, AListenerTerminatedBeforeItsFirstReadEndedIsReplacedAndTheNextChangeReported) {
  const std::string app = "pgwfirst" + std::to_string(getpid());
  auto watching = open(with(uri(), "application_name=" + app));
  auto changing = open(uri());
  const auto name = unique("first-read");
  ASSERT_TRUE(changing->inspect(name, soon()).holders.empty());  // the tables exist
  PGconn* blocker = PQconnectdb(base_uri().c_str());
  ASSERT_EQ(PQstatus(blocker), CONNECTION_OK);
  const auto exec = [&](const char* text) {
    PGresult* r = PQexec(blocker, text);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
  };
  ASSERT_TRUE(exec("BEGIN"));
  ASSERT_TRUE(exec("LOCK TABLE pgit_leases IN ACCESS EXCLUSIVE MODE"));
  LockWatcher* w = lock_watcher(*watching);
  ASSERT_NE(w, nullptr);
  auto watched = std::async(std::launch::async, [&] {
    return w->watch(name, LockState{name, {}}, Deadline::after(20s), {});
  });
  const std::string backends =
      "FROM pg_stat_activity WHERE application_name = '" + app + "' AND pid <> pg_backend_pid()";
  const auto blocked = [&] {
    return sql("SELECT count(*) " + backends + " AND wait_event_type = 'Lock'") == "1";
  };
  for (int i = 0; i < 500 && !blocked(); ++i) std::this_thread::sleep_for(20ms);
  if (!blocked()) exec("COMMIT");
  ASSERT_TRUE(blocked()) << "the watch's connection never waited on the table";
  const std::string old_pid = sql("SELECT pid " + backends);
  ASSERT_EQ(sql("SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 5000) " + backends + ") t"),
            "1");
  const auto replaced = [&] {
    const std::string pid = sql("SELECT pid " + backends);
    return !pid.empty() && pid != old_pid;
  };
  for (int i = 0; i < 500 && !replaced(); ++i) std::this_thread::sleep_for(20ms);
  const bool was_replaced = replaced();
  ASSERT_TRUE(exec("COMMIT"));
  PQfinish(blocker);
  ASSERT_TRUE(was_replaced) << "no new listening connection after the first was terminated";
  std::this_thread::sleep_for(300ms);  // its set-up, LISTEN and read are done by now
  ASSERT_EQ(watched.wait_for(0s), std::future_status::timeout) << "the watch ended";
  const auto changed = SteadyClock::now();
  auto got = changing->try_acquire(request(name, 30s), soon());
  ASSERT_TRUE(got);
  const LockState state = watched.get();
  EXPECT_LT(SteadyClock::now() - changed, 2s) << "reported by a notification, not the deadline";
  ASSERT_TRUE(state.held());
  EXPECT_EQ(state.holders[0].fencing_token, got.lease->fencing_token);
  EXPECT_EQ(changing->release(*got.lease, Duration{0}, soon()), LeaseStatus::ok);
}

TEST(PostgresWatch, AnExpiryNotifiesNothingButTheWatchReadsAgainJustAfterIt) {
  auto store = open(uri());
  const auto name = unique("expiry");
  auto got = store->try_acquire(request(name, 800ms), soon());
  ASSERT_TRUE(got);
  const LockState held = store->inspect(name, soon());
  ASSERT_TRUE(held.held());
  const auto start = SteadyClock::now();
  const LockState after =
      lock_watcher(*store)->watch(name, held, Deadline::after(20s), std::stop_token{});
  EXPECT_FALSE(after.held());
  EXPECT_LT(SteadyClock::now() - start, 2s) << "the expiry was seen only at the deadline";
}

TEST(PostgresWatch, AKeptReleaseIsReportedWhenTheKeepEnds) {
  auto store = open(uri());
  const auto name = unique("keep");
  auto got = store->try_acquire(request(name, 30s), soon());
  ASSERT_TRUE(got);
  const LockState held = store->inspect(name, soon());
  auto watched = std::async(std::launch::async, [&] {
    return lock_watcher(*store)->watch(name, held, Deadline::after(20s), std::stop_token{});
  });
  std::this_thread::sleep_for(200ms);
  const auto kept = SteadyClock::now();
  EXPECT_EQ(store->release(*got.lease, 500ms, soon()), LeaseStatus::ok);
  const LockState after = watched.get();
  EXPECT_FALSE(after.held());
  EXPECT_GE(SteadyClock::now() - kept, 450ms) << "reported before the keep ended";
  EXPECT_LT(SteadyClock::now() - kept, 2s) << "the keep's end was seen only at the deadline";
}

}  // namespace
}  // namespace leader
