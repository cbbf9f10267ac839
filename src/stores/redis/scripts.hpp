#pragma once
// The Lua scripts of the Redis store. Each store operation is exactly one of these scripts (or
// one plain command), executed atomically by the server. See README.md for the key layout.

#include "redis/script.hpp"

namespace leader::redis {

/// Acquire: KEYS = slot keys 0..k-1 (k >= n), fence, size; ARGV = owner, node_id, ttl_ms, the
/// request's size (0 single, N group of N), the lock's channel (publishes on a grant). Returns
/// {slot, fencing token as a decimal string},
/// {-1, size} (declare max(1, size) slot keys and ask again), {-2, size} (held under another
/// size), or nil on contention.
const Script& acquire_script();
/// Renew: KEYS = lease key; ARGV = owner, ttl_ms, the lock's channel (publishes when the ttl
/// shortens the lease). Returns 1 if owned (and extended), else 0.
const Script& renew_script();
/// Release: KEYS = lease key; ARGV = owner, keep_ms, the lock's channel (publishes when owned).
/// Returns 1 if owned, else 0.
const Script& release_script();
/// Inspect: KEYS = slot keys 0..n-1. Returns {value|nil, pttl} per slot (read only).
const Script& inspect_script();
/// Put candidate: KEYS = registry; ARGV = node_id, ttl_ms, payload. Returns registered_at (us).
const Script& put_candidate_script();
/// List candidates: KEYS = registry. Evicts expired entries, returns {node_id, value}...
const Script& list_candidates_script();

}  // namespace leader::redis
