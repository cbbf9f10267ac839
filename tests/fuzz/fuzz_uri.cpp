// Store URIs: leader::Uri::parse, redacted() and the typed parameter accessors.

#include "fuzz_support.hpp"
#include "leader/uri.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = leader::fuzz::text_of(data, size);
  leader::fuzz::expect_value_or_error([&] {
    const leader::Uri uri = leader::Uri::parse(text);
    (void)uri.redacted();
    for (const auto& entry : uri.query) {
      const std::string& key = entry.first;
      if (uri.param(key) != entry.second) __builtin_trap();  // every parsed parameter reads back
      leader::fuzz::expect_value_or_error([&] { (void)uri.duration_param(key, {}); });
      leader::fuzz::expect_value_or_error([&] { (void)uri.bool_param(key, false); });
    }
    leader::fuzz::expect_value_or_error([&] { uri.expect_params({"timeout", "password"}); });
    for (const auto& host : uri.hosts)
      if (host.port && (*host.port < 1 || *host.port > 65535)) __builtin_trap();
  });
  return 0;
}
