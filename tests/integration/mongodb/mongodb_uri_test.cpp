// mongodb:// URI parsing: every option, every refusal names the value and the rule, and the
// password never appears in a message. No server needed.

#include <gtest/gtest.h>

#include <string>

#include "leader/errors.hpp"
#include "leader/uri.hpp"
#include "mongodb/config.hpp"

namespace leader::mongodb {
namespace {

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

std::string refusal(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << text << " was accepted";
  return "";
}

TEST(MongoUri, DefaultsAreMajorityWritesLeaderDatabaseAndPrefix) {
  const Config c = parse("mongodb://db1.example:27018");
  ASSERT_EQ(c.hosts.size(), 1u);
  EXPECT_EQ(c.hosts[0], "db1.example:27018");
  EXPECT_EQ(c.database, "leader");
  EXPECT_EQ(c.prefix, "leader_");
  EXPECT_EQ(c.write_concern, "majority");
  EXPECT_EQ(c.pool_size, 4);
  EXPECT_FALSE(c.tls);
  EXPECT_TRUE(c.create_indexes);
}

TEST(MongoUri, EveryOptionIsRead) {
  const Config c = parse(
      "mongodb://app:s3cret@h1,h2:27019/locks?prefix=svc_&w=2&wtimeout=3s&journal=true&pool_size=9"
      "&connect_timeout=250ms&socket_timeout=5s&gc_after=2h&create_indexes=false"
      "&auth_source=admin&replica_set=rs0&tls=true&tls_ca=/ca.pem&tls_cert=/me.pem"
      "&tls_key=/me.pem&tls_verify=false");
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"h1:27017", "h2:27019"}));
  EXPECT_EQ(c.database, "locks");
  EXPECT_EQ(c.prefix, "svc_");
  EXPECT_EQ(c.write_concern, "2");
  EXPECT_EQ(c.wtimeout, std::chrono::seconds(3));
  EXPECT_TRUE(c.journal);
  EXPECT_EQ(c.pool_size, 9);
  EXPECT_EQ(c.connect_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(c.socket_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c.gc_after, std::chrono::hours(2));
  EXPECT_FALSE(c.create_indexes);
  EXPECT_EQ(c.user, "app");
  EXPECT_EQ(c.password, "s3cret");
  EXPECT_EQ(c.auth_source, "admin");
  EXPECT_EQ(c.replica_set, "rs0");
  EXPECT_TRUE(c.tls);
  EXPECT_EQ(c.tls_ca, "/ca.pem");
  EXPECT_EQ(c.tls_cert, "/me.pem");
  EXPECT_FALSE(c.tls_verify);
  EXPECT_EQ(c.shown.find("s3cret"), std::string::npos) << c.shown;
}

TEST(MongoUri, UnsafeOrUnsupportedSettingsAreRefusedWithTheRule) {
  EXPECT_NE(refusal("mongodb://h/db?w=0").find("w=0"), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?w=").find("w="), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?tls=true&tls_cert=/a.pem&tls_key=/b.pem").find("tls_key"),
            std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?tls=true&tls_server_name=x").find("tls_server_name"),
            std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?tls_ca=/ca.pem").find("tls=true"), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?pool_size=0").find("pool_size"), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?prefix=1bad").find("1bad"), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/my.db").find("my.db"), std::string::npos);
  EXPECT_NE(refusal("mongodb://h/db?colour=blue").find("colour"), std::string::npos);
  EXPECT_NE(refusal("mongodb:///db").find("no host"), std::string::npos);
  EXPECT_NE(refusal("redis://h/db").find("mongodb://"), std::string::npos);
}

TEST(MongoUri, ThePasswordNeverAppearsInARefusal) {
  const std::string msg = refusal("mongodb://app:hunter2@h/db?pool_size=100");
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace leader::mongodb
