#pragma once
// Internal: owner tokens written in place (leader::new_owner_token() returns them as strings).

#include <cstddef>

namespace leader::detail {

/// Every owner token is this many lower-case hex characters (128 random bits).
inline constexpr std::size_t kOwnerTokenLength = 32;

/// Writes a new owner token, as new_owner_token() makes it, to `out[0..32)` (no terminator).
void write_owner_token(char* out);

}  // namespace leader::detail
