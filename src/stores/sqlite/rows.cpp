#include "rows.hpp"

#include <nlohmann/json.hpp>

#include "leader/detail/store_support.hpp"

namespace leader::sqlite {
namespace {

WallTime wall_from_ms(std::int64_t v) { return detail::wall_time_from_epoch_ms(v); }

std::map<std::string, std::string> metadata_from(const std::string& text, const std::string& path) {
  try {
    return nlohmann::json::parse(text).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw sqlite_error(ErrorCode::internal, "database '" + path +
                                                "': candidate metadata is not a JSON object of "
                                                "strings: " +
                                                e.what());
  }
}

}  // namespace

Holder holder_from_row(const Statement& row) {
  return Holder{row.text_at(0), row.text_at(1), static_cast<std::uint64_t>(row.int_at(2)),
                static_cast<int>(row.int_at(3)), Duration(row.int_at(4))};
}

Candidate candidate_from_row(const Statement& row, const std::string& path) {
  Candidate c;
  c.node_id = row.text_at(0);
  c.registered_at = wall_from_ms(row.int_at(1));
  c.successes = static_cast<std::uint64_t>(row.int_at(2));
  c.failures = static_cast<std::uint64_t>(row.int_at(3));
  if (!row.null_at(4)) c.last_completion = wall_from_ms(row.int_at(4));
  c.metadata = metadata_from(row.text_at(5), path);
  return c;
}

}  // namespace leader::sqlite
