#pragma once
// The C client's completion callbacks: each hands its reply to the waiter (Pending) whose state
// the callback's `data` holds, a heap-allocated shared_ptr<Pending::State> that it frees.

#include <zookeeper/zookeeper.h>

#include "handle.hpp"
#include "session.hpp"

namespace leader::zookeeper::completion {

void on_void(int rc, const void* data);
void on_string(int rc, const char* value, const void* data);
void on_stat(int rc, const struct Stat* stat, const void* data);
void on_data(int rc, const char* value, int len, const struct Stat* stat, const void* data);
void on_string_stat(int rc, const char* value, const struct Stat* stat, const void* data);
void on_strings(int rc, const struct String_vector* strings, const void* data);
/// A setData + create multi: its buffers are the Pending::State's `buffers` (MultiBuffers).
void on_multi(int rc, const void* data);

/// The buffers of one setData + create multi.
struct MultiBuffers {
  zoo_op_result_t results[2]{};
  struct Stat dir_stat {};
  char created[1024]{};
};

}  // namespace leader::zookeeper::completion
