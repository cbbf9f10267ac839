#include "sigv4.hpp"

#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

namespace leader::dynamodb {
namespace {

std::string hex(const unsigned char* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 0x0f];
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Trims the value and collapses runs of spaces into one, as the canonical form requires.
std::string canonical_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex(digest, sizeof digest);
}

std::string amz_date(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[17];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

Signature sign_v4(const SigningRequest& r, std::string_view access_key_id,
                  std::string_view secret_access_key) {
  std::map<std::string, std::string> headers;  // sorted by lower-case name
  for (const auto& [name, value] : r.headers) {
    auto& slot = headers[lower(name)];
    slot += (slot.empty() ? "" : ",") + canonical_value(value);
  }
  Signature s;
  std::string canonical_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers.append(name).append(":").append(value).append("\n");
    s.signed_headers += (s.signed_headers.empty() ? "" : ";") + name;
  }
  s.canonical_request = r.method + "\n" + r.path + "\n" + r.query + "\n" + canonical_headers +
                        "\n" + s.signed_headers + "\n" + sha256_hex(r.payload);
  const std::string date = r.amz_date.substr(0, 8);
  const std::string scope = date + "/" + r.region + "/" + r.service + "/aws4_request";
  s.string_to_sign =
      "AWS4-HMAC-SHA256\n" + r.amz_date + "\n" + scope + "\n" + sha256_hex(s.canonical_request);
  std::string key = hmac("AWS4" + std::string(secret_access_key), date);
  key = hmac(key, r.region);
  key = hmac(key, r.service);
  key = hmac(key, "aws4_request");
  const std::string mac = hmac(key, s.string_to_sign);
  s.signature = hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  s.authorization = "AWS4-HMAC-SHA256 Credential=" + std::string(access_key_id) + "/" + scope +
                    ", SignedHeaders=" + s.signed_headers + ", Signature=" + s.signature;
  return s;
}

}  // namespace leader::dynamodb
