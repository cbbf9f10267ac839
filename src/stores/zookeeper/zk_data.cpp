#include "zk_data.hpp"

#include <nlohmann/json.hpp>

namespace leader::detail::zk {
namespace {

using Json = nlohmann::json;

WallTime from_ms(std::int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); }

}  // namespace

std::optional<std::string> recorded_owner(const std::string& data) {
  Json j = Json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j.value("owner", "");
}

void read_holder_data(const std::string& data, const std::string& node_name, Holder& h) {
  Json j = Json::parse(data, nullptr, false);
  if (j.is_object()) {
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

bool candidate_expired(const std::string& data, std::int64_t mtime_ms, std::int64_t server_now_ms) {
  Json j = Json::parse(data, nullptr, false);
  const std::int64_t ttl_ms = j.value("ttl_ms", std::int64_t{0});
  return mtime_ms + ttl_ms < server_now_ms;
}

}  // namespace leader::detail::zk
