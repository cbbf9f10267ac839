#include <gtest/gtest.h>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

TEST(Uri, ParsesUserPasswordHostsPathAndQuery) {
  auto u = Uri::parse("redis://al%40ice:s3cr%2Ft@10.0.0.5:6380,h2/3?prefix=app%3A&timeout=2s");
  EXPECT_EQ(u.scheme, "redis");
  EXPECT_EQ(u.user, "al@ice");
  EXPECT_EQ(u.password, "s3cr/t");
  ASSERT_EQ(u.hosts.size(), 2u);
  EXPECT_EQ(u.hosts[0].host, "10.0.0.5");
  EXPECT_EQ(u.hosts[0].port, 6380);
  EXPECT_EQ(u.hosts[1].host, "h2");
  EXPECT_FALSE(u.hosts[1].port.has_value());
  EXPECT_EQ(u.path, "/3");
  EXPECT_EQ(u.param("prefix"), "app:");
  EXPECT_EQ(u.duration_param("timeout", 1s), 2s);
  EXPECT_EQ(u.duration_param("absent", 1s), 1s);
}

TEST(Uri, ParsesFileFormsAndIpv6) {
  EXPECT_EQ(Uri::parse("sqlite:///var/lib/a.db").path, "/var/lib/a.db");
  EXPECT_TRUE(Uri::parse("sqlite:///var/lib/a.db").hosts.empty());
  EXPECT_EQ(Uri::parse("sqlite:rel/a.db").path, "rel/a.db");
  auto v6 = Uri::parse("etcd://[::1]:2379");
  EXPECT_EQ(v6.hosts[0].host, "::1");
  EXPECT_EQ(v6.hosts[0].port, 2379);
}

TEST(Uri, RejectsMalformedInputWithoutLeakingThePassword) {
  for (const char* bad : {"", "nocolon", "://x", "re dis://h", "redis://h:0", "redis://h:99999",
                          "redis://h:abc", "redis://,h", "redis://h/%zz", "redis://h#frag"}) {
    EXPECT_THROW(Uri::parse(bad), InvalidArgument) << bad;
  }
  try {
    Uri::parse("redis://u:hunter2@h:notaport");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("***"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Uri::parse("redis://u:pw@h").redacted(), "redis://u:***@h");
}

TEST(Uri, UnknownParametersAndBadValuesAreNamed) {
  auto u = Uri::parse("memory:?colour=blue");
  EXPECT_THROW(u.expect_params({"prefix"}), InvalidArgument);
  EXPECT_THROW((void)Uri::parse("x://h?flag=maybe").bool_param("flag", false), InvalidArgument);
  EXPECT_TRUE(Uri::parse("x://h?flag=yes").bool_param("flag", false));
}

TEST(Durations, ParseTheDocumentedUnits) {
  EXPECT_EQ(parse_duration("500ms", "t"), 500ms);
  EXPECT_EQ(parse_duration("30s", "t"), 30s);
  EXPECT_EQ(parse_duration("5m", "t"), 5min);
  EXPECT_EQ(parse_duration("1h", "t"), 1h);
  EXPECT_EQ(parse_duration("1.5s", "t"), 1500ms);
  EXPECT_EQ(parse_duration("2", "t"), 2s);
  for (const char* bad : {"", "-1s", "5x", "s", "1e30h"})
    EXPECT_THROW(parse_duration(bad, "t"), InvalidArgument) << bad;
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(2min), "2m");
  EXPECT_EQ(format_duration(250ms), "250ms");
}

TEST(Open, GivesClearErrorsForUnknownAndUnbuiltSchemes) {
  EXPECT_NE(open("memory:"), nullptr);
  try {
    (void)open("nosuch://h");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown scheme 'nosuch'"), std::string::npos);
  }
  try {
    (void)open("mongodb://u:pw@h");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not built"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(":pw@"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)open("memory://host"), InvalidArgument);
  EXPECT_THROW((void)open("memory:?x=1"), InvalidArgument);
}

TEST(Open, NamedMemoryStoresShareState) {
  auto a = open("memory:shared-test");
  auto b = open("memory:shared-test");
  LeaderElector ea(a, {.wait_time = 0s});
  LeaderElector eb(b, {.wait_time = 0s});
  auto held = ea.acquire("x");
  ASSERT_TRUE(held);
  EXPECT_FALSE(eb.run_if_leader("x", [] {}));
}

}  // namespace
}  // namespace leader
