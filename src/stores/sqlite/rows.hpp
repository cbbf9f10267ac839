#pragma once
/// @file rows.hpp
/// Decoding of the store's result rows into holders and candidates, separate from the
/// transactions so that the fuzz harness (tests/fuzz) can feed it any row.

#include "connection.hpp"
#include "leader/store.hpp"

namespace leader::sqlite {

/// The current row of the inspect statement: (node_id, owner, token, slot, ms left).
[[nodiscard]] Holder holder_from_row(const Statement& row);
/// The current row of the list_candidates statement: (node_id, registered ms, successes,
/// failures, last ms, metadata); malformed metadata throws BackendError naming `path`.
[[nodiscard]] Candidate candidate_from_row(const Statement& row, const std::string& path);

}  // namespace leader::sqlite
