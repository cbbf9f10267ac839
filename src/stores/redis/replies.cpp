#include "replies.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <sstream>
#include <string>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"

namespace leader::redis {
namespace {

std::uint64_t parse_u64(std::string_view text) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw BackendError(ErrorCode::internal, "redis",
                       "unexpected fencing token '" + std::string(text) + "' from the server");
  return v;
}

[[noreturn]] void unexpected(std::string_view operation) {
  throw BackendError(ErrorCode::internal, "redis", "unexpected reply to " + std::string(operation));
}

// A value written by this library: "<owner> <fencing token> <node id>".
std::optional<Holder> parse_value(std::string_view v) {
  auto a = v.find(' ');
  if (a == std::string_view::npos) return std::nullopt;
  auto b = v.find(' ', a + 1);
  if (b == std::string_view::npos || b == a + 1) return std::nullopt;
  Holder h;
  auto fence = v.substr(a + 1, b - a - 1);
  auto [p, ec] = std::from_chars(fence.data(), fence.data() + fence.size(), h.fencing_token);
  if (ec != std::errc() || p != fence.data() + fence.size()) return std::nullopt;
  h.owner = std::string(v.substr(0, a));
  h.node_id = std::string(v.substr(b + 1));
  return h;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      out += static_cast<char>(v);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A candidate entry: "<expiry ms> <registered_at us> <successes> <failures> <last us|-> <meta>".
Candidate decode_entry(std::string node_id, std::string_view value) {
  Candidate c;
  c.node_id = std::move(node_id);
  std::istringstream in{std::string(value)};
  std::int64_t expiry = 0;
  std::int64_t registered = 0;
  std::string last;
  in >> expiry >> registered >> c.successes >> c.failures >> last;
  if (!in)
    throw BackendError(ErrorCode::internal, "redis",
                       "malformed candidate entry for node '" + c.node_id + "'");
  c.registered_at = detail::wall_time_from_epoch_us(registered);
  if (last != "-") {
    std::int64_t us = 0;
    auto [p, ec] = std::from_chars(last.data(), last.data() + last.size(), us);
    if (ec != std::errc() || p != last.data() + last.size())
      throw BackendError(
          ErrorCode::internal, "redis",
          "malformed last completion in the candidate entry of node '" + c.node_id + "'");
    c.last_completion = detail::wall_time_from_epoch_us(us);
  }
  std::string meta;
  in.get();  // the separating space
  std::getline(in, meta);
  std::string_view rest = meta;
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto part = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    c.metadata[unescape(part.substr(0, eq))] = unescape(part.substr(eq + 1));
  }
  return c;
}

}  // namespace

std::optional<Granted> decode_acquire(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_NIL) return std::nullopt;
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
      reply->element[0]->type != REDIS_REPLY_INTEGER)
    unexpected("acquire");
  Granted g;
  const long long slot = reply->element[0]->integer;
  if (slot == kDeclareMoreSlots || slot == kHeldAsAnotherSize) {
    auto text = text_of(reply->element[1]);
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), g.size);
    if (ec != std::errc() || p != text.data() + text.size() || g.size < 0) unexpected("acquire");
    g.slot = static_cast<int>(slot);
    return g;
  }
  if (slot < 0 || slot > std::numeric_limits<int>::max()) unexpected("acquire");
  g.fencing_token = parse_u64(text_of(reply->element[1]));
  g.slot = static_cast<int>(slot);
  return g;
}

bool decode_owned(const redisReply* reply, std::string_view operation) {
  if (reply->type != REDIS_REPLY_INTEGER) unexpected(operation);
  return reply->integer == 1;
}

int decode_slot_count(const redisReply* reply, int max) {
  int slots = 1;
  if (reply->type == REDIS_REPLY_STRING) {
    auto text = text_of(reply);
    std::from_chars(text.data(), text.data() + text.size(), slots);
    slots = std::clamp(slots, 1, max);
  }
  return slots;
}

std::vector<Holder> decode_inspect(const redisReply* reply) {
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) unexpected("inspect");
  std::vector<Holder> holders;
  for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
    const redisReply* value = reply->element[i];
    const redisReply* pttl = reply->element[i + 1];
    if (value->type != REDIS_REPLY_STRING || pttl->type != REDIS_REPLY_INTEGER) continue;
    if (pttl->integer == -2) continue;  // expired between GET and PTTL
    // A value of another client (redis-py Lock, plain SET NX) holds the lock too.
    Holder h = parse_value(text_of(value)).value_or(Holder{"unknown", "", 0, 0, {}});
    h.slot = static_cast<int>(i / 2);
    h.expires_in = pttl->integer < 0 ? Duration::max() : Duration(pttl->integer);
    holders.push_back(std::move(h));
  }
  return holders;
}

std::vector<Candidate> decode_candidates(const redisReply* reply) {
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0)
    throw BackendError(ErrorCode::internal, "redis", "unexpected reply to list_candidates");
  std::vector<Candidate> out;
  for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
    const redisReply* node = reply->element[i];
    const redisReply* value = reply->element[i + 1];
    out.push_back(
        decode_entry(std::string(node->str, node->len), std::string_view(value->str, value->len)));
  }
  return out;
}

}  // namespace leader::redis
