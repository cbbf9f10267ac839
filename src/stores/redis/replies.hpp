#pragma once
// Decoding of the Redis store's script replies (hiredis reply trees), separate from the I/O so
// that the fuzz harness (tests/fuzz) can feed it any reply. Malformed replies throw
// BackendError(internal); nothing else escapes. The reply reader (create_reply_reader, text_of)
// is the client's.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "leader/store.hpp"
#include "redis/reply_reader.hpp"

namespace leader::redis {

/// `Granted::slot` when the lock's size names more slots than the request declared.
inline constexpr int kDeclareMoreSlots = -1;
/// `Granted::slot` when the lock is held under another size (single / group of N).
inline constexpr int kHeldAsAnotherSize = -2;

/// The slot and fencing token the acquire script granted, or (slot < 0) why it did not.
struct Granted {
  int slot = 0;  ///< >= 0 granted; kDeclareMoreSlots or kHeldAsAnotherSize otherwise
  std::uint64_t fencing_token = 0;
  int size = 0;  ///< when slot < 0: the lock's stored size (0 single, N group of N)
};

/// The acquire script's reply: nullopt on contention (nil).
[[nodiscard]] std::optional<Granted> decode_acquire(const redisReply* reply);
/// The renew or release script's reply: true when the caller owned the lease.
[[nodiscard]] bool decode_owned(const redisReply* reply, std::string_view operation);
/// The slot count stored with a lock (GET of its slots key), clamped to 1..`max`.
[[nodiscard]] int decode_slot_count(const redisReply* reply, int max);
/// The inspect script's reply ({value, pttl} per slot) as holders, slot = pair index.
[[nodiscard]] std::vector<Holder> decode_inspect(const redisReply* reply);
/// The list_candidates script's reply ({node_id, entry}...).
[[nodiscard]] std::vector<Candidate> decode_candidates(const redisReply* reply);

}  // namespace leader::redis
