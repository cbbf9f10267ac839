#include "leader/cron.hpp"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <vector>

#include "leader/errors.hpp"

namespace leader {
namespace {

struct FieldSpec {
  const char* name;
  int min;
  int max;
  const char* const* names;  ///< lower-case names of min..min+n-1, or nullptr
  int names_base;            ///< the value of names[0]
  int name_count;
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

constexpr FieldSpec kSecond{"second", 0, 59, nullptr, 0, 0};
constexpr FieldSpec kMinute{"minute", 0, 59, nullptr, 0, 0};
constexpr FieldSpec kHour{"hour", 0, 23, nullptr, 0, 0};
constexpr FieldSpec kDay{"day of month", 1, 31, nullptr, 0, 0};
constexpr FieldSpec kMonth{"month", 1, 12, kMonthNames, 1, 12};
constexpr FieldSpec kWeekday{"day of week", 0, 7, kDayNames, 0, 7};

[[noreturn]] void refuse(std::string_view expr, const FieldSpec& spec, std::string_view part,
                         const std::string& rule) {
  throw InvalidArgument("cron expression '" + std::string(expr) + "': " + spec.name + " field '" +
                        std::string(part) + "' " + rule);
}

int parse_value(std::string_view expr, const FieldSpec& spec, std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int i = 0; i < spec.name_count; ++i)
    if (lower == spec.names[i]) return spec.names_base + i;
  int value = -1;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || end != text.data() + text.size() || text.empty())
    refuse(expr, spec, text, "is not a number" + std::string(spec.names ? " or a name" : ""));
  if (value < spec.min || value > spec.max)
    refuse(expr, spec, text,
           "is out of range " + std::to_string(spec.min) + "-" + std::to_string(spec.max));
  return value;
}

// Parses one element of a list: `*`, `?`, `a`, `a-b`, each optionally followed by `/step`.
void parse_element(std::string_view expr, const FieldSpec& spec, std::string_view part,
                   std::vector<bool>& out) {
  std::string_view range = part;
  int step = 1;
  if (auto slash = part.find('/'); slash != std::string_view::npos) {
    range = part.substr(0, slash);
    std::string_view step_text = part.substr(slash + 1);
    auto [end, err] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
    if (err != std::errc() || end != step_text.data() + step_text.size() || step < 1)
      refuse(expr, spec, part, "has a bad step (a positive number after '/')");
  }
  int lo = spec.min, hi = spec.max;
  bool star = range == "*" || range == "?";
  if (!star) {
    if (auto dash = range.find('-'); dash != std::string_view::npos) {
      lo = parse_value(expr, spec, range.substr(0, dash));
      hi = parse_value(expr, spec, range.substr(dash + 1));
      if (hi < lo) refuse(expr, spec, part, "is a range whose end is before its start");
    } else {
      lo = parse_value(expr, spec, range);
      hi = part.find('/') != std::string_view::npos ? spec.max : lo;  // `a/n`: a to max
    }
  }
  for (int v = lo; v <= hi; v += step) out[static_cast<std::size_t>(v - spec.min)] = true;
}

// Refuses Quartz's `L`, `W` and `#` (last day, nearest weekday, n-th weekday) with a clear
// message; letters inside names (`jul`, `wed`) are fine.
void refuse_extensions(std::string_view expr, const FieldSpec& spec, std::string_view text) {
  if (text.find('#') != std::string_view::npos)
    refuse(expr, spec, text, "uses '#' (n-th weekday), which is not supported");
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < lower.size(); ++i) {
    char c = lower[i];
    if (c != 'l' && c != 'w') continue;
    bool after_letter = i > 0 && std::isalpha(static_cast<unsigned char>(lower[i - 1])) &&
                        !(lower[i - 1] == 'l' && c == 'w');
    bool before_letter = i + 1 < lower.size() &&
                         std::isalpha(static_cast<unsigned char>(lower[i + 1])) &&
                         !(c == 'l' && lower[i + 1] == 'w');
    if (after_letter || before_letter) continue;  // part of a name
    refuse(expr, spec, text,
           std::string("uses '") + static_cast<char>(std::toupper(c)) +
               (c == 'l' ? "' (last)" : "' (nearest weekday)") + ", which is not supported");
  }
}

// Parses a whole field into flags indexed from spec.min.
std::vector<bool> parse_field(std::string_view expr, const FieldSpec& spec, std::string_view text) {
  refuse_extensions(expr, spec, text);
  std::vector<bool> out(static_cast<std::size_t>(spec.max - spec.min + 1), false);
  if (text.empty()) refuse(expr, spec, text, "is empty");
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view part = text.substr(start, comma - start);
    if (part.empty()) refuse(expr, spec, text, "has an empty list element");
    parse_element(expr, spec, part, out);
    start = comma + 1;
  }
  return out;
}

template <std::size_t N>
std::bitset<N> to_bits(const std::vector<bool>& flags, int offset) {
  std::bitset<N> bits;
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (flags[i]) bits.set(i + static_cast<std::size_t>(offset));
  return bits;
}

std::string expand_macro(std::string_view expr) {
  std::string lower(expr);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "@yearly" || lower == "@annually") return "0 0 1 1 *";
  if (lower == "@monthly") return "0 0 1 * *";
  if (lower == "@weekly") return "0 0 * * 0";
  if (lower == "@daily" || lower == "@midnight") return "0 0 * * *";
  if (lower == "@hourly") return "0 * * * *";
  throw InvalidArgument("cron expression '" + std::string(expr) +
                        "': unknown macro (known: @yearly, @annually, @monthly, @weekly, @daily, "
                        "@midnight, @hourly; @reboot is not supported)");
}

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

const date::time_zone* find_zone(std::string_view name) {
  try {
    return date::locate_zone(std::string(name));
  } catch (const std::exception& e) {
    throw InvalidArgument("time zone '" + std::string(name) +
                          "' is not known (use UTC or an IANA name such as Europe/Berlin; the "
                          "tz database is read from /usr/share/zoneinfo): " +
                          e.what());
  }
}

}  // namespace

CronSchedule CronSchedule::parse(std::string_view expression, std::string_view time_zone) {
  CronSchedule s;
  s.expression_ = std::string(expression);
  s.zone_name_ = std::string(time_zone);
  s.zone_ = find_zone(time_zone);
  std::string text(expression);
  auto first = split_fields(text);
  if (first.size() == 1 && first[0].starts_with("@")) text = expand_macro(first[0]);
  auto fields = split_fields(text);
  if (fields.size() != 5 && fields.size() != 6)
    throw InvalidArgument("cron expression '" + std::string(expression) + "' has " +
                          std::to_string(fields.size()) +
                          " fields; it needs 5 (minute hour day-of-month month day-of-week) or 6 "
                          "(second first)");
  s.has_seconds_ = fields.size() == 6;
  std::size_t i = 0;
  s.f_.seconds = s.has_seconds_ ? to_bits<60>(parse_field(expression, kSecond, fields[i++]), 0)
                                : std::bitset<60>(1);
  s.f_.minutes = to_bits<60>(parse_field(expression, kMinute, fields[i++]), 0);
  s.f_.hours = to_bits<24>(parse_field(expression, kHour, fields[i++]), 0);
  s.f_.days_star = fields[i].starts_with("*") || fields[i] == "?";
  s.f_.days = to_bits<32>(parse_field(expression, kDay, fields[i++]), 1);
  s.f_.months = to_bits<13>(parse_field(expression, kMonth, fields[i++]), 1);
  s.f_.weekdays_star = fields[i].starts_with("*") || fields[i] == "?";
  auto weekdays = to_bits<8>(parse_field(expression, kWeekday, fields[i]), 0);
  if (weekdays.test(7)) weekdays.set(0);  // 7 is Sunday too
  s.f_.weekdays = std::bitset<7>(weekdays.to_ulong() & 0x7f);
  if (!s.next_after(WallTime{} + std::chrono::hours(24 * 365 * 30)))
    throw InvalidArgument("cron expression '" + std::string(expression) +
                          "' never fires (no such day in the months it names)");
  return s;
}

bool CronSchedule::day_matches(int year, unsigned month, unsigned day) const {
  date::year_month_day ymd{date::year{year}, date::month{month}, date::day{day}};
  unsigned weekday = date::weekday{date::sys_days{ymd}}.c_encoding();
  bool dom = f_.days.test(day);
  bool dow = f_.weekdays.test(weekday);
  if (f_.days_star || f_.weekdays_star) return dom && dow;
  return dom || dow;
}

std::optional<WallTime> CronSchedule::next_after(WallTime after) const {
  using namespace std::chrono;
  const auto* zone = static_cast<const date::time_zone*>(zone_);
  auto after_s = floor<seconds>(after);
  auto local = zone->to_local(after_s) + seconds(1);
  const auto limit = local + hours(24 * 366 * 30);
  while (local < limit) {
    auto day_start = floor<days>(local);
    date::year_month_day ymd{day_start};
    date::hh_mm_ss tod{local - day_start};
    auto month = static_cast<unsigned>(ymd.month());
    if (!f_.months.test(month)) {
      auto next = ymd.year() / ymd.month() / date::day{1} + date::months{1};
      local = date::local_seconds{date::local_days{next}};
      continue;
    }
    if (!day_matches(static_cast<int>(ymd.year()), month, static_cast<unsigned>(ymd.day()))) {
      local = day_start + days(1);
      continue;
    }
    auto h = static_cast<std::size_t>(tod.hours().count());
    auto m = static_cast<std::size_t>(tod.minutes().count());
    auto sec = static_cast<std::size_t>(tod.seconds().count());
    if (!f_.hours.test(h)) {
      local = day_start + hours(h + 1);
      continue;
    }
    if (!f_.minutes.test(m)) {
      local = day_start + hours(h) + minutes(m + 1);
      continue;
    }
    if (!f_.seconds.test(sec)) {
      local += seconds(1);
      continue;
    }
    // A matching local time: map it to an instant (DST rules in the file comment of cron.hpp).
    auto info = zone->get_info(local);
    // unique or ambiguous (then its first occurrence): the first offset; in a gap, the first
    // instant after it.
    const date::sys_seconds at =
        info.result == date::local_info::nonexistent
            ? info.second.begin
            : date::sys_seconds{local.time_since_epoch()} - info.first.offset;
    if (at > after_s) return WallTime{duration_cast<WallTime::duration>(at.time_since_epoch())};
    local += seconds(1);
  }
  return std::nullopt;
}

}  // namespace leader
