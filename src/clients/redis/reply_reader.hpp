#pragma once
// Reading RESP replies with hiredis' redisReader, bounded, and the text of a reply. Separate from
// the I/O so that the fuzz harness (tests/fuzz) can feed the reader any bytes.

#include <hiredis/hiredis.h>

#include <string_view>

namespace leader::redis {

/// Most elements a multi-bulk reply may announce: enough for leader's largest reply (two per
/// slot of a group of at most 100000 slots).
inline constexpr int kMaxReplyElements = 1 << 18;

/// A hiredis reply reader that refuses (as "Out of memory") a multi-bulk reply announcing more
/// than kMaxReplyElements elements: hiredis 0.14 allocates the element array from the count on
/// the wire before any element arrives. Free with redisReaderFree.
[[nodiscard]] redisReader* create_reply_reader();

/// The text of a string or status reply; empty for any other reply or null.
[[nodiscard]] std::string_view text_of(const redisReply* r);

}  // namespace leader::redis
