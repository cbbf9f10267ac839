// RESP replies of the Redis store: bytes from the server go through hiredis' redisReader (as
// Connection::exchange feeds it, in pieces) and every complete reply through each decoder of
// the store's script replies (redis/replies.hpp; the reader is the client's,
// redis/reply_reader.hpp).

#include <hiredis/hiredis.h>

#include <memory>

#include "fuzz_support.hpp"
#include "redis/replies.hpp"

namespace {

using namespace leader::redis;

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
struct ReplyDeleter {
  void operator()(void* r) const { freeReplyObject(r); }
};

void decode_all(const redisReply* reply) {
  using leader::fuzz::expect_value_or_error;
  expect_value_or_error([&] { (void)decode_acquire(reply); });
  expect_value_or_error([&] { (void)decode_owned(reply, "renew"); });
  expect_value_or_error([&] { (void)decode_slot_count(reply, 100000); });
  expect_value_or_error([&] { (void)decode_inspect(reply); });
  expect_value_or_error([&] { (void)decode_candidates(reply); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::unique_ptr<redisReader, ReaderDeleter> reader(create_reply_reader());
  // Two feeds split inside the input, as replies arrive over several reads.
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  const char* bytes = reinterpret_cast<const char*>(data);
  for (auto [from, len] : {std::pair{std::size_t{0}, cut}, std::pair{cut, size - cut}}) {
    if (len > 0 && redisReaderFeed(reader.get(), bytes + from, len) != REDIS_OK) return 0;
    while (true) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK) return 0;  // protocol error
      if (raw == nullptr) break;                                          // needs more bytes
      std::unique_ptr<void, ReplyDeleter> reply(raw);
      decode_all(static_cast<const redisReply*>(raw));
    }
  }
  return 0;
}
