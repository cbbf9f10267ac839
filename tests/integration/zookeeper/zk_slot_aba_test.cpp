// A group slot is one fixed path (`slot-<i>`), so a holder whose session expired while it was
// stopped must never delete the node that now sits at that path: the next holder's (issue 10, the
// fault suite's "slot granted twice"). The holder process is SIGSTOPped until its session expires,
// a second client takes the slot, the holder is resumed and releases (or its timer fires); a raw
// reader then checks that the slot node is still the second client's (czxid and session).

#include <gtest/gtest.h>
#include <signal.h>

#include <sstream>
#include <thread>

#include "leader/leader.hpp"
#include "zk_raw.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

const std::string kRoot = "/leader-slot-aba";

// Runs one case: `option` is the holder's URI query, `ttl_ms` its lease, `mode` "" (the store's
// timer deletes the node at the ttl) or "release-on-eof".
void expect_successor_survives(const std::string& option, const std::string& ttl_ms,
                               const std::string& mode) {
  const std::string name = unique("slot");
  const std::string node = kRoot + "/" + name + "/slot-0";
  std::vector<std::string> argv{
      LEADER_ZK_LEASE_HOLDER, uri(option + "&root=" + kRoot), name, ttl_ms, ttl_ms, "1"};
  if (!mode.empty()) argv.push_back(mode);
  Proc holder(argv);
  const std::string line = holder.read_line();
  ASSERT_EQ(line.rfind("HELD ", 0), 0u) << line;
  holder.signal(SIGSTOP);  // its session expires on the server while it is stopped
  std::uint64_t old_token = 0;
  std::istringstream(line.substr(5)) >> old_token;

  auto taker = open(uri("session_timeout=auto&root=" + kRoot));
  const LeaseRequest next{name, new_owner_token(), "aba-taker", Ms{20000}, 1};
  std::optional<Lease> taken;
  const auto end = std::chrono::steady_clock::now() + Ms{15000};
  while (!taken && std::chrono::steady_clock::now() < end) {
    if (auto got = taker->try_acquire(next, soon()))
      taken = *got.lease;
    else
      std::this_thread::sleep_for(Ms{50});
  }
  ASSERT_TRUE(taken) << "the stopped holder's session never expired";
  ASSERT_GT(taken->fencing_token, old_token);
  ASSERT_EQ(taken->slot, 0);

  holder.signal(SIGCONT);  // it now releases, or its timer finds the ttl passed
  if (mode == "release-on-eof") {
    std::this_thread::sleep_for(Ms{20});
    holder.close_stdin();
    const std::string released = holder.read_line();
    EXPECT_EQ(released, "RELEASED lost") << "the old lease's node went with its session";
  }
  std::this_thread::sleep_for(Ms{3000});

  RawClient raw;
  const auto st = raw.stat(node);
  ASSERT_TRUE(st.has_value()) << "the resumed holder deleted its successor's slot node";
  EXPECT_EQ(static_cast<std::uint64_t>(st->czxid), taken->fencing_token);
  EXPECT_NE(st->ephemeralOwner, 0);
  EXPECT_EQ(taker->renew(*taken, Ms{20000}, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(taker->release(*taken, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ZooKeeperSlotAba, AResumedHolderWhoseTimerFiresLeavesTheNextHolderItsSlot) {
  expect_successor_survives("session_timeout=auto", "2000", "");
}

TEST(ZooKeeperSlotAba, AResumedHolderThatReleasesLeavesTheNextHolderItsSlot) {
  // A local ttl far longer than the session: the release comes before the timer would fire.
  expect_successor_survives("session_timeout=2s", "20000", "release-on-eof");
}

}  // namespace
}  // namespace leader::zktest
