#include "zk_data.hpp"

#include <nlohmann/json.hpp>

#include "leader/detail/store_support.hpp"

namespace leader::zookeeper {
namespace {

using Json = nlohmann::json;

WallTime from_ms(std::int64_t ms) { return detail::wall_time_from_epoch_ms(ms); }

Candidate candidate_from(const Json& j) {
  Candidate c;
  c.node_id = j.value("node_id", "");
  c.registered_at = from_ms(j.value("registered_at_ms", std::int64_t{0}));
  c.successes = j.value("successes", std::uint64_t{0});
  c.failures = j.value("failures", std::uint64_t{0});
  if (j.contains("last_completion_ms") && j["last_completion_ms"].is_number())
    c.last_completion = from_ms(j["last_completion_ms"].get<std::int64_t>());
  if (j.contains("metadata") && j["metadata"].is_object())
    c.metadata = j["metadata"].get<std::map<std::string, std::string>>();
  return c;
}

}  // namespace

std::optional<std::string> recorded_owner(const std::string& data) {
  Json j = Json::parse(data, nullptr, false);
  auto owner = j.is_object() ? j.find("owner") : j.end();
  if (owner == j.end()) return j.is_object() ? std::optional<std::string>("") : std::nullopt;
  if (!owner->is_string()) return std::nullopt;  // not written by this library
  return owner->get<std::string>();
}

void read_holder_data(const std::string& data, const std::string& node_name, Holder& h) {
  Json j = Json::parse(data, nullptr, false);
  const bool ours = j.is_object() && (!j.contains("owner") || j["owner"].is_string()) &&
                    (!j.contains("node_id") || j["node_id"].is_string()) &&
                    (!j.contains("ttl_ms") || j["ttl_ms"].is_number_integer());
  if (ours) {
    h.owner = j.value("owner", "");
    h.node_id = j.value("node_id", "");
    h.expires_in = Duration(j.value("ttl_ms", h.expires_in.count()));
  } else {  // a foreign contender (kazoo writes its identifier, Curator the client's address)
    h.node_id = data;
    h.owner = node_name.substr(0, node_name.find("__"));
  }
}

std::optional<Candidate> parse_candidate(const std::string& data) {
  Json j = Json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  // This library writes whole numbers; a fraction would not convert to an integer safely.
  for (const char* field : {"registered_at_ms", "successes", "failures", "last_completion_ms"})
    if (auto it = j.find(field); it != j.end() && it->is_number() && !it->is_number_integer())
      return std::nullopt;
  try {
    return candidate_from(j);
  } catch (const Json::exception&) {
    return std::nullopt;  // not written by this library
  }
}

bool candidate_expired(const std::string& data, std::int64_t mtime_ms, std::int64_t server_now_ms) {
  Json j = Json::parse(data, nullptr, false);
  auto ttl = j.is_object() ? j.find("ttl_ms") : j.end();
  // Not a ttl this library wrote (missing, not an integer): expired, as a ttl of 0 would be.
  if (ttl == j.end() || !ttl->is_number_integer()) return mtime_ms < server_now_ms;
  std::int64_t until = 0;
  if (__builtin_add_overflow(mtime_ms, ttl->get<std::int64_t>(), &until))
    return ttl->get<std::int64_t>() < 0;
  return until < server_now_ms;
}

}  // namespace leader::zookeeper
