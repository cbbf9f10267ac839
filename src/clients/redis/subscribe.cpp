// Client::subscribe and Client::wait_for_message: a subscriber connection of its own, as a
// store's watch uses one (a subscribed connection can send nothing else).

#include <algorithm>

#include "client.hpp"
#include "leader/errors.hpp"
#include "reply_reader.hpp"

namespace leader::redis {
namespace {

bool is_message(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         text_of(r->element[0]) == "message";
}

}  // namespace

std::unique_ptr<Connection> Client::subscribe(const std::string& channel) {
  const ClientConfig& config = pool_.config();
  ConnectionPool& pool = pool_for(channel, Deadline::after(config.command_timeout));
  // Sentinel discovery bounds each Sentinel by connect_timeout, the whole by this deadline.
  auto c = pool.open_connection(
      Deadline::after(std::max(config.connect_timeout, config.command_timeout)));
  const Deadline by = Deadline::after(config.command_timeout);
  c->send({"SUBSCRIBE", channel}, by);
  Reply reply = c->next_reply(by, -1);
  if (!reply)
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        "no answer from redis at " + pool.config().endpoint() + " to SUBSCRIBE " + channel);
  if (const std::string text = error_text(reply.get()); !text.empty()) {
    if (text.rfind("NOPERM", 0) == 0) return nullptr;
    throw_reply_error(text, pool.config(), "SUBSCRIBE");
  }
  return c;
}

bool Client::wait_for_message(Connection& subscriber, Deadline until, int stop_fd) {
  for (;;) {
    Reply r = subscriber.next_reply(until, stop_fd);
    if (!r) return false;
    if (!is_message(r.get())) continue;
    const Deadline now(std::chrono::steady_clock::now());
    while (subscriber.next_reply(now, stop_fd)) {
    }
    return true;
  }
}

}  // namespace leader::redis
