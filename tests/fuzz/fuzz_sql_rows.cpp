// SQL result rows to leases, holders and candidates, for PostgreSQL (a PGresult in text format,
// built with libpq's PQmakeEmptyPGresult/PQsetvalue), MariaDB/MySQL (rows of text or NULL) and
// SQLite (a statement whose columns carry the values with SQLite's own typing).
// Input: a store letter (p, m, s), a statement digit (0 acquire, 1 group acquire, 2 inspect,
// 3 list_candidates), a newline, then rows separated by '\n', columns by '\t', "\N" for NULL
// (the text format of psql -A / mariadb -B output).

#include <libpq-fe.h>

#include <charconv>
#include <memory>
#include <optional>

#include "fuzz_support.hpp"
#include "mysql/my_rows.hpp"
#include "postgres/pg_rows.hpp"
#include "sqlite/rows.hpp"

namespace {

using leader::fuzz::expect_value_or_error;
using Cells = std::vector<std::optional<std::string>>;
using Table = std::vector<Cells>;

// Acquire rows are (outcome, slot, fencing token) for single leases and groups alike.
enum Statement : int { kAcquire, kAcquireGroup, kHolders, kCandidates, kStatements };
constexpr int kColumns[kStatements] = {3, 3, 5, 6};

// Rows of exactly `columns` cells (the statement fixes the column count; missing cells are NULL).
Table table_of(std::string_view text, int columns) {
  Table rows;
  if (text.empty()) return rows;
  for (const std::string& line : leader::fuzz::split(text, '\n')) {
    Cells row;
    for (const std::string& cell : leader::fuzz::split(line, '\t')) {
      if (static_cast<int>(row.size()) == columns) break;
      row.push_back(cell == "\\N" ? std::nullopt : std::optional<std::string>(cell));
    }
    row.resize(static_cast<std::size_t>(columns));
    rows.push_back(std::move(row));
  }
  return rows;
}

void postgres(const Table& rows, Statement statement) {
  const int columns = kColumns[statement];
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK),
                                                  &PQclear);
  std::vector<PGresAttDesc> attrs(static_cast<std::size_t>(columns));
  std::vector<std::string> names;
  for (int c = 0; c < columns; ++c) names.push_back("c" + std::to_string(c));
  for (int c = 0; c < columns; ++c) attrs[c] = {names[c].data(), 0, 0, 0, 25 /* text */, -1, -1};
  if (!PQsetResultAttrs(r.get(), columns, attrs.data())) return;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i)
    for (int c = 0; c < columns; ++c) {
      const auto& cell = rows[i][c];
      // A NULL is length -1; PQgetvalue then returns "" as libpq does for server rows.
      if (!PQsetvalue(r.get(), i, c, cell ? const_cast<char*>(cell->c_str()) : nullptr,
                      cell ? static_cast<int>(cell->size()) : -1))
        return;
    }
  namespace pg = leader::postgres;
  expect_value_or_error([&] {
    switch (statement) {
      case kAcquire:
      case kAcquireGroup:
        (void)pg::decode_grant(r.get());
        break;
      case kHolders:
        (void)pg::decode_holders(r.get());
        break;
      default:
        (void)pg::decode_candidates(r.get());
        break;
    }
  });
}

void mysql(const Table& rows, Statement statement) {
  namespace my = leader::mysql;
  expect_value_or_error([&] {
    switch (statement) {
      case kAcquire:
      case kAcquireGroup:
        (void)my::decode_grant(rows);
        break;
      case kHolders:
        (void)my::decode_holders(rows);
        break;
      default:
        (void)my::decode_candidates(rows);
        break;
    }
  });
}

void sqlite(const Table& rows, Statement statement) {
  if (statement != kHolders && statement != kCandidates) return;  // acquire reads ints only
  namespace sq = leader::sqlite;
  static sq::Connection conn(":memory:");
  static sq::Statement select5(conn, "SELECT ?1, ?2, ?3, ?4, ?5");
  static sq::Statement select6(conn, "SELECT ?1, ?2, ?3, ?4, ?5, ?6");
  sq::Statement& q = statement == kHolders ? select5 : select6;
  for (const Cells& row : rows) {
    sq::ResetOnExit reset(q);
    for (int c = 0; c < static_cast<int>(row.size()); ++c) {
      std::int64_t v = 0;
      const std::string* s = row[c] ? &*row[c] : nullptr;
      if (s == nullptr)
        q.bind_null(c + 1);
      else if (auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
               ec == std::errc() && p == s->data() + s->size())
        q.bind(c + 1, v);  // SQLite stores integers as integers
      else
        q.bind(c + 1, std::string_view(*s));
    }
    expect_value_or_error([&] {
      if (!q.step("fuzz select")) return;
      if (statement == kHolders)
        (void)sq::holder_from_row(q);
      else
        (void)sq::candidate_from_row(q, "fuzz.db");
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const char store = data[0] == 'p' || data[0] == 'm' || data[0] == 's' ? static_cast<char>(data[0])
                                                                        : "pms"[data[0] % 3];
  const auto statement = static_cast<Statement>(
      data[1] >= '0' && data[1] < '0' + kStatements ? data[1] - '0' : data[1] % kStatements);
  std::string text = leader::fuzz::text_of(data + 2, size - 2);
  if (!text.empty() && text[0] == '\n') text.erase(0, 1);
  const Table rows = table_of(text, kColumns[statement]);
  if (rows.size() > 64) return 0;  // results of this store are a handful of rows
  if (store == 'p') postgres(rows, statement);
  if (store == 'm') mysql(rows, statement);
  if (store == 's') sqlite(rows, statement);
  return 0;
}
