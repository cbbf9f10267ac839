#include "duration.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

#include "exit_codes.hpp"

namespace leader::cli {
namespace {

// Units in decreasing order; a compound duration names each at most once, largest first.
constexpr std::array<std::pair<std::string_view, double>, 7> kUnits = {{{"d", 86'400'000.0},
                                                                        {"h", 3'600'000.0},
                                                                        {"min", 60'000.0},
                                                                        {"m", 60'000.0},
                                                                        {"s", 1000.0},
                                                                        {"ms", 1.0},
                                                                        {"us", 0.001}}};

// Index into kUnits of the unit at the start of `rest` (longest match), or -1.
int unit_at(std::string_view rest, std::size_t& length) {
  int best = -1;
  length = 0;
  for (std::size_t i = 0; i < kUnits.size(); ++i) {
    std::string_view name = kUnits[i].first;
    bool at_end_of_unit = rest.size() == name.size() ||
                          (rest.size() > name.size() &&
                           (std::isdigit(static_cast<unsigned char>(rest[name.size()])) != 0 ||
                            rest[name.size()] == '.'));
    if (rest.substr(0, name.size()) == name && at_end_of_unit && name.size() > length) {
      best = static_cast<int>(i);
      length = name.size();
    }
  }
  return best;
}

// "m" and "min" are one unit: their rank in the order of units.
int rank(int unit) { return unit >= 3 ? unit - 1 : unit; }

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view flag) {
  auto bad = [&](const std::string& why) {
    return UsageError(std::string(flag) + ": '" + std::string(text) + "' " + why +
                      "; type a number of seconds or number+unit parts, e.g. 30, 500ms, 45s, "
                      "1m30s, 2h, 1d (units d, h, m, s, ms, us)");
  };
  if (text.empty()) throw bad("is empty");
  double total_ms = 0;
  int last_rank = -1;
  std::string_view rest = text;
  while (!rest.empty()) {
    if (rest.front() == '-') throw bad("is negative");
    if (rest.front() == '+' || std::isspace(static_cast<unsigned char>(rest.front())) != 0)
      throw bad("is not a duration");
    double value = 0;
    auto [end, ec] =
        std::from_chars(rest.data(), rest.data() + rest.size(), value, std::chars_format::fixed);
    if (ec != std::errc() || !std::isfinite(value)) throw bad("is not a duration");
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    if (rest.empty()) {
      if (last_rank >= 0) throw bad("has a number without a unit at the end");
      total_ms = value * 1000.0;  // a bare number: seconds
      break;
    }
    std::size_t length = 0;
    int unit = unit_at(rest, length);
    if (unit < 0) throw bad("has an unknown unit '" + std::string(rest) + "'");
    if (rank(unit) <= last_rank) throw bad("repeats a unit or lists them out of order");
    last_rank = rank(unit);
    total_ms += value * kUnits[static_cast<std::size_t>(unit)].second;
    rest.remove_prefix(length);
  }
  if (total_ms > static_cast<double>(kMaxCliDuration.count()))
    throw UsageError(std::string(flag) + ": '" + std::string(text) +
                     "' is longer than the maximum of 365 days (365d)");
  auto whole = static_cast<std::int64_t>(total_ms);
  if (static_cast<double>(whole) < total_ms) ++whole;  // round sub-millisecond values up
  return std::chrono::milliseconds(whole);
}

}  // namespace leader::cli
