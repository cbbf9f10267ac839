// The per-lock rules every store follows, against the shared dynalite (127.0.0.1:18000): a retry
// by the same owner gets its own lease back; the group size is a property of the lock; a renew
// that shortens a lease is observed by a second client; secrets stay out of every message.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>

#include "dynamodb/observations.hpp"
#include "dynamodb_test_util.hpp"
#include "leader/leader.hpp"

namespace leader::dynamodb {
namespace {

using Ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using test::open_store;
using test::uri_for;

Deadline soon() { return Deadline::after(Ms{5000}); }

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return LeaseRequest{lock, new_owner_token(), "it-node", ttl, slots};
}

std::string unique_lock(const std::string& stem) {
  static int counter = 0;
  return "it-" + stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" +
         std::to_string(Clock::now().time_since_epoch().count() % 1000000);
}

nlohmann::json lease_item(DynamoStore& s, const std::string& lock) {
  auto reply = s.client().call("GetItem",
                               {{"TableName", s.client().config().table},
                                {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
                                {"ConsistentRead", true}},
                               soon());
  return reply.value("Item", nlohmann::json::object());
}

// The failed_precondition message of `r`, or "" (with a test failure) when it did not throw one.
std::string precondition_message(LeaseStore& store, const LeaseRequest& r) {
  try {
    auto got = store.try_acquire(r, soon());
    ADD_FAILURE() << "acquired " << (got ? "a lease" : "nothing (contention)")
                  << " instead of failed_precondition";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    return e.what();
  }
  return "";
}

class DynamoDbLockRules : public ::testing::Test {
 protected:
  std::shared_ptr<DynamoStore> store_ = open_store(uri_for("leader_it"));
  std::shared_ptr<DynamoStore> other_ = open_store(uri_for("leader_it"));
};

TEST_F(DynamoDbLockRules, RetryOfASingleLeaseReturnsItWithItsTokenAndARefreshedExpiry) {
  auto lock = unique_lock("same-single");
  auto r = request(lock, Ms{10000});
  auto first = store_->try_acquire(r, soon());
  ASSERT_TRUE(first);
  const auto rvn = get_s(lease_item(*store_, lock), "v0");
  r.ttl = Ms{2000};
  auto again = store_->try_acquire(r, soon());
  ASSERT_TRUE(again) << "a retry by the owner was taken for contention";
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, 0);
  auto item = lease_item(*store_, lock);
  EXPECT_EQ(get_n(item, "d0"), 2000);  // expiry reset to the retry's ttl ...
  EXPECT_NE(get_s(item, "v0"), rvn);   // ... from now: a new record version
  EXPECT_EQ(get_n(item, "fence"), static_cast<std::int64_t>(first.lease->fencing_token));
  EXPECT_EQ(store_->release(*again.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_F(DynamoDbLockRules, RetryOfAGroupLeaseReturnsTheSameSlotNeverASecondOne) {
  auto lock = unique_lock("same-group");
  auto someone = other_->try_acquire(request(lock, Ms{5000}, 3), soon());
  ASSERT_TRUE(someone);
  auto r = request(lock, Ms{5000}, 3);
  auto first = store_->try_acquire(r, soon());
  ASSERT_TRUE(first);
  ASSERT_EQ(first.lease->slot, 1);
  ASSERT_EQ(other_->release(*someone.lease, Ms{0}, soon()), LeaseStatus::ok);  // slot 0 free
  Observations::shared().clear();  // the retry may come from a process that saw nothing
  auto again = store_->try_acquire(r, soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, 1);
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(store_->inspect(lock, soon()).holders.size(), 1u) << lease_item(*store_, lock).dump();
}

TEST_F(DynamoDbLockRules, ASingleLeaderAndAGroupRefuseEachOtherWhileHeld) {
  auto lock = unique_lock("single-vs-group");
  auto single = store_->try_acquire(request(lock, Ms{5000}), soon());
  ASSERT_TRUE(single);
  auto text = precondition_message(*other_, request(lock, Ms{5000}, 2));
  EXPECT_NE(text.find("'" + lock + "' is held as a single leader"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a group of 2 slots"), std::string::npos) << text;
  ASSERT_EQ(store_->release(*single.lease, Ms{0}, soon()), LeaseStatus::ok);
  ASSERT_TRUE(other_->try_acquire(request(lock, Ms{5000}, 2), soon()));  // free: accepted
  text = precondition_message(*store_, request(lock, Ms{5000}));
  EXPECT_NE(text.find("is held as a group of 2 slots"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a single leader"), std::string::npos) << text;
  (void)precondition_message(*store_, request(lock, Ms{5000}, 1));  // a group of 1 is not single
}

TEST_F(DynamoDbLockRules, GroupsOfTwoAndThreeRefuseEachOtherSoNeverThreeHolders) {
  auto lock = unique_lock("two-vs-three");
  ASSERT_TRUE(store_->try_acquire(request(lock, Ms{5000}, 2), soon()));
  ASSERT_TRUE(store_->try_acquire(request(lock, Ms{5000}, 2), soon()));
  auto text = precondition_message(*other_, request(lock, Ms{5000}, 3));
  EXPECT_NE(text.find("held as a group of 2 slots"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a group of 3 slots"), std::string::npos) << text;
  EXPECT_EQ(other_->inspect(lock, soon()).holders.size(), 2u);
}

TEST_F(DynamoDbLockRules, ANewSizeIsAcceptedOnceTheOldHoldersExpiredAndTheyCannotComeBack) {
  auto lock = unique_lock("size-change");
  std::vector<Lease> old;
  for (int i = 0; i < 3; ++i) {
    auto got = store_->try_acquire(request(lock, Ms{400}, 3), soon());
    ASSERT_TRUE(got);
    old.push_back(*got.lease);
  }
  (void)precondition_message(*other_, request(lock, Ms{5000}, 2));  // live as far as it knows
  Acquired got;
  const auto until = Clock::now() + Ms{6000};
  while (!got && Clock::now() < until) {
    try {
      got = other_->try_acquire(request(lock, Ms{5000}, 2), soon());
    } catch (const BackendError& e) {
      ASSERT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    }
    std::this_thread::sleep_for(Ms{50});
  }
  ASSERT_TRUE(got) << "the new size was never accepted";
  EXPECT_TRUE(other_->try_acquire(request(lock, Ms{5000}, 2), soon()));
  EXPECT_FALSE(other_->try_acquire(request(lock, Ms{5000}, 2), soon()));  // the new size rules
  for (Lease& l : old) EXPECT_EQ(store_->renew(l, Ms{5000}, soon()).status, LeaseStatus::lost);
  EXPECT_EQ(other_->inspect(lock, soon()).holders.size(), 2u) << lease_item(*store_, lock).dump();
}

// A shortened renew: the second client takes over no earlier than the renew's send time + the
// new ttl, by its own clock (it keeps polling) and by the server's clock (a fresh process).
void expect_takeover_after_shortening(DynamoStore& holder, DynamoStore& contender,
                                      bool fresh_process, Ms bound) {
  auto lock = unique_lock(fresh_process ? "shorten-fresh" : "shorten");
  auto got = holder.try_acquire(request(lock, Ms{10000}), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  EXPECT_FALSE(contender.try_acquire(request(lock, Ms{10000}), soon()));  // seen with 10 s
  const auto sent = Clock::now();
  ASSERT_EQ(holder.renew(lease, Ms{300}, soon()).status, LeaseStatus::ok);
  Acquired taken;
  while (!taken && Clock::now() - sent < bound) {
    if (fresh_process) Observations::shared().clear();
    taken = contender.try_acquire(request(lock, Ms{10000}), soon());
    if (!taken) std::this_thread::sleep_for(Ms{20});
  }
  const auto took = Clock::now() - sent;
  ASSERT_TRUE(taken) << "the shortened lease was not taken over within " << bound.count() << "ms";
  EXPECT_GE(took, Ms{300});
  EXPECT_EQ(holder.renew(lease, Ms{300}, soon()).status, LeaseStatus::lost);
}

TEST_F(DynamoDbLockRules, AShortenedLeaseIsTakenOverAfterTheNewTtlByAPollingClient) {
  expect_takeover_after_shortening(*store_, *other_, false, Ms{2000});
}

TEST_F(DynamoDbLockRules, AShortenedLeaseIsTakenOverAfterTheNewTtlByTheServerClock) {
  expect_takeover_after_shortening(*store_, *other_, true, Ms{5000});
}

TEST_F(DynamoDbLockRules, ALengthenedLeaseIsNotTakenOverBeforeTheNewTtl) {
  auto lock = unique_lock("lengthen");
  auto got = store_->try_acquire(request(lock, Ms{300}), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  EXPECT_FALSE(other_->try_acquire(request(lock, Ms{300}), soon()));  // seen with 300 ms
  const auto sent = Clock::now();
  ASSERT_EQ(store_->renew(lease, Ms{1500}, soon()).status, LeaseStatus::ok);
  Acquired taken;
  while (!taken && Clock::now() - sent < Ms{4000}) {
    taken = other_->try_acquire(request(lock, Ms{300}), soon());
    if (!taken) std::this_thread::sleep_for(Ms{20});
  }
  ASSERT_TRUE(taken);
  EXPECT_GE(Clock::now() - sent, Ms{1500});
}

TEST(DynamoDbSecrets, ServerMessagesNeverCarryTheSecretKeyOrTheSessionToken) {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
  ::setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLESESSIONTOKEN", 1);
  Client client(Config::from_uri(Uri::parse("dynamodb://127.0.0.1:1?tls=false")));
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_SESSION_TOKEN");
  Response r;
  r.http_status = 400;
  r.error_type = "InvalidSignatureException";
  r.message =
      "The request signature we calculated does not match. The Canonical String for this request "
      "should have been 'x-amz-security-token:FwoGZXIvYXdzEXAMPLESESSIONTOKEN' signed with "
      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  try {
    client.fail(r, "GetItem");
  } catch (const BackendError& e) {
    const std::string text = e.what();
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_EQ(text.find("FwoGZXIvYXdzEXAMPLESESSIONTOKEN"), std::string::npos) << text;
    EXPECT_EQ(text.find("wJalrXUtnFEMI"), std::string::npos) << text;
    EXPECT_NE(text.find("InvalidSignatureException"), std::string::npos) << text;
  }
}

TEST(DynamoDbSecrets, ConfigErrorsNeverCarryTheSecret) {
  const std::vector<std::string> bad = {
      "dynamodb://AKID:s3cr3tKey@127.0.0.1:1?tls=false&table=x",
      "dynamodb://AKID:s3cr3tKey@127.0.0.1:1?tls=false&region=bad_region",
      "dynamodb://AKID:s3cr3tKey@127.0.0.1:1/path?tls=false",
      "dynamodb://AKID:s3cr3tKey@127.0.0.1:1?tls=false&unknown=1",
      "dynamodb://?endpoint=http://AKID:s3cr3tKey@127.0.0.1:1",
      "dynamodb://?endpoint=http%3A%2F%2FAKID%3As3cr3tKey%40127.0.0.1%3A1&table=x",
      "dynamodb://AKID:s3cr3tKey@127.0.0.1:1?tls=false&open_timeout=0s",
  };
  for (const auto& uri : bad) {
    try {
      (void)leader::open(uri);
      ADD_FAILURE() << "opened " << uri;
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cr3tKey"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace leader::dynamodb
