// Durations: leader::parse_duration ("500ms", "30s", "5m", "1h", "250us", bare seconds) and
// format_duration, whose output must parse again.

#include "fuzz_support.hpp"
#include "leader/uri.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = leader::fuzz::text_of(data, size);
  leader::fuzz::expect_value_or_error([&] {
    const auto d = leader::parse_duration(text, "fuzz");
    if (d.count() < 0) __builtin_trap();  // a duration is never negative
    const std::string shown = leader::format_duration(d);
    (void)leader::parse_duration(shown, "format_duration output");  // must not throw
  });
  return 0;
}
