// SigV4: AWS's published test-suite vectors, and the exact header shape of a request the store
// sends (captured on a loopback socket and re-signed independently).

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "dynamodb/client.hpp"
#include "dynamodb/sigv4.hpp"
#include "dynamodb_test_util.hpp"

namespace leader::dynamodb {
namespace {

constexpr const char* kKeyId = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

SigningRequest suite_request(const std::string& method) {
  SigningRequest r;
  r.method = method;
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  r.region = "us-east-1";
  r.service = "service";
  r.amz_date = "20150830T123600Z";
  return r;
}

// aws-sig-v4-test-suite "get-vanilla" and "post-vanilla" (AKIDEXAMPLE, 20150830T123600Z).
TEST(DynamoDbSigV4, MatchesTheAwsTestSuiteVanillaVectors) {
  Signature get = sign_v4(suite_request("GET"), kKeyId, kSecret);
  EXPECT_EQ(get.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(get.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  Signature post = sign_v4(suite_request("POST"), kKeyId, kSecret);
  EXPECT_EQ(post.signature, "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

TEST(DynamoDbSigV4, HeaderNamesAreLowerCasedSortedAndValuesTrimmed) {
  SigningRequest r = suite_request("GET");
  r.headers = {{"X-Amz-Date", "20150830T123600Z"}, {"Host", "  example.amazonaws.com  "}};
  EXPECT_EQ(sign_v4(r, kKeyId, kSecret).signature,
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(amz_date(std::chrono::system_clock::time_point{std::chrono::seconds(1440938160)}),
            "20150830T123600Z");
}

// The value of header `name` (case-insensitive) in a captured request head.
std::string header(const std::string& request, std::string name) {
  std::string lower = request;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto at = lower.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return request.substr(at, request.find("\r\n", at) - at);
}

// True when `s` has exactly `n` characters, all accepted by `ok`.
template <class Pred>
bool all_n(const std::string& s, std::size_t n, Pred ok) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [&](unsigned char c) { return ok(c); });
}

bool is_hex_lower(unsigned char c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); }
bool is_digit(unsigned char c) { return std::isdigit(c) != 0; }

TEST(DynamoDbSigV4, TheStoreSignsContentTypeHostDateAndTargetOfEveryRequest) {
  test::CaptureServer server;
  Config c =
      Config::from_uri(Uri::parse("dynamodb://AKIDEXAMPLE:wJalrXUtnFEMI%2FK7MDENG%2BbPxRf"
                                  "iCYEXAMPLEKEY@127.0.0.1:" +
                                  std::to_string(server.port()) + "?tls=false"));
  Client client(c);
  std::string captured;
  std::thread t([&] { captured = server.request(); });
  (void)client.post("GetItem", {{"TableName", "leader_locks"}},
                    Deadline::after(std::chrono::milliseconds(5000)));
  t.join();
  const std::string auth = header(captured, "Authorization");
  const std::string date = header(captured, "X-Amz-Date");
  ASSERT_EQ(date.size(), 16u) << date;
  EXPECT_TRUE(all_n(date.substr(0, 8), 8, is_digit) && date[8] == 'T' &&
              all_n(date.substr(9, 6), 6, is_digit) && date[15] == 'Z')
      << date;
  const std::string prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" + date.substr(0, 8) +
                             "/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;"
                             "x-amz-date;x-amz-target, Signature=";
  ASSERT_EQ(auth.rfind(prefix, 0), 0u) << auth;
  EXPECT_TRUE(all_n(auth.substr(prefix.size()), 64, is_hex_lower)) << auth;
  EXPECT_EQ(header(captured, "X-Amz-Target"), "DynamoDB_20120810.GetItem");
  EXPECT_EQ(header(captured, "Content-Type"), "application/x-amz-json-1.0");
  EXPECT_EQ(captured.find(kSecret), std::string::npos);
  // Re-sign what went over the wire: the signature must cover exactly these bytes.
  SigningRequest again;
  again.headers = {{"content-type", header(captured, "Content-Type")},
                   {"host", header(captured, "Host")},
                   {"x-amz-date", date},
                   {"x-amz-target", header(captured, "X-Amz-Target")}};
  const std::string body = captured.substr(captured.find("\r\n\r\n") + 4);
  again.payload = body;
  again.region = "us-east-1";
  again.amz_date = date;
  EXPECT_EQ(header(captured, "Host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(sign_v4(again, kKeyId, kSecret).authorization, auth);
  EXPECT_EQ(nlohmann::json::parse(body), (nlohmann::json{{"TableName", "leader_locks"}}));
}

}  // namespace
}  // namespace leader::dynamodb
