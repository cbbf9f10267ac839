// dynamodb:// URI parsing (no server needed).

#include <gtest/gtest.h>

#include <cstdlib>

#include "dynamodb/config.hpp"
#include "leader/leader.hpp"

namespace leader::dynamodb {
namespace {

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

std::string rejection(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

// Sets or clears the AWS credential variables for one test.
struct AwsEnv {
  AwsEnv(const char* id, const char* secret, const char* token = nullptr) {
    set("AWS_ACCESS_KEY_ID", id);
    set("AWS_SECRET_ACCESS_KEY", secret);
    set("AWS_SESSION_TOKEN", token);
  }
  ~AwsEnv() {
    for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"})
      ::unsetenv(name);
  }
  static void set(const char* name, const char* value) {
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
};

TEST(DynamoDbUri, AHostWithTlsFalseIsAPlainHttpEndpointAndDefaultsApply) {
  Config c = parse("dynamodb://AKID:s%2Fe%2Bcret@127.0.0.1:18000?tls=false");
  EXPECT_EQ(c.endpoint, "http://127.0.0.1:18000");
  EXPECT_EQ(c.authority, "127.0.0.1:18000");
  EXPECT_EQ(c.table, "leader_locks");
  EXPECT_EQ(c.region, "us-east-1");
  EXPECT_TRUE(c.create_table);
  EXPECT_EQ(c.access_key_id, "AKID");
  EXPECT_EQ(c.secret_access_key, "s/e+cret");  // percent-escapes decoded
}

TEST(DynamoDbUri, OptionsAreParsed) {
  Config c = parse(
      "dynamodb://k:s@db.example:8443?table=my.locks&region=eu-west-1&create_table=false&"
      "connect_timeout=250ms&timeout=3s&open_timeout=20s&cacert=/ca.pem");
  EXPECT_EQ(c.endpoint, "https://db.example:8443");
  EXPECT_EQ(c.table, "my.locks");
  EXPECT_EQ(c.region, "eu-west-1");
  EXPECT_FALSE(c.create_table);
  EXPECT_EQ(c.connect_timeout, Duration{250});
  EXPECT_EQ(c.request_timeout, Duration{3000});
  EXPECT_EQ(c.open_timeout, Duration{20000});
  EXPECT_EQ(c.ca_file, "/ca.pem");
  EXPECT_EQ(parse("dynamodb://k:s@h").authority, "h");  // https default port is not shown
}

TEST(DynamoDbUri, NoHostMeansTheRegionalAwsEndpoint) {
  Config c = parse("dynamodb://k:s@?region=ap-south-1");
  EXPECT_EQ(c.endpoint, "https://dynamodb.ap-south-1.amazonaws.com");
  EXPECT_EQ(c.authority, "dynamodb.ap-south-1.amazonaws.com");
}

TEST(DynamoDbUri, TheEndpointParameterNamesAFullBaseUrl) {
  Config c = parse("dynamodb://k:s@?endpoint=http://localhost:8000/");
  EXPECT_EQ(c.endpoint, "http://localhost:8000");
  EXPECT_EQ(c.authority, "localhost:8000");
  EXPECT_EQ(parse("dynamodb://k:s@?endpoint=https://vpce.example:443").authority, "vpce.example");
}

TEST(DynamoDbUri, CredentialsComeFromTheEnvironmentWhenTheUriHasNone) {
  AwsEnv env("ENVKEY", "envsecret", "sessiontoken");
  Config c = parse("dynamodb://127.0.0.1:18000?tls=false");
  EXPECT_EQ(c.access_key_id, "ENVKEY");
  EXPECT_EQ(c.secret_access_key, "envsecret");
  EXPECT_EQ(c.session_token, "sessiontoken");
}

TEST(DynamoDbUri, MissingCredentialsAreRejectedWithTheRule) {
  AwsEnv env(nullptr, nullptr);
  EXPECT_NE(rejection("dynamodb://127.0.0.1:18000?tls=false").find("AWS_ACCESS_KEY_ID"),
            std::string::npos);
  EXPECT_NE(rejection("dynamodb://onlykey@h").find("both"), std::string::npos);
}

TEST(DynamoDbUri, BadUrisNameTheValueAndTheRuleWithoutTheSecret) {
  EXPECT_NE(rejection("dynamodb://k:s@h?bogus=1").find("bogus"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h/x").find("path"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?table=ab").find("'ab'"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?table=a%20b%20c").find("table"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?region=").find("region"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@a,b").find("one endpoint"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?endpoint=http://x").find("both"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@?endpoint=ftp://x").find("http"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@?endpoint=http://x&tls=true").find("tls"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@?tls=false").find("TLS"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?tls=false&cacert=/c").find("tls_ca"), std::string::npos);
  EXPECT_NE(rejection("dynamodb://k:s@h?open_timeout=0s").find("open_timeout"), std::string::npos);
  EXPECT_NE(rejection("redis://k:s@h").find("dynamodb://"), std::string::npos);
  std::string msg = rejection("dynamodb://AKID:hunter2secret@h?bogus=1");
  EXPECT_EQ(msg.find("hunter2secret"), std::string::npos) << msg;
  EXPECT_THROW((void)open("dynamodb://AKID:hunter2secret@h/path"), InvalidArgument);
}

TEST(DynamoDbUri, TheSchemeIsRegistered) {
  auto schemes = registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "dynamodb"), schemes.end());
}

TEST(DynamoDbUri, TlsCaAndItsDeprecatedSpellingCacert) {
  EXPECT_EQ(parse("dynamodb://k:s@db.example?tls_ca=/ca.pem").ca_file, "/ca.pem");
  EXPECT_EQ(parse("dynamodb://k:s@db.example?cacert=/ca.pem").ca_file, "/ca.pem");
  EXPECT_NE(
      rejection("dynamodb://k:s@db.example?cacert=/a&tls_ca=/b").find("'cacert' and 'tls_ca'"),
      std::string::npos);
}

}  // namespace
}  // namespace leader::dynamodb
