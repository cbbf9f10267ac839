// Regression tests for the parser bugs the fuzz harnesses found (tests/fuzz/*.cpp); the
// crashing inputs themselves are replayed by fuzz_replay.<harness> from corpus/<harness>/crash-*.

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <string>

#include "dynamodb/replies.hpp"
#include "etcd/etcd_store.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/uri.hpp"
#include "mysql/my_rows.hpp"
#include "redis/replies.hpp"
#include "zookeeper/zk_data.hpp"

namespace {

using leader::WallTime;

struct ReplyDeleter {
  void operator()(void* r) const { freeReplyObject(r); }
};
using OwnedReply = std::unique_ptr<void, ReplyDeleter>;

OwnedReply read_reply(const std::string& resp) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(
      leader::redis::create_reply_reader(), &redisReaderFree);
  redisReaderFeed(reader.get(), resp.data(), resp.size());
  void* reply = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader.get(), &reply), REDIS_OK);
  return OwnedReply(reply);
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

TEST(ParserRegression, RedisReplyAnnouncingAHugeArrayIsRefusedBeforeAllocating) {
  // Was a 3.3 GB calloc (hiredis 0.14 sizes the element array from the announced count).
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(
      leader::redis::create_reply_reader(), &redisReaderFree);
  const std::string huge = "*420543770\r\n:1\r\n";
  redisReaderFeed(reader.get(), huge.data(), huge.size());
  void* reply = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader.get(), &reply), REDIS_ERR);
  EXPECT_EQ(reply, nullptr);
  const auto ok = read_reply("*2\r\n:0\r\n" + bulk("41"));  // ordinary replies still parse
  EXPECT_EQ(static_cast<const redisReply*>(ok.get())->elements, 2u);
}

TEST(ParserRegression, ParseDurationRejectsNan) {
  // Was undefined behaviour (NaN cast to int64): a negative ttl could come out of "nan".
  for (const char* text : {"nan", "NaN", "nanms", "-nan", "nan(0x1)s"})
    EXPECT_THROW((void)leader::parse_duration(text, "test"), leader::InvalidArgument) << text;
}

TEST(ParserRegression, RedisCandidateWithAMalformedLastCompletionIsABackendError) {
  // Was std::invalid_argument from std::stoll escaping the store.
  const auto reply = read_reply("*2\r\n" + bulk("node-a") +
                                bulk("1796073547984 1796073537984277 3 1 12x4 zone=eu"));
  EXPECT_THROW((void)leader::redis::decode_candidates(static_cast<const redisReply*>(reply.get())),
               leader::BackendError);
}

TEST(ParserRegression, RedisCandidateTimesOutsideWallTimeAreClamped) {
  // Was signed overflow converting microseconds to system_clock's nanoseconds.
  const auto reply = read_reply("*2\r\n" + bulk("node-a") +
                                bulk("1 9223372036854775807 0 0 -9223372036854775807 "));
  const auto c = leader::redis::decode_candidates(static_cast<const redisReply*>(reply.get()));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].registered_at, WallTime::max());
  EXPECT_EQ(c[0].last_completion, WallTime::min());
}

TEST(ParserRegression, SqlCandidateTimesOutsideWallTimeAreClamped) {
  const leader::mysql::RowList rows = {
      {"node-a", "9223372036854775807", "0", "0", "-9223372036854775808", "{}"}};
  const auto c = leader::mysql::decode_candidates(rows);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].registered_at, WallTime::max());
  EXPECT_EQ(c[0].last_completion, WallTime::min());
  EXPECT_EQ(leader::detail::wall_time_from_epoch_ms(1764547200123),
            WallTime(std::chrono::milliseconds(1764547200123)));
}

TEST(ParserRegression, ZooKeeperCandidateExpiryToleratesForeignTtls) {
  using leader::zookeeper::candidate_expired;
  // Were nlohmann::json::type_error (empty data, a string ttl) and signed overflow (huge ttl).
  EXPECT_TRUE(candidate_expired("", 1000, 2000));
  EXPECT_TRUE(candidate_expired(R"({"ttl_ms":"10000"})", 1000, 2000));
  EXPECT_FALSE(candidate_expired(R"({"ttl_ms":9223372036854775807})", 1000, 2000));
  EXPECT_FALSE(candidate_expired(R"({"ttl_ms":10000})", 1000, 2000));
  EXPECT_TRUE(candidate_expired(R"({"ttl_ms":500})", 1000, 2000));
}

TEST(ParserRegression, JsonFieldsOfAnUnexpectedTypeAreMalformedRepliesNotJsonExceptions) {
  // Each was a nlohmann::json::type_error escaping the store.
  EXPECT_THROW((void)leader::etcd::parse_reply(R"({"error":"x","code":"5"})", 400, "etcd"),
               leader::BackendError);
  // Was undefined behaviour: a fractional code converted to int inside nlohmann::json.
  EXPECT_THROW(
      (void)leader::etcd::parse_reply(R"({"error":"x","code":184467440737095516156})", 400, "etcd"),
      leader::BackendError);
  EXPECT_EQ(leader::etcd::parse_reply(R"({"error":"x","message":"m","code":9})", 400, "etcd").code,
            9);
  EXPECT_FALSE(leader::etcd::txn_succeeded(nlohmann::json::parse(R"({"succeeded":"yes"})")));
  EXPECT_TRUE(std::holds_alternative<const nlohmann::json*>(
      leader::etcd::claimed_level(nlohmann::json::parse(R"({"succeeded":1})"))));
  EXPECT_TRUE(leader::etcd::range_kvs(nlohmann::json::parse(R"({"responses":[7]})"), 0).empty());
  EXPECT_FALSE(leader::etcd::first_kv(nlohmann::json::parse(R"({"responses":[7]})"), "response_put",
                                      "prev_kv"));
  leader::Holder etcd_holder;
  leader::etcd::read_holder_value(R"({"owner":5,"node_id":"n"})", "694d7a1c2b3e4f5", etcd_holder);
  EXPECT_EQ(etcd_holder.owner, "694d7a1c2b3e4f5");
  const auto ddb = leader::dynamodb::parse_response(R"({"__type":5,"message":7})", 400);
  EXPECT_EQ(ddb.error_type, "HTTP400");
  EXPECT_EQ(ddb.message, "");
  EXPECT_FALSE(leader::zookeeper::recorded_owner(R"({"owner":5})").has_value());
  leader::Holder zk_holder;
  leader::zookeeper::read_holder_data(R"({"owner":5})", "abc__lock__0000000001", zk_holder);
  EXPECT_EQ(zk_holder.owner, "abc");
  EXPECT_EQ(zk_holder.node_id, R"({"owner":5})");
  EXPECT_FALSE(leader::zookeeper::parse_candidate(R"({"metadata":{"k":1}})").has_value());
}

TEST(ParserRegression, CandidateNumbersWithAFractionAreForeignValues) {
  // Were undefined behaviour: 1e300 converted to int64 inside nlohmann::json.
  const std::string value = R"({"node_id":"a","registered_at_ms":1e300,"successes":-1.5})";
  EXPECT_FALSE(leader::zookeeper::parse_candidate(value).has_value());
  EXPECT_FALSE(leader::etcd::decode_candidate(value).has_value());
}

}  // namespace
