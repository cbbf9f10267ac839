#include "reply_reader.hpp"

namespace leader::redis {
namespace {

// hiredis' own reply constructors, with the array one bounded.
redisReplyObjectFunctions bounded_functions() {
  static void* (*create_array)(const redisReadTask*, int) = nullptr;
  redisReader* probe = redisReaderCreate();
  redisReplyObjectFunctions fns = *probe->fn;
  redisReaderFree(probe);
  create_array = fns.createArray;
  fns.createArray = [](const redisReadTask* task, int elements) -> void* {
    return elements > kMaxReplyElements ? nullptr : create_array(task, elements);
  };
  return fns;
}

}  // namespace

std::string_view text_of(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return {};
  return {r->str, r->len};
}

redisReader* create_reply_reader() {
  static redisReplyObjectFunctions functions = bounded_functions();
  return redisReaderCreateWithFunctions(&functions);
}

}  // namespace leader::redis
