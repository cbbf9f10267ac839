// Safety cases of issue 10 against the real test server (minSessionTimeout=1000,
// maxSessionTimeout=30000): the granted ttl is the negotiated session timeout, also while
// disconnected.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "leader/leader.hpp"
#include "zk_raw.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

const std::string kRoot = "/leader-safety";
constexpr Ms kServerMax{30000};  // maxSessionTimeout of scripts/test-servers.sh

std::string unique(const std::string& what) {
  static int n = 0;
  return "zs-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), "safety-node", ttl, slots};
}

Deadline soon() { return Deadline::after(Ms{5000}); }

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
    ASSERT_EQ(s->renew(lease, Ms{60000}, soon()), LeaseStatus::ok);
    EXPECT_EQ(lease.ttl, kServerMax);
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

}  // namespace
}  // namespace leader::zktest
