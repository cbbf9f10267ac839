#pragma once
/// @file pg_rows.hpp
/// Decoding of the store's result rows (text format) into leases, holders and candidates,
/// separate from the I/O so that the fuzz harness (tests/fuzz) can feed it any result.

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "leader/store.hpp"

namespace leader::postgres {

/// The row of the grant statement: (outcome, slot, fencing token); on "mismatch" the slot column
/// holds the lock's recorded group size.
struct GrantRow {
  std::string outcome;
  int slot = 0;
  std::uint64_t fencing_token = 0;
};

/// The grant result, or nullopt when it returned no row (contention).
[[nodiscard]] std::optional<GrantRow> decode_grant(PGresult* r);
/// The inspect result: (slot, node_id, owner, token, ms left) per row.
[[nodiscard]] std::vector<Holder> decode_holders(PGresult* r);
/// The list_candidates result: (node_id, registered us, successes, failures, last us, metadata).
[[nodiscard]] std::vector<Candidate> decode_candidates(PGresult* r);

}  // namespace leader::postgres
