// URI parsing of the Redis store (no server needed).

#include <gtest/gtest.h>

#include "config.hpp"
#include "leader/leader.hpp"

namespace leader::redis {
namespace {

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

TEST(RedisUri, DefaultsAndFullForm) {
  auto c = parse("redis://127.0.0.1");
  EXPECT_EQ(c.transport, Transport::tcp);
  EXPECT_EQ(c.port, 6379);
  EXPECT_EQ(c.db, 0);
  EXPECT_EQ(c.prefix, "leader:");
  auto f = parse(
      "rediss://app:pw@redis.example:6380/4?prefix=x:&connect_timeout=250ms"
      "&command_timeout=3s&pool=16&tls_ca=/ca.pem");
  EXPECT_EQ(f.transport, Transport::tls);
  EXPECT_EQ(f.host, "redis.example");
  EXPECT_EQ(f.port, 6380);
  EXPECT_EQ(f.db, 4);
  EXPECT_EQ(f.user.value_or(""), "app");
  EXPECT_EQ(f.password.value_or(""), "pw");
  EXPECT_EQ(f.prefix, "x:");
  EXPECT_EQ(f.connect_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(f.command_timeout, std::chrono::seconds(3));
  EXPECT_EQ(f.pool_size, 16);
  EXPECT_EQ(f.tls_ca, "/ca.pem");
}

TEST(RedisUri, UnixSocket) {
  auto c = parse("unix:///run/redis/redis.sock?db=2");
  EXPECT_EQ(c.transport, Transport::unix_socket);
  EXPECT_EQ(c.socket_path, "/run/redis/redis.sock");
  EXPECT_EQ(c.db, 2);
}

TEST(RedisUri, PasswordOnlyMeansTheDefaultUser) {
  auto c = parse("redis://:pw@h");
  EXPECT_FALSE(c.user.has_value());
  EXPECT_EQ(c.password.value_or(""), "pw");
}

TEST(RedisUri, BadValuesNameTheRuleAndHideThePassword) {
  const char* bad[] = {
      "redis://u:S3cretPw@h/notanumber",
      "redis://u:S3cretPw@h?prefix=a{b}",
      "redis://u:S3cretPw@h?pool=0",
      "redis://u:S3cretPw@h?color=blue",
      "redis://u:S3cretPw@h?tls_ca=/x",
      "redis://u:S3cretPw@h1,h2",
      "redis://u:S3cretPw@h?connect_timeout=soon",
      "unix://u:S3cretPw@/",
  };
  for (const char* text : bad) {
    try {
      (void)parse(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).find("S3cretPw"), std::string::npos) << e.what();
    }
  }
}

TEST(RedisUri, RegisteredSchemes) {
  auto schemes = registered_schemes();
  for (const char* s : {"redis", "rediss", "unix"})
    EXPECT_NE(std::find(schemes.begin(), schemes.end(), s), schemes.end()) << s;
}

TEST(RedisUri, PoolSizeAndItsDeprecatedSpellingPool) {
  EXPECT_EQ(parse("redis://h?pool_size=7").pool_size, 7);
  EXPECT_EQ(parse("redis://h?pool=7").pool_size, 7);
  EXPECT_EQ(parse("redis://h?pool=7&pool_size=7").pool_size, 7);
  try {
    (void)parse("redis://h?pool=7&pool_size=8");
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'pool' and 'pool_size'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace leader::redis
