#include "my_rows.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "my_connection.hpp"

namespace leader::mysql {
namespace {

std::int64_t to_int(const std::optional<std::string>& v) {
  std::int64_t out = 0;
  if (v) std::from_chars(v->data(), v->data() + v->size(), out);
  return out;
}

std::map<std::string, std::string> metadata_from(const std::optional<std::string>& text) {
  std::map<std::string, std::string> out;
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

WallTime wall(std::int64_t us) { return detail::wall_time_from_epoch_us(us); }

}  // namespace

GrantRow decode_grant(const RowList& rows) {
  // One row: (outcome, slot, fencing_token).
  if (rows.empty() || rows[0].size() != 3 || !rows[0][0])
    throw BackendError(ErrorCode::internal, kScheme, "the acquire procedure returned no outcome");
  const auto& row = rows[0];
  return GrantRow{*row[0], static_cast<int>(to_int(row[1])),
                  static_cast<std::uint64_t>(to_int(row[2]))};
}

std::vector<Holder> decode_holders(const RowList& rows) {
  std::vector<Holder> out;
  for (const auto& row : rows) {
    out.push_back({row.at(1).value_or(""), row.at(2).value_or(""),
                   static_cast<std::uint64_t>(to_int(row.at(3))),
                   static_cast<int>(to_int(row.at(0))), Duration(to_int(row.at(4)))});
  }
  return out;
}

std::vector<Candidate> decode_candidates(const RowList& rows) {
  std::vector<Candidate> out;
  for (const auto& row : rows) {
    Candidate c;
    c.node_id = row.at(0).value_or("");
    c.registered_at = wall(to_int(row.at(1)));
    c.successes = static_cast<std::uint64_t>(to_int(row.at(2)));
    c.failures = static_cast<std::uint64_t>(to_int(row.at(3)));
    if (row.at(4)) c.last_completion = wall(to_int(row[4]));
    c.metadata = metadata_from(row.at(5));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace leader::mysql
