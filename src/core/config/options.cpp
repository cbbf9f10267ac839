#include "leader/options.hpp"

#include <algorithm>
#include <string>

#include "leader/errors.hpp"
#include "leader/uri.hpp"

namespace leader {
namespace {

[[noreturn]] void reject(std::string_view type, std::string_view field, Duration value,
                         std::string_view rule) {
  throw InvalidArgument(std::string(type) + "." + std::string(field) + " = " +
                        format_duration(value) + " breaks the rule: " + std::string(rule));
}

template <class Options>
void validate_common(const Options& o, std::string_view type) {
  const std::pair<std::string_view, Duration> durations[] = {{"wait_time", o.wait_time},
                                                             {"lease_time", o.lease_time},
                                                             {"min_lease_time", o.min_lease_time},
                                                             {"safety_margin", o.safety_margin},
                                                             {"call_timeout", o.call_timeout}};
  for (const auto& [field, value] : durations) check_duration_bound(type, field, value);
  if (o.wait_time < Duration{0}) reject(type, "wait_time", o.wait_time, "wait_time >= 0");
  if (o.lease_time <= Duration{0}) reject(type, "lease_time", o.lease_time, "lease_time > 0");
  if (o.min_lease_time < Duration{0} || o.min_lease_time > o.lease_time)
    reject(type, "min_lease_time", o.min_lease_time, "0 <= min_lease_time <= lease_time");
  if (o.safety_margin < Duration{0} || o.safety_margin >= o.lease_time)
    reject(type, "safety_margin", o.safety_margin, "0 <= safety_margin < lease_time");
  if (o.auto_extend && o.safety_margin > o.lease_time / 2)
    reject(type, "safety_margin", o.safety_margin,
           "safety_margin <= lease_time / 2 with auto_extend (renewals run at lease_time / 3)");
  if (o.call_timeout < Duration{0})
    reject(type, "call_timeout", o.call_timeout, "call_timeout >= 0 (0 = automatic)");
  if (o.node_id.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InvalidArgument(std::string(type) + ".node_id is blank; it must name this replica");
  if (o.node_id.size() > 255)
    throw InvalidArgument(std::string(type) + ".node_id is longer than 255 characters");
  // The stores' rule (CheckedStore), checked here once: the elector's own requests skip it.
  const auto control = std::find_if(o.node_id.begin(), o.node_id.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (control != o.node_id.end())
    throw InvalidArgument(std::string(type) + ".node_id has a control character at position " +
                          std::to_string(control - o.node_id.begin()));
}

}  // namespace

void check_duration_bound(std::string_view type, std::string_view field, Duration value) {
  if (value > kMaxDuration)
    reject(type, field, value,
           std::string(field) + " <= 365 days (longer overflows the deadline arithmetic)");
}

void ElectionOptions::validate() const { validate_common(*this, "ElectionOptions"); }

Duration ElectionOptions::effective_safety_margin() const {
  return safety_margin > Duration{0} ? safety_margin : lease_time / 5;
}

Duration ElectionOptions::effective_call_timeout() const {
  if (call_timeout > Duration{0}) return call_timeout;
  return std::clamp(lease_time / 3, Duration{1}, Duration{std::chrono::seconds(10)});
}

void GroupOptions::validate() const {
  validate_common(election, "GroupOptions.election");
  if (max_leaders < 1)
    throw InvalidArgument("GroupOptions.max_leaders = " + std::to_string(max_leaders) +
                          " breaks the rule: max_leaders >= 1");
  if (max_leaders > 1000)
    throw InvalidArgument("GroupOptions.max_leaders = " + std::to_string(max_leaders) +
                          " breaks the rule: max_leaders <= 1000");
}

}  // namespace leader
