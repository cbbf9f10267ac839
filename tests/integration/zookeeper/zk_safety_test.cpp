// Safety cases of issue 10 against the real test server (minSessionTimeout=1000,
// maxSessionTimeout=30000): the granted ttl is the negotiated session timeout, also while
// disconnected, and a second client only gets in after it; an owner's repeated acquisition
// returns its own lease (decision 1); a lock keeps one group size while held (decision 2).

#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "leader/leader.hpp"
#include "zk_raw.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

const std::string kRoot = "/leader-safety";
constexpr Ms kServerMax{30000};  // maxSessionTimeout of scripts/test-servers.sh

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), "safety-node", ttl, slots};
}

// The ttl_ms that other processes read from the lease's node.
std::int64_t recorded_ttl_ms(const std::string& lock, const std::string& owner) {
  RawClient raw;
  const std::string dir = kRoot + "/" + lock;
  for (const auto& child : raw.children(dir))
    if (child.starts_with(owner) || child.starts_with("slot-"))
      if (auto data = raw.data(dir + "/" + child)) {
        auto json = nlohmann::json::parse(*data, nullptr, false);
        if (json.is_object() && json.value("owner", "") == owner) return json.value("ttl_ms", 0);
      }
  return -1;
}

TEST(ZooKeeperGrantedTtl, AskingMoreThanTheServerMaximumGrantsTheNegotiatedTimeout) {
  for (const std::string option : {"session_timeout=60s", "session_timeout=auto"}) {
    SCOPED_TRACE(option);
    auto s = open(uri(option + "&root=" + kRoot));
    auto name = unique("cap");
    auto req = request(name, Ms{60000});
    auto got = s->try_acquire(req, soon());
    ASSERT_TRUE(got);
    EXPECT_EQ(got.lease->ttl, kServerMax);
    EXPECT_EQ(recorded_ttl_ms(name, req.owner), kServerMax.count());
    Lease lease = *got.lease;
    const Renewal renewal = s->renew(lease, Ms{60000}, soon());
    ASSERT_EQ(renewal.status, LeaseStatus::ok);
    EXPECT_EQ(renewal.ttl, kServerMax);
    EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  }
}

// zoo_recv_timeout() returns the *requested* timeout while the session is not connected; the
// store must keep reporting what the server negotiated.
TEST(ZooKeeperGrantedTtl, WhileDisconnectedTheGrantedTtlIsStillTheNegotiatedOne) {
  auto s = open(uri("session_timeout=60s&root=" + kRoot));
  auto name = unique("disconnected");
  auto req = request(name, Ms{60000});
  std::optional<Acquired> got;
  {
    ServerPause pause;
    // The client gives the connection up after 2/3 of the negotiated 30 s without a reply;
    // from then on calls fail with `unavailable` (not connected) instead of timing out.
    const bool disconnected = eventually(
        [&] {
          try {
            (void)s->inspect(name, Deadline::after(Ms{300}));
          } catch (const BackendError& e) {
            return e.code() == ErrorCode::unavailable;
          }
          return false;
        },
        Ms{26000});
    EXPECT_TRUE(disconnected);
    std::thread acquire([&] { got = s->try_acquire(req, Deadline::after(Ms{15000})); });
    std::this_thread::sleep_for(Ms{300});  // the acquire waits for the connection
    pause.resume();
    acquire.join();
  }
  ASSERT_TRUE(got.has_value() && got->lease.has_value());
  EXPECT_EQ(got->lease->ttl, kServerMax);
  EXPECT_EQ(recorded_ttl_ms(name, req.owner), kServerMax.count());
  EXPECT_EQ(s->release(*got->lease, Ms{0}, soon()), LeaseStatus::ok);
}

using Clock = std::chrono::steady_clock;

// The nodes of `lock` whose data names `owner`.
int nodes_of(const std::string& lock, const std::string& owner) {
  RawClient raw;
  const std::string dir = kRoot + "/" + lock;
  int n = 0;
  for (const auto& child : raw.children(dir))
    if (auto data = raw.data(dir + "/" + child))
      n += nlohmann::json::parse(*data, nullptr, false).value("owner", "") == owner ? 1 : 0;
  return n;
}

TEST(ZooKeeperSameOwner, ARetryAfterALostReplyEndsWithOneNodeOfThatOwner) {
  for (int slots : {0, 2}) {
    SCOPED_TRACE("slots " + std::to_string(slots));
    auto s = open(uri("session_timeout=4s&root=" + kRoot));
    auto name = unique("lost-reply");
    auto req = request(name, Ms{4000}, slots);
    ASSERT_TRUE(s->try_acquire(request(unique("warm"), Ms{4000}, slots), soon()));
    {
      ServerPause pause;
      EXPECT_THROW((void)s->try_acquire(req, Deadline::after(Ms{300})), BackendError);
    }  // the queued create now runs on the server
    auto got = s->try_acquire(req, soon());
    ASSERT_TRUE(got) << "the retry contends with its own node";
    std::this_thread::sleep_for(Ms{1500});  // orphan sweeps run meanwhile
    EXPECT_EQ(nodes_of(name, req.owner), 1);
    auto state = s->inspect(name, soon());
    ASSERT_EQ(state.holders.size(), 1u);
    EXPECT_EQ(state.holders[0].fencing_token, got.lease->fencing_token);
    EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  }
}

TEST(ZooKeeperGroupSize, ConcurrentRequestsOfDifferentShapesNeverShareTheLock) {
  auto name = unique("shape-race");
  std::vector<std::shared_ptr<LeaseStore>> stores;
  for (int i = 0; i < 6; ++i) stores.push_back(open(uri("session_timeout=4s&root=" + kRoot)));
  for (int round = 0; round < 5; ++round) {
    std::vector<std::optional<Lease>> held(6);
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i)
      threads.emplace_back([&, i] {
        try {
          auto got = stores[i]->try_acquire(request(name, Ms{4000}, i % 3 == 2 ? 0 : 2 + i % 3),
                                            Deadline::after(Ms{5000}));
          if (got) held[i] = *got.lease;
        } catch (const BackendError&) {  // refused: another shape holds it
        }
      });
    for (auto& t : threads) t.join();
    std::set<int> shapes;
    int holders = 0;
    for (const auto& l : held)
      if (l) {
        shapes.insert(l->slots);
        ++holders;
      }
    ASSERT_LE(shapes.size(), 1u) << "round " << round;
    if (!shapes.empty()) {
      EXPECT_LE(holders, std::max(1, *shapes.begin()));
    }
    for (int i = 0; i < 6; ++i)
      if (held[i]) {
        EXPECT_EQ(stores[i]->release(*held[i], Ms{0}, soon()), LeaseStatus::ok);
      }
  }
}

// The server is the judge: a holder renews asking more than its session can give, then its
// process is stopped; no other client gets in before the renew's send time + the ttl it reported.
TEST(ZooKeeperGrantedTtl, ASecondClientTakesOverOnlyAfterTheReportedTtl) {
  struct Case {
    std::string option;
    Ms asked;
  };
  for (const Case& c :
       {Case{"session_timeout=3s", Ms{10000}}, Case{"session_timeout=auto", Ms{60000}}}) {
    SCOPED_TRACE(c.option + " asked " + std::to_string(c.asked.count()));
    auto name = unique("judged");
    const std::string u = uri(c.option + "&root=" + kRoot);
    Proc holder({LEADER_ZK_LEASE_HOLDER, u, name, std::to_string(c.asked.count()),
                 std::to_string(c.asked.count())});
    const std::string line = holder.read_line();
    ASSERT_EQ(line.rfind("HELD ", 0), 0u) << line;
    holder.signal(SIGSTOP);  // from now on only the server decides
    std::istringstream in(line.substr(5));
    std::uint64_t token = 0;
    std::int64_t sent_ns = 0, granted_ms = 0;
    in >> token >> sent_ns >> granted_ms;
    const Clock::time_point sent{std::chrono::nanoseconds(sent_ns)};
    EXPECT_LT(Ms{granted_ms}, c.asked);
    auto observer = open(uri("session_timeout=3s&root=" + kRoot));
    std::optional<Clock::time_point> taken;
    const auto end = sent + Ms{granted_ms} + Ms{8000};
    while (!taken && Clock::now() < end) {
      if (auto got = observer->try_acquire(request(name, Ms{3000}), soon())) {
        taken = Clock::now();
        EXPECT_GT(got.lease->fencing_token, token);
        EXPECT_EQ(observer->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
      } else {
        std::this_thread::sleep_for(Ms{50});
      }
    }
    holder.signal(SIGCONT);
    ASSERT_TRUE(taken) << "the server never let another owner in";
    std::cout << "judge: " << c.option << " asked " << c.asked.count() << " ms, granted "
              << granted_ms << " ms, another owner got in "
              << std::chrono::duration_cast<Ms>(*taken - sent).count()
              << " ms after the renew was sent\n";
    EXPECT_GE(*taken - sent, Ms{granted_ms}) << "taken over before the reported ttl";
    EXPECT_LE(*taken - sent, Ms{granted_ms} + Ms{3000}) << "the reported ttl is far too short";
  }
}

}  // namespace
}  // namespace leader::zktest
