// The candidate registry of strategic elections: one hash per group, one field per node, each
// entry "<expiry ms> <registered_at us> <payload>" with server-side times (see README.md).

#include "leader/errors.hpp"
#include "redis_store.hpp"
#include "replies.hpp"

namespace leader::redis {
namespace {

using Micros = std::chrono::microseconds;

std::string escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c == '&' || c == '=' || c >= 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::int64_t to_micros(WallTime t) {
  return std::chrono::duration_cast<Micros>(t.time_since_epoch()).count();
}

// "<successes> <failures> <last completion us or -> <k=v&k=v>"
std::string encode_payload(const Candidate& c) {
  std::string out = std::to_string(c.successes) + " " + std::to_string(c.failures) + " " +
                    (c.last_completion ? std::to_string(to_micros(*c.last_completion)) : "-") + " ";
  bool first = true;
  for (const auto& [k, v] : c.metadata) {
    if (!first) out += '&';
    first = false;
    out += escape(k) + "=" + escape(v);
  }
  return out;
}

}  // namespace

void RedisStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                               Deadline deadline) {
  (void)eval(put_candidate_script(), {tagged_key(group, "candidates")},
             {candidate.node_id, std::to_string(ttl.count()), encode_payload(candidate)}, deadline);
}

std::vector<Candidate> RedisStore::list_candidates(std::string_view group, Deadline deadline) {
  Reply reply = eval(list_candidates_script(), {tagged_key(group, "candidates")}, {}, deadline);
  return decode_candidates(reply.get());
}

void RedisStore::remove_candidate(std::string_view group, std::string_view node_id,
                                  Deadline deadline) {
  (void)command({"HDEL", tagged_key(group, "candidates"), std::string(node_id)}, deadline);
}

}  // namespace leader::redis
