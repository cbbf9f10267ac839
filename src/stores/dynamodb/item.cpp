#include "item.hpp"

#include <algorithm>
#include <charconv>

namespace leader::dynamodb {

nlohmann::json s_value(std::string_view v) { return {{"S", std::string(v)}}; }

nlohmann::json n_value(std::int64_t v) { return {{"N", std::to_string(v)}}; }

std::optional<std::string> get_s(const nlohmann::json& item, const std::string& name) {
  auto it = item.find(name);
  if (it == item.end() || !it->is_object()) return std::nullopt;
  auto s = it->find("S");
  if (s == it->end() || !s->is_string()) return std::nullopt;
  return s->get<std::string>();
}

std::optional<std::int64_t> get_n(const nlohmann::json& item, const std::string& name) {
  auto it = item.find(name);
  if (it == item.end() || !it->is_object()) return std::nullopt;
  auto n = it->find("N");
  if (n == it->end() || !n->is_string()) return std::nullopt;
  const std::string& text = n->get_ref<const std::string&>();
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

nlohmann::json item_key(const std::string& pk, const std::string& sk) {
  return {{kPartitionKey, s_value(pk)}, {kSortKey, s_value(sk)}};
}

std::string lease_pk(std::string_view lock) { return "lock#" + std::string(lock); }

std::string candidates_pk(std::string_view group) { return "candidates#" + std::string(group); }

SlotNames::SlotNames(int slot)
    : owner("o" + std::to_string(slot)),
      node("h" + std::to_string(slot)),
      rvn("v" + std::to_string(slot)),
      ttl("d" + std::to_string(slot)),
      token("t" + std::to_string(slot)),
      stamp_rvn("sv" + std::to_string(slot)),
      stamp("s" + std::to_string(slot)) {}

std::vector<SlotRecord> held_slots(const nlohmann::json& item) {
  std::vector<SlotRecord> out;
  for (auto it = item.begin(); it != item.end(); ++it) {
    const std::string& name = it.key();
    if (name.size() < 2 || name[0] != 'o') continue;
    int slot = -1;
    auto [p, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), slot);
    if (ec != std::errc() || p != name.data() + name.size() || slot < 0) continue;
    const SlotNames n(slot);
    SlotRecord r;
    r.slot = slot;
    r.owner = get_s(item, n.owner).value_or("");
    r.node_id = get_s(item, n.node).value_or("");
    r.rvn = get_s(item, n.rvn).value_or("");
    r.ttl = Duration{get_n(item, n.ttl).value_or(0)};
    r.token = static_cast<std::uint64_t>(get_n(item, n.token).value_or(0));
    r.stamp_rvn = get_s(item, n.stamp_rvn).value_or("");
    r.stamp_ms = get_n(item, n.stamp).value_or(0);
    if (!r.owner.empty() && !r.rvn.empty()) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const SlotRecord& a, const SlotRecord& b) { return a.slot < b.slot; });
  return out;
}

}  // namespace leader::dynamodb
