#include "pg_rows.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

#include "leader/detail/store_support.hpp"

namespace leader::postgres {
namespace {

std::int64_t to_int(PGresult* r, int row, int col) {
  std::int64_t v = 0;
  const char* s = PQgetvalue(r, row, col);
  std::from_chars(s, s + PQgetlength(r, row, col), v);
  return v;
}

std::map<std::string, std::string> metadata_from(const char* text) {
  std::map<std::string, std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

WallTime wall(std::int64_t us) { return detail::wall_time_from_epoch_us(us); }

}  // namespace

std::optional<GrantRow> decode_grant(PGresult* r) {
  if (PQntuples(r) == 0) return std::nullopt;
  return GrantRow{PQgetvalue(r, 0, 0), static_cast<int>(to_int(r, 0, 1)),
                  static_cast<std::uint64_t>(to_int(r, 0, 2))};
}

std::vector<Holder> decode_holders(PGresult* r) {
  std::vector<Holder> out;
  for (int i = 0; i < PQntuples(r); ++i) {
    out.push_back({PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                   static_cast<std::uint64_t>(to_int(r, i, 3)), static_cast<int>(to_int(r, i, 0)),
                   Duration(to_int(r, i, 4))});
  }
  return out;
}

std::vector<Candidate> decode_candidates(PGresult* r) {
  std::vector<Candidate> out;
  for (int i = 0; i < PQntuples(r); ++i) {
    Candidate c;
    c.node_id = PQgetvalue(r, i, 0);
    c.registered_at = wall(to_int(r, i, 1));
    c.successes = static_cast<std::uint64_t>(to_int(r, i, 2));
    c.failures = static_cast<std::uint64_t>(to_int(r, i, 3));
    if (!PQgetisnull(r, i, 4)) c.last_completion = wall(to_int(r, i, 4));
    c.metadata = metadata_from(PQgetvalue(r, i, 5));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace leader::postgres
