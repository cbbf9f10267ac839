#pragma once
// Shared by the libFuzzer harnesses. The contract every harness checks: a parser either returns a
// value or throws leader::Error (InvalidArgument, BackendError); any other exception, a crash,
// or a sanitizer report (ASan, UBSan) is a finding.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leader/errors.hpp"

namespace leader::fuzz {

/// The fuzzer's bytes as a string.
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `parse`; a leader::Error is the documented way to reject input and is swallowed.
template <typename F>
void expect_value_or_error(F&& parse) {
  try {
    parse();
  } catch (const leader::Error&) {
  }
}

/// `text` split at every `sep`.
inline std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    auto at = text.find(sep);
    out.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

}  // namespace leader::fuzz
