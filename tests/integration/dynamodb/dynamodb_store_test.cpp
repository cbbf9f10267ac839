// DynamoDB store cases beyond the contract, against the shared dynalite (127.0.0.1:18000): table
// creation, the item layout, the per-lock fence, the record-version takeover rule, errors.

#include <gtest/gtest.h>

#include <thread>

#include "dynamodb/observations.hpp"
#include "dynamodb_test_util.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/leader.hpp"

namespace leader::dynamodb {
namespace {

using Ms = std::chrono::milliseconds;
using test::open_store;
using test::unique_table;
using test::uri_for;

Deadline soon() { return Deadline::after(Ms{5000}); }

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return LeaseRequest{lock, new_owner_token(), "it-node", ttl, slots};
}

nlohmann::json lease_item(DynamoStore& s, const std::string& lock) {
  auto reply = s.client().call("GetItem",
                               {{"TableName", s.client().config().table},
                                {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
                                {"ConsistentRead", true}},
                               soon());
  return reply.value("Item", nlohmann::json::object());
}

void drop_table(DynamoStore& s) {
  (void)s.client().post("DeleteTable", {{"TableName", s.client().config().table}}, soon());
}

TEST(DynamoDbStore, OpenCreatesTheTableWithItsKeySchemaOnDemandBilling) {
  auto s = open_store(uri_for(unique_table("create")));
  auto d = s->client().call("DescribeTable", {{"TableName", s->client().config().table}}, soon());
  EXPECT_EQ(d["Table"]["TableStatus"], "ACTIVE");
  EXPECT_EQ(d["Table"]["KeySchema"],
            (nlohmann::json{{{"AttributeName", "pk"}, {"KeyType", "HASH"}},
                            {{"AttributeName", "sk"}, {"KeyType", "RANGE"}}}));
  EXPECT_EQ(d["Table"]["BillingModeSummary"]["BillingMode"], "PAY_PER_REQUEST");
  auto again = open_store(uri_for(s->client().config().table));  // an existing table is kept
  EXPECT_TRUE(again->try_acquire(request("t", Ms{5000}), soon()));
  drop_table(*s);
}

TEST(DynamoDbStore, AMissingTableWithoutCreateTableIsAFailedPreconditionNamingIt) {
  const std::string table = unique_table("missing");
  try {
    (void)open_store(uri_for(table, "&create_table=false"));
    ADD_FAILURE() << "opened a missing table";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_NE(std::string(e.what()).find(table), std::string::npos) << e.what();
  }
}

TEST(DynamoDbStore, ATableWithAnotherKeySchemaIsRefused) {
  auto s = open_store(uri_for(unique_table("probe")));
  const std::string other = unique_table("otherkeys");
  s->client().call("CreateTable",
                   {{"TableName", other},
                    {"AttributeDefinitions", {{{"AttributeName", "id"}, {"AttributeType", "S"}}}},
                    {"KeySchema", {{{"AttributeName", "id"}, {"KeyType", "HASH"}}}},
                    {"BillingMode", "PAY_PER_REQUEST"}},
                   soon());
  try {
    (void)open_store(uri_for(other));
    ADD_FAILURE() << "opened a table with another key schema";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_NE(std::string(e.what()).find("key schema"), std::string::npos) << e.what();
  }
  (void)s->client().post("DeleteTable", {{"TableName", other}}, soon());
  drop_table(*s);
}

TEST(DynamoDbStore, OneItemPerLockKeepsItsFenceWhenTheLeaseIsReleased) {
  auto s = open_store(uri_for("leader_it"));
  const std::string lock = "it-fence-" + std::to_string(getpid());
  auto first = s->try_acquire(request(lock, Ms{5000}), soon());
  ASSERT_TRUE(first);
  auto item = lease_item(*s, lock);
  EXPECT_EQ(get_s(item, "o0"), first.lease->owner);
  EXPECT_EQ(get_s(item, "h0"), "it-node");
  EXPECT_EQ(get_n(item, "d0"), 5000);
  EXPECT_EQ(get_n(item, "t0"), static_cast<std::int64_t>(first.lease->fencing_token));
  EXPECT_EQ(get_n(item, "fence"), static_cast<std::int64_t>(first.lease->fencing_token));
  EXPECT_EQ(s->release(*first.lease, Ms{0}, soon()), LeaseStatus::ok);
  item = lease_item(*s, lock);
  EXPECT_FALSE(item.contains("o0"));
  EXPECT_FALSE(item.contains("v0"));
  EXPECT_EQ(get_n(item, "fence"), static_cast<std::int64_t>(first.lease->fencing_token));
  auto second = s->try_acquire(request(lock, Ms{5000}), soon());
  ASSERT_TRUE(second);
  EXPECT_EQ(second.lease->fencing_token, first.lease->fencing_token + 1);
  EXPECT_EQ(s->release(*second.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbStore, GroupSlotsLiveInOneItemAndShareOneIncreasingCounter) {
  auto s = open_store(uri_for("leader_it"));
  const std::string lock = "it-group-" + std::to_string(getpid());
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) {
    auto got = open_store(uri_for("leader_it"))->try_acquire(request(lock, Ms{5000}, 3), soon());
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got.lease->slot, i);
    if (!held.empty()) {
      EXPECT_GT(got.lease->fencing_token, held.back().fencing_token);
    }
    held.push_back(*got.lease);
  }
  EXPECT_FALSE(s->try_acquire(request(lock, Ms{5000}, 3), soon()));
  auto state = s->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(state.holders[i].fencing_token, held[i].fencing_token);
  EXPECT_EQ(get_n(lease_item(*s, lock), "fence"),
            static_cast<std::int64_t>(held.back().fencing_token));
  for (const auto& l : held) EXPECT_EQ(s->release(l, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbStore, TakeoverNeedsTheRecordVersionUnchangedForTheWholeLeaseDuration) {
  const std::string lock = "it-rvn-" + std::to_string(getpid());
  auto holder_store = open_store(uri_for("leader_it"));
  auto contender = open_store(uri_for("leader_it"));
  const Ms ttl{600};
  auto held = holder_store->try_acquire(request(lock, ttl), soon());
  ASSERT_TRUE(held);
  Lease lease = *held.lease;
  // Renewing every ttl/3 keeps changing the record version: never taken over.
  auto until = std::chrono::steady_clock::now() + ttl * 3;
  auto last_renewal = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_FALSE(contender->try_acquire(request(lock, ttl), soon()));
    if (std::chrono::steady_clock::now() - last_renewal >= ttl / 3) {
      last_renewal = std::chrono::steady_clock::now();
      ASSERT_EQ(holder_store->renew(lease, ttl, soon()).status, LeaseStatus::ok);
    }
    std::this_thread::sleep_for(Ms{20});
  }
  // Renewals stop: the contender wins, but never before ttl after the last renewal was sent.
  std::optional<Lease> taken;
  while (!taken) {
    if (auto got = contender->try_acquire(request(lock, ttl), soon())) taken = *got.lease;
    std::this_thread::sleep_for(Ms{20});
    ASSERT_LT(std::chrono::steady_clock::now() - last_renewal, ttl * 4);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - last_renewal, ttl);
  EXPECT_GT(taken->fencing_token, lease.fencing_token);
  EXPECT_EQ(holder_store->renew(lease, ttl, soon()).status, LeaseStatus::lost);
  EXPECT_EQ(contender->release(*taken, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbStore, ExpiredCandidatesAreDeletedByAListAndRegisterAfresh) {
  auto s = open_store(uri_for("leader_it"));
  const std::string group = "it-cand-" + std::to_string(getpid());
  const auto table = s->client().config().table;
  auto count_items = [&] {
    auto r =
        s->client().call("Query",
                         {{"TableName", table},
                          {"KeyConditionExpression", "pk = :pk"},
                          {"ExpressionAttributeValues", {{":pk", s_value(candidates_pk(group))}}},
                          {"ConsistentRead", true}},
                         soon());
    return r["Items"].size();
  };
  s->put_candidate(group, Candidate{"brief", {}, 1, 0, {}, {{"k", "v"}}}, Ms{200}, soon());
  auto first = s->list_candidates(group, soon());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].metadata.at("k"), "v");
  std::this_thread::sleep_for(Ms{300});
  EXPECT_TRUE(s->list_candidates(group, soon()).empty());
  EXPECT_EQ(count_items(), 0u);  // the list deleted the expired entry
  s->put_candidate(group, Candidate{"brief", {}, 2, 0, {}, {}}, Ms{5000}, soon());
  auto again = s->list_candidates(group, soon());
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].successes, 2u);
  EXPECT_GT(again[0].registered_at, first[0].registered_at);  // registered afresh
  s->remove_candidate(group, "brief", soon());
  EXPECT_EQ(count_items(), 0u);
}

TEST(DynamoDbStore, AFreshProcessTakesOverByTheServerClockStampAContenderLeft) {
  const std::string lock = "it-stamp-" + std::to_string(getpid());
  auto holder = open_store(uri_for("leader_it"));
  auto contender = open_store(uri_for("leader_it"));
  const Ms ttl{1000};
  auto held = holder->try_acquire(request(lock, ttl), soon());
  ASSERT_TRUE(held);
  const auto sent = std::chrono::steady_clock::now();
  // A contended attempt stamps the record version with the server's time (HTTP Date, + 1 s).
  EXPECT_FALSE(contender->try_acquire(request(lock, ttl), soon()));
  auto item = lease_item(*contender, lock);
  EXPECT_EQ(get_s(item, "sv0"), get_s(item, "v0"));
  ASSERT_TRUE(get_n(item, "s0").has_value());
  // Every later attempt behaves as a freshly started process (no local observations): only the
  // server-side stamp can let it in, never before ttl after the holder's acquire.
  std::optional<Lease> taken;
  while (!taken) {
    Observations::shared().clear();
    if (auto got = contender->try_acquire(request(lock, ttl), soon())) taken = *got.lease;
    ASSERT_LT(std::chrono::steady_clock::now() - sent, ttl + Ms{4000});
    std::this_thread::sleep_for(Ms{50});
  }
  EXPECT_GE(std::chrono::steady_clock::now() - sent, ttl);
  item = lease_item(*contender, lock);
  EXPECT_FALSE(item.contains("sv0")) << item.dump();  // a grant clears the stamp
  EXPECT_EQ(holder->renew(*held.lease, ttl, soon()).status, LeaseStatus::lost);
  EXPECT_EQ(contender->release(*taken, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbStore, ARenewalClearsTheStampSoTheServerJudgeStartsOver) {
  const std::string lock = "it-restamp-" + std::to_string(getpid());
  auto holder = open_store(uri_for("leader_it"));
  auto contender = open_store(uri_for("leader_it"));
  auto held = holder->try_acquire(request(lock, Ms{1000}), soon());
  ASSERT_TRUE(held);
  Lease lease = *held.lease;
  EXPECT_FALSE(contender->try_acquire(request(lock, Ms{1000}), soon()));
  EXPECT_TRUE(lease_item(*holder, lock).contains("sv0"));
  ASSERT_EQ(holder->renew(lease, Ms{1000}, soon()).status, LeaseStatus::ok);
  EXPECT_FALSE(lease_item(*holder, lock).contains("sv0"));
  EXPECT_EQ(holder->release(lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbStore, HttpDatesParseToEpochMilliseconds) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777000);
  EXPECT_EQ(parse_http_date("Sun, 30 Aug 2015 12:36:00 GMT"), 1440938160000);
  EXPECT_FALSE(parse_http_date("yesterday").has_value());
  EXPECT_FALSE(parse_http_date("").has_value());
}

TEST(DynamoDbStore, AnUnreachableEndpointIsUnavailableAndTheSecretStaysOutOfTheError) {
  try {
    (void)open("dynamodb://AKID:topsecret123@127.0.0.1:1?tls=false&open_timeout=2s");
    ADD_FAILURE() << "opened an unreachable endpoint";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
    EXPECT_EQ(std::string(e.what()).find("topsecret123"), std::string::npos) << e.what();
    EXPECT_EQ(e.store(), "dynamodb");
  }
}

TEST(DynamoDbStore, LockNamesAndSlotCountsAreValidatedByTheCheckedStore) {
  auto s = leader::detail::checked(open_store(uri_for("leader_it")));
  EXPECT_THROW((void)s->try_acquire(request("bad name", Ms{1000}), soon()), InvalidArgument);
  EXPECT_THROW((void)s->try_acquire(request("ok", Ms{1000}, kMaxSlots + 1), soon()),
               InvalidArgument);
  EXPECT_THROW((void)s->inspect("", soon()), InvalidArgument);
}

}  // namespace
}  // namespace leader::dynamodb
