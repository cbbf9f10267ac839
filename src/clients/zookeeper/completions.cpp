// The C client's completion callbacks (completions.hpp).

#include "completions.hpp"

#include <cstddef>
#include <memory>
#include <utility>

namespace leader::zookeeper::completion {

namespace {

// Hands `reply` to the waiter; `data` is a heap-allocated shared_ptr<Pending::State>.
void complete(const void* data, Reply reply) {
  auto* holder = static_cast<std::shared_ptr<Pending::State>*>(const_cast<void*>(data));
  std::shared_ptr<Pending::State> st = std::move(*holder);
  delete holder;
  st->finish([&](Reply& r) { r = std::move(reply); });
}

}  // namespace

void on_void(int rc, const void* data) { complete(data, reply_of(rc, nullptr)); }
void on_string(int rc, const char* /*value*/, const void* data) {
  complete(data, reply_of(rc, nullptr));
}
void on_stat(int rc, const struct Stat* stat, const void* data) {
  complete(data, reply_of(rc, stat));
}
void on_data(int rc, const char* value, int len, const struct Stat* stat, const void* data) {
  Reply r = reply_of(rc, stat);
  if (value != nullptr && len > 0) r.value.assign(value, static_cast<std::size_t>(len));
  complete(data, std::move(r));
}
void on_string_stat(int rc, const char* value, const struct Stat* stat, const void* data) {
  Reply r = reply_of(rc, stat);
  if (value != nullptr) r.value = value;
  complete(data, std::move(r));
}
void on_strings(int rc, const struct String_vector* strings, const void* data) {
  Reply r = reply_of(rc, nullptr);
  for (int i = 0; strings != nullptr && i < strings->count; ++i)
    r.children.emplace_back(strings->data[i]);
  complete(data, std::move(r));
}

void on_multi(int rc, const void* data) {
  const auto& st = *static_cast<const std::shared_ptr<Pending::State>*>(data);
  auto buffers = std::static_pointer_cast<MultiBuffers>(st->buffers);
  Reply r = reply_of(rc, rc == ZOK ? &buffers->dir_stat : nullptr);
  if (rc == ZOK) r.value = buffers->created;
  complete(data, std::move(r));
}

}  // namespace leader::zookeeper::completion
