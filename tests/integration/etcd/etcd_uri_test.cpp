// etcd:// and etcds:// URI parsing (no server needed).

#include <gtest/gtest.h>

#include "etcd/config.hpp"
#include "leader/leader.hpp"

namespace leader::etcd {
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

TEST(EtcdUri, HostsBecomeEndpointsInOrderWithTheDefaultPort) {
  Config c = parse("etcd://a:1,b,[::1]:3");
  EXPECT_EQ(c.endpoints,
            (std::vector<std::string>{"http://a:1", "http://b:2379", "http://[::1]:3"}));
  EXPECT_EQ(c.prefix, "/leader");
  EXPECT_EQ(parse("etcds://a:1").endpoints[0], "https://a:1");
}

TEST(EtcdUri, OptionsAreParsed) {
  Config c = parse(
      "etcds://u:p%40ss@h:1?prefix=/apps/leader/&connect_timeout=250ms&timeout=3s&cacert=/c&"
      "cert=/x&key=/y");
  EXPECT_EQ(c.prefix, "/apps/leader");
  EXPECT_EQ(c.connect_timeout, Duration{250});
  EXPECT_EQ(c.request_timeout, Duration{3000});
  EXPECT_EQ(*c.user, "u");
  EXPECT_EQ(*c.password, "p@ss");
  EXPECT_EQ(c.ca_file, "/c");
  EXPECT_EQ(c.cert_file, "/x");
  EXPECT_EQ(c.key_file, "/y");
}

TEST(EtcdUri, BadUrisNameTheValueAndTheRuleWithoutThePassword) {
  EXPECT_NE(rejection("etcd://h?bogus=1").find("bogus"), std::string::npos);
  EXPECT_NE(rejection("etcd://h/x").find("prefix"), std::string::npos);
  EXPECT_NE(rejection("etcd://h?prefix=/").find("prefix"), std::string::npos);
  EXPECT_NE(rejection("etcd://h?cacert=/c").find("etcds"), std::string::npos);
  EXPECT_NE(rejection("etcds://h?cert=/c").find("both"), std::string::npos);
  EXPECT_NE(rejection("etcd://h?connect_timeout=0s").find("connect_timeout"), std::string::npos);
  std::string msg = rejection("etcd://u:hunter2@h?bogus=1");
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
  EXPECT_THROW((void)open("etcd://u:hunter2@h/path"), InvalidArgument);
}

TEST(EtcdUri, CanonicalTlsKeysAndTheirDeprecatedSpellings) {
  Config c = parse("etcds://h?tls_ca=/c&tls_cert=/x&tls_key=/y");
  EXPECT_EQ(c.ca_file, "/c");
  EXPECT_EQ(c.cert_file, "/x");
  EXPECT_EQ(c.key_file, "/y");
  Config old = parse("etcds://h?cacert=/c&cert=/x&key=/y");  // docs/uri-parameters.md aliases
  EXPECT_EQ(old.ca_file, c.ca_file);
  EXPECT_EQ(old.cert_file, c.cert_file);
  EXPECT_EQ(old.key_file, c.key_file);
  EXPECT_NE(rejection("etcds://h?cacert=/c&tls_ca=/d").find("'cacert' and 'tls_ca'"),
            std::string::npos);
  EXPECT_NE(rejection("etcds://h?cert=/c&tls_cert=/d&tls_key=/k").find("'cert' and 'tls_cert'"),
            std::string::npos);
  EXPECT_NE(rejection("etcds://h?key=/c&tls_key=/d&tls_cert=/x").find("'key' and 'tls_key'"),
            std::string::npos);
}

}  // namespace
}  // namespace leader::etcd
