#pragma once
/// @file my_rows.hpp
/// Decoding of the store's result rows (every value as text, nullopt for NULL) into leases,
/// holders and candidates, separate from the I/O so that the fuzz harness (tests/fuzz) can feed
/// it any rows.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "leader/store.hpp"

namespace leader::mysql {

/// The rows of one result, as my_connection.hpp's Rows holds them.
using RowList = std::vector<std::vector<std::optional<std::string>>>;

/// The row of the acquire procedure: (outcome, slot, fencing token); on "mismatch" the slot
/// column holds the lock's recorded group size.
struct GrantRow {
  std::string outcome;
  int slot = 0;
  std::uint64_t fencing_token = 0;
};

/// The acquire result; throws BackendError(internal) when it returned no outcome.
[[nodiscard]] GrantRow decode_grant(const RowList& rows);
/// The inspect result: (slot, node_id, owner, token, ms left) per row.
[[nodiscard]] std::vector<Holder> decode_holders(const RowList& rows);
/// The list_candidates result: (node_id, registered us, successes, failures, last us, metadata).
[[nodiscard]] std::vector<Candidate> decode_candidates(const RowList& rows);

}  // namespace leader::mysql
