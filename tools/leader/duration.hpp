#pragma once
/// @file duration.hpp
/// Durations on the `leader` command line: "30", "500ms", "1m30s", "1h", "1d", "2.5s".

#include <chrono>
#include <string>
#include <string_view>

namespace leader::cli {

/// The longest duration any option accepts (365 days, as the library's kMaxDuration).
inline constexpr std::chrono::milliseconds kMaxCliDuration = std::chrono::hours(24 * 365);

/// Parses a duration: a bare number of seconds ("30", "2.5"), or one or more number+unit parts
/// in decreasing unit order without spaces ("1m30s", "1h30m", "1d12h", "500ms", "250us").
/// Units: d, h, m (or min), s, ms, us. Sub-millisecond totals are rounded up to 1ms.
/// Throws UsageError (exit 64) naming `flag` and saying what to type on bad syntax, a repeated
/// or out-of-order unit, a negative value, or a total above 365 days.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view flag);

}  // namespace leader::cli
