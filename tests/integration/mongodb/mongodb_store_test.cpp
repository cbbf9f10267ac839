// The MongoDB store against the mongomock stand-in (tests/doubles/mongodb): write concern sent,
// duplicate-key races, unknown outcomes (a reply lost after the write was applied), error
// mapping, and the document layout. Faults are armed through the stand-in's test hook shimFault.

#include "mongodb/mongodb_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"

namespace leader::mongodb {
namespace {

using Ms = std::chrono::milliseconds;

std::string base_uri() {
  const char* env = std::getenv("LEADER_TEST_MONGODB_URI");
  return env != nullptr ? env : "mongodb://127.0.0.1:17017/leader_it";
}

std::shared_ptr<MongoStore> open_store(const std::string& query = "") {
  std::string uri = base_uri();
  if (!query.empty()) uri += (uri.find('?') == std::string::npos ? "?" : "&") + query;
  return std::make_shared<MongoStore>(Config::from_uri(Uri::parse(uri)));
}

std::string fresh_lock(const char* what) {
  static std::atomic<int> n{0};
  return std::string("it-") + what + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
         std::to_string(n++);
}

Deadline soon() { return Deadline::after(Ms{5000}); }

LeaseRequest request(const std::string& lock, int slots = 0, Ms ttl = Ms{10000}) {
  return {lock, new_owner_token(), "it-node", ttl, slots};
}

// Sends `cmd` (owned) to the stand-in and returns its reply.
DocPtr command(MongoStore& s, bson_t* cmd) {
  DocPtr reply = s.connection().read("test command", cmd, soon());
  bson_destroy(cmd);
  return reply;
}

void arm(MongoStore& s, const char* action, const char* on, int code = 0, int ms = 0) {
  (void)command(s,
                BCON_NEW("shimFault", BCON_INT32(1), "action", BCON_UTF8(action), "commands", "[",
                         BCON_UTF8(on), "]", "code", BCON_INT32(code), "ms", BCON_INT32(ms)));
}

std::string utf8_at(const bson_t* doc, const char* path) {
  bson_iter_t it, found;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &found) ||
      !BSON_ITER_HOLDS_UTF8(&found))
    return "";
  return bson_iter_utf8(&found, nullptr);
}

ErrorCode code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const BackendError& e) {
    return e.code();
  }
  ADD_FAILURE() << "no BackendError";
  return ErrorCode::internal;
}

class MongoStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = open_store();
    (void)command(*store_, BCON_NEW("shimFault", BCON_INT32(1), "action", BCON_UTF8("clear")));
  }
  void TearDown() override {
    (void)command(*store_, BCON_NEW("shimFault", BCON_INT32(1), "action", BCON_UTF8("clear")));
  }
  std::shared_ptr<MongoStore> store_;
};

TEST_F(MongoStoreTest, WritesCarryMajorityWriteConcernByDefault) {
  ASSERT_TRUE(store_->try_acquire(request(fresh_lock("wc")), soon()));
  DocPtr r = command(*store_, BCON_NEW("shimLastWriteConcern", BCON_INT32(1)));
  EXPECT_EQ(utf8_at(&r->b, "writeConcern.findAndModify.w"), "majority");
  EXPECT_GT(get_int(&r->b, "writeConcern.findAndModify.wtimeout").value_or(0), 0);
}

TEST_F(MongoStoreTest, TheWOptionAndWtimeoutAreSentAsConfigured) {
  auto s = open_store("w=1&wtimeout=2s&journal=true");
  auto got = s->try_acquire(request(fresh_lock("w1")), soon());
  ASSERT_TRUE(got);
  ASSERT_EQ(s->renew(*got.lease, Ms{5000}, soon()).status, LeaseStatus::ok);
  DocPtr r = command(*s, BCON_NEW("shimLastWriteConcern", BCON_INT32(1)));
  EXPECT_EQ(get_int(&r->b, "writeConcern.findAndModify.w"), 1);
  EXPECT_EQ(get_int(&r->b, "writeConcern.update.w"), 1);
  EXPECT_EQ(get_int(&r->b, "writeConcern.update.wtimeout"), 2000);
}

TEST_F(MongoStoreTest, RacingFirstAcquirersOfANewLockGetExactlyOneLease) {
  for (int round = 0; round < 3; ++round) {
    const std::string lock = fresh_lock("race");
    std::vector<std::shared_ptr<MongoStore>> stores;
    for (int i = 0; i < 8; ++i) stores.push_back(open_store());
    std::atomic<int> granted{0}, errors{0}, ready{0};
    std::vector<std::thread> threads;
    for (auto& s : stores)
      threads.emplace_back([&, s] {
        ++ready;
        while (ready < 8) std::this_thread::yield();
        try {
          auto got = s->try_acquire(request(lock), soon());
          if (got) {
            ++granted;
            EXPECT_EQ(got.lease->fencing_token, 1u);
          }
        } catch (const std::exception& e) {
          ++errors;
          ADD_FAILURE() << e.what();
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(granted, 1) << "round " << round;
    EXPECT_EQ(errors, 0);
  }
}

TEST_F(MongoStoreTest, AnUpsertThatCollidesOnTheLockIdIsADuplicateKeyNotAnError) {
  const std::string lock = fresh_lock("dup");
  ASSERT_TRUE(store_->try_acquire(request(lock), soon()));
  const std::string coll = store_->connection().collection("locks");
  bson_t* cmd = BCON_NEW("findAndModify", BCON_UTF8(coll.c_str()), "query", "{", "_id",
                         BCON_UTF8(lock.c_str()), "fence", BCON_INT64(999), "}", "update", "{",
                         "$inc", "{", "fence", BCON_INT64(1), "}", "}", "upsert", BCON_BOOL(true));
  auto reply = store_->connection().write("findAndModify (test)", cmd, soon());
  bson_destroy(cmd);
  EXPECT_FALSE(reply.has_value()) << "expected DuplicateKey (11000)";
}

TEST_F(MongoStoreTest, AReplyLostAfterTheGrantIsDeadlineExceededAndTheOwnersRetryGetsTheLease) {
  const std::string lock = fresh_lock("lost");
  auto req = request(lock);
  arm(*store_, "closeAfterApply", "findAndModify");
  EXPECT_EQ(code_of([&] { (void)store_->try_acquire(req, soon()); }), ErrorCode::deadline_exceeded);
  auto again = store_->try_acquire(req, soon());  // the same owner token: its own lease back
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->fencing_token, 1u) << "the applied grant's token, not a second one";
  auto state = store_->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, req.owner);
}

TEST_F(MongoStoreTest, AConnectionClosedBeforeTheWriteIsAlsoAnUnknownOutcome) {
  const std::string lock = fresh_lock("closed");
  auto req = request(lock);
  arm(*store_, "closeBeforeApply", "findAndModify");
  EXPECT_EQ(code_of([&] { (void)store_->try_acquire(req, soon()); }), ErrorCode::deadline_exceeded);
  EXPECT_TRUE(store_->inspect(lock, soon()).holders.empty());
  EXPECT_TRUE(store_->try_acquire(req, soon()));
}

TEST_F(MongoStoreTest, AWriteConcernErrorIsDeadlineExceeded) {
  auto got = store_->try_acquire(request(fresh_lock("wce")), soon());
  ASSERT_TRUE(got);
  arm(*store_, "writeConcernError", "update");
  Lease lease = *got.lease;
  EXPECT_EQ(code_of([&] { (void)store_->renew(lease, Ms{10000}, soon()); }),
            ErrorCode::deadline_exceeded);
}

TEST_F(MongoStoreTest, NotWritablePrimaryIsUnavailableAndGrantsNothing) {
  const std::string lock = fresh_lock("nwp");
  arm(*store_, "error", "findAndModify", 10107);
  EXPECT_EQ(code_of([&] { (void)store_->try_acquire(request(lock), soon()); }),
            ErrorCode::unavailable);
  EXPECT_TRUE(store_->inspect(lock, soon()).holders.empty());
}

TEST_F(MongoStoreTest, AReplyLaterThanTheDeadlineIsDeadlineExceeded) {
  auto got = store_->try_acquire(request(fresh_lock("slow")), soon());
  ASSERT_TRUE(got);
  arm(*store_, "delay", "update", 0, 1500);
  Lease lease = *got.lease;
  EXPECT_EQ(code_of([&] { (void)store_->renew(lease, Ms{10000}, Deadline::after(Ms{300})); }),
            ErrorCode::deadline_exceeded);
}

TEST_F(MongoStoreTest, AuthenticationFailureIsFailedPreconditionAndHidesThePassword) {
  const std::string uri =
      "mongodb://app:hunter2@" + base_uri().substr(std::string("mongodb://").size());
  auto s = std::make_shared<MongoStore>(Config::from_uri(Uri::parse(uri)));
  try {
    (void)s->inspect("auth-check", soon());
    ADD_FAILURE() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

TEST_F(MongoStoreTest, TheLockDocumentHoldsFenceSizeAndServerTimeRecords) {
  const std::string lock = fresh_lock("layout");
  auto got = store_->try_acquire(request(lock, 2, Ms{7000}), soon());
  ASSERT_TRUE(got);
  const std::string coll = store_->connection().collection("locks");
  DocPtr r = command(*store_, BCON_NEW("find", BCON_UTF8(coll.c_str()), "filter", "{", "_id",
                                       BCON_UTF8(lock.c_str()), "}"));
  EXPECT_EQ(get_int(&r->b, "cursor.firstBatch.0.fence"), 1);
  EXPECT_EQ(get_int(&r->b, "cursor.firstBatch.0.slots"), 2);
  EXPECT_EQ(get_int(&r->b, "cursor.firstBatch.0.holders.0.token"), 1);
  EXPECT_EQ(get_int(&r->b, "cursor.firstBatch.0.holders.0.ttl_ms"), 7000);
  EXPECT_EQ(utf8_at(&r->b, "cursor.firstBatch.0.holders.0.owner"), got.lease->owner);
  bson_iter_t it, renewed;
  ASSERT_TRUE(bson_iter_init(&it, &r->b));
  ASSERT_TRUE(bson_iter_find_descendant(&it, "cursor.firstBatch.0.holders.0.renewed", &renewed));
  EXPECT_TRUE(BSON_ITER_HOLDS_DATE_TIME(&renewed)) << "the grant time must be the server's";
  // Released: the record goes, the fence stays (tokens are never reused).
  ASSERT_EQ(store_->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  auto next = store_->try_acquire(request(lock, 2), soon());
  ASSERT_TRUE(next);
  EXPECT_EQ(next.lease->fencing_token, 2u);
}

TEST_F(MongoStoreTest, CandidatesGetAUniqueKeyAndAGarbageCollectionTtlIndex) {
  auto s = open_store("gc_after=2h");
  Candidate c;
  c.node_id = "n1";
  c.metadata = {{"zone.a", "$x"}};  // keys with '.' and '$' survive
  const std::string group = fresh_lock("grp");
  s->put_candidate(group, c, Ms{5000}, soon());
  auto listed = s->list_candidates(group, soon());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].metadata, c.metadata);
  const std::string coll = s->connection().collection("candidates");
  DocPtr r = command(*s, BCON_NEW("listIndexes", BCON_UTF8(coll.c_str())));
  bool unique = false, ttl = false;
  bson_iter_t it, batch, idx;
  ASSERT_TRUE(bson_iter_init(&it, &r->b));
  ASSERT_TRUE(bson_iter_find_descendant(&it, "cursor.firstBatch", &batch));
  bson_iter_recurse(&batch, &idx);
  while (bson_iter_next(&idx)) {
    bson_t doc;
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&idx, &len, &data);
    ASSERT_TRUE(bson_init_static(&doc, data, len));
    const std::string name = utf8_at(&doc, "name");
    if (name == "group_node") unique = true;
    if (name == "gc_renewed") ttl = get_int(&doc, "expireAfterSeconds") == 7200;
  }
  EXPECT_TRUE(unique);
  EXPECT_TRUE(ttl);
}

}  // namespace
}  // namespace leader::mongodb
