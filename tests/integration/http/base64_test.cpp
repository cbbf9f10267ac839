// leader::http::base64_encode / base64_decode: RFC 4648 section 10's test vectors, bytes that are
// not text, and every malformed shape the decoder refuses (etcd, Consul and kubeconfig rely on it).
#include "http/base64.hpp"

#include <gtest/gtest.h>

#include <string>

namespace leader::http {
namespace {

TEST(Base64, EncodesTheRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(Base64, DecodesTheRfc4648Vectors) {
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_EQ(base64_decode("Zg=="), "f");
  EXPECT_EQ(base64_decode("Zm8="), "fo");
  EXPECT_EQ(base64_decode("Zm9v"), "foo");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(base64_decode("Zm9vYmFy"), "foobar");
}

TEST(Base64, RoundTripsEveryByteValue) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t n = 0; n <= bytes.size(); n += 37) {
    const std::string part = bytes.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
  EXPECT_EQ(base64_decode(base64_encode(std::string("\0\0\0", 3))), std::string("\0\0\0", 3));
}

TEST(Base64, RefusesMalformedText) {
  EXPECT_EQ(base64_decode("Zg="), std::nullopt);       // length not a multiple of 4
  EXPECT_EQ(base64_decode("Zm9v\n"), std::nullopt);    // whitespace
  EXPECT_EQ(base64_decode(" Zm9v"), std::nullopt);     // (OpenSSL alone would skip it)
  EXPECT_EQ(base64_decode("Zm9-"), std::nullopt);      // base64url's alphabet
  EXPECT_EQ(base64_decode("Z==="), std::nullopt);      // three '='
  EXPECT_EQ(base64_decode("Zg==Zm9v"), std::nullopt);  // '=' before the end
  EXPECT_EQ(base64_decode("Z=9v"), std::nullopt);      // '=' inside a quantum
  EXPECT_EQ(base64_decode("===="), std::nullopt);
}

}  // namespace
}  // namespace leader::http
