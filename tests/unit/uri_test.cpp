#include <gtest/gtest.h>

#include "leader/detail/uri_params.hpp"
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

// The message of the InvalidArgument thrown by `f`.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument thrown";
  return "";
}

TEST(Redaction, HidesTheValueOfEverySecretBearingParameter) {
  for (const char* key : {"password",
                          "sslpassword",
                          "pass",
                          "passwd",
                          "secret",
                          "secret_key",
                          "secret_access_key",
                          "aws_secret_access_key",
                          "token",
                          "session_token",
                          "auth",
                          "authorization",
                          "api_key",
                          "apikey",
                          "key",
                          "tls_key",
                          "PASSWORD",
                          "Session_Token",
                          "X-Amz-Security-Token",
                          "credentials",
                          "pass%77ord"}) {
    std::string text = std::string("postgresql://h/db?") + key + "=S3CR3T&sslmode=require";
    std::string shown = Uri::parse(text).redacted();
    EXPECT_EQ(shown.find("S3CR3T"), std::string::npos) << key << ": " << shown;
    EXPECT_NE(shown.find(std::string(key) + "=***"), std::string::npos) << key << ": " << shown;
    EXPECT_NE(shown.find("sslmode=require"), std::string::npos) << shown;
  }
}

TEST(Redaction, KeepsOrdinaryParametersTheUserAndTheHosts) {
  EXPECT_EQ(Uri::parse("redis://u:pw@h1:1,h2/0?prefix=app&db=2&user=bob@x").redacted(),
            "redis://u:***@h1:1,h2/0?prefix=app&db=2&user=bob@x");
  EXPECT_EQ(Uri::parse("redis://:pw@h?timeout=2s").redacted(), "redis://:***@h?timeout=2s");
  EXPECT_EQ(Uri::parse("etcd://alice@h").redacted(), "etcd://alice@h");
  EXPECT_EQ(Uri::parse("sqlite:///srv/a@b.db").redacted(), "sqlite:///srv/a@b.db");
  for (const char* name : {"prefix", "timeout", "region", "table", "user", "db", "sslmode"})
    EXPECT_FALSE(is_secret_parameter(name)) << name;
}

TEST(Redaction, HidesTheWholeUserinfoWhenItsEndIsAmbiguous) {
  // An unencoded '/' in the password makes the parser see a path: the password must still hide.
  auto slash = Uri::parse("redis://u:12/ss@h");
  EXPECT_EQ(slash.redacted(), "redis://***@h");
  // No '//': `u:pw@h` parses as scheme 'u' with path 'pw@h'.
  EXPECT_EQ(Uri::parse("u:pw@h").redacted(), "u:***@h");
}

TEST(Redaction, ParseErrorsHideTheWholeUserinfoAndSecretParameters) {
  // Each URI is malformed; no piece of its secret may appear in the error (e.g. as a "port").
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"redis://u:hunter2@h:notaport", {"hunter2"}},
      {"redis://hunter2@h:notaport", {"hunter2"}},         // a token as the user
      {"redis://u:hun/ter2@h:notaport", {"hun", "ter2"}},  // '/' in the password
      {"redis://u:hun?ter2@h:notaport", {"hun", "ter2"}},  // '?' in the password
      {"redis://u:hun#ter2@h", {"hun", "ter2"}},           // '#' in the password
      {"redis://u:pw@h:notaport?password=hunter2", {"hunter2"}},
      {"postgresql://h/db?password=hun@ter2&x=%zz", {"hun", "ter2"}},
      {"redis://u:hunter2@h/%zz", {"hunter2"}},
      {"re dis://u:hunter2@h", {"hunter2"}},  // no valid scheme
      {"redis://u:hunter2@,h", {"hunter2"}}};
  for (const auto& [text, pieces] : cases) {
    const std::string& uri = text;  // clang 14 (clang-tidy) cannot capture a structured binding
    std::string message = error_of([&] { (void)Uri::parse(uri); });
    std::string shown = redact_uri(text);
    for (const auto& piece : pieces) {
      EXPECT_EQ(message.find(piece), std::string::npos) << text << " -> " << message;
      EXPECT_EQ(shown.find(piece), std::string::npos) << text << " -> " << shown;
    }
    EXPECT_NE(message.find("***"), std::string::npos) << text << " -> " << message;
  }
  EXPECT_EQ(redact_uri("redis://u:pw@h:x?token=t&db=1"), "redis://***@h:x?token=***&db=1");
}

TEST(Redaction, ScrubHidesTheSecretsOfAUriInAnyMessage) {
  auto u = Uri::parse("postgresql://u:p%40ss@h/db?sslpassword=se%00cret&user=bob&token=tk");
  std::string message = u.scrub(
      "forbidden value %00 in percent-encoded value: \"se%00cret\"; p@ss p%40ss tk bob u@h");
  for (const char* secret : {"se%00cret", "p@ss", "p%40ss", "tk"})
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
  EXPECT_NE(message.find("bob u@h"), std::string::npos) << message;
  EXPECT_EQ(Uri::parse("redis://u:12/ss@h").scrub("port 12/ss"), "port ***");
  EXPECT_EQ(Uri::parse("redis://h").scrub("nothing to hide"), "nothing to hide");
}

TEST(Redaction, MessagesThatNameTheUriNeverShowItsSecrets) {
  auto u = Uri::parse("x://u:S1@h?colour=blue&api_key=S2&flag=maybe");
  for (const std::string& message :
       {error_of([&] {
          u.expect_params({"flag", "api_key"});
        }),
        error_of([&] { (void)u.bool_param("flag", false); }),
        error_of([&] { (void)Uri::parse("x://u:S1@h?t=5x&token=S2").duration_param("t", 1s); }),
        error_of([&] { (void)open("nosuch://u:S1@h?password=S2"); })}) {
    EXPECT_EQ(message.find("S1"), std::string::npos) << message;
    EXPECT_EQ(message.find("S2"), std::string::npos) << message;
  }
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
  for (const char* bad : {"", "-1s", "5x", "s", "1e30h", "nan", "inf", "infs", "-0.5"})
    EXPECT_THROW(parse_duration(bad, "t"), InvalidArgument) << bad;
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(2min), "2m");
  EXPECT_EQ(format_duration(250ms), "250ms");
}

TEST(Durations, AboveOneYearAreRefusedNamingTheOptionAndTheBound) {
  EXPECT_EQ(parse_duration("8760h", "--ttl"), std::chrono::hours(8760));
  EXPECT_EQ(parse_duration("31536000", "--ttl"), std::chrono::hours(8760));
  for (const char* big : {"8760.001h", "8761h", "525601m", "31536001s", "2562047h", "1e18ms"}) {
    std::string message = error_of([&] { (void)parse_duration(big, "--ttl"); });
    EXPECT_NE(message.find("--ttl"), std::string::npos) << big << ": " << message;
    EXPECT_NE(message.find("365 days"), std::string::npos) << big << ": " << message;
  }
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

// Every old spelling of docs/uri-parameters.md, for every scheme it applies to: the canonical name
// reads it, the same value under both names is accepted, different values are refused naming both,
// and expect_params() accepts it wherever the canonical name is known (and nowhere else).
TEST(UriAliases, EveryOldSpellingReadsAsItsCanonicalName) {
  ASSERT_FALSE(uri_param_aliases().empty());
  for (const UriParamAlias& a : uri_param_aliases()) {
    const std::string alias(a.alias), canonical(a.canonical);
    std::string schemes(a.schemes);
    for (std::size_t at = 0; at != std::string::npos;) {
      auto space = schemes.find(' ', at);
      std::string scheme = schemes.substr(at, space == std::string::npos ? space : space - at);
      at = space == std::string::npos ? space : space + 1;
      SCOPED_TRACE(scheme + ": " + alias + " -> " + canonical);
      const std::string base = scheme + "://h/x?";
      EXPECT_EQ(Uri::parse(base + alias + "=v1").param(canonical), "v1");
      EXPECT_EQ(Uri::parse(base + canonical + "=v1").param(canonical), "v1");
      EXPECT_EQ(Uri::parse(base + alias + "=v1&" + canonical + "=v1").param(canonical), "v1");
      try {
        (void)Uri::parse(base + alias + "=v1&" + canonical + "=v2").param(canonical);
        ADD_FAILURE() << "different values accepted";
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("'" + alias + "'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'" + canonical + "'"), std::string::npos) << e.what();
      }
      EXPECT_NO_THROW(Uri::parse(base + alias + "=v").expect_params({a.canonical}));
      EXPECT_THROW(Uri::parse(base + alias + "=v").expect_params({"other"}), InvalidArgument);
    }
  }
}

TEST(UriAliases, AnOldSpellingBelongsToItsStoresOnly) {
  // `key` is etcd's old tls_key; for another scheme it is nobody's alias.
  EXPECT_EQ(Uri::parse("etcd://h?key=/k").param("tls_key"), "/k");
  EXPECT_EQ(Uri::parse("redis://h?key=/k").param("tls_key"), std::nullopt);
  EXPECT_THROW(Uri::parse("redis://h?key=/k").expect_params({"tls_key"}), InvalidArgument);
  EXPECT_EQ(Uri::parse("redis://h?pool=3").param("pool_size"), "3");
  EXPECT_EQ(Uri::parse("mysql://h/d?pool=3").param("pool_size"), std::nullopt);
}

TEST(UriAliases, TheConflictMessageHidesSecretValues) {
  try {
    (void)Uri::parse("etcds://u:hunter2@h?key=/a&tls_key=/b").param("tls_key");
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("/a"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace leader
