// The candidate registry of strategic elections: one hash per group, one field per node, each
// entry "<expiry ms> <registered_at us> <payload>" with server-side times (see README.md).

#include <charconv>
#include <sstream>

#include "leader/errors.hpp"
#include "redis_store.hpp"

namespace leader::detail::redis {
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

std::int64_t to_micros(WallTime t) {
  return std::chrono::duration_cast<Micros>(t.time_since_epoch()).count();
}

WallTime from_micros(std::int64_t us) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(Micros(us)));
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
  c.registered_at = from_micros(registered);
  if (last != "-") c.last_completion = from_micros(std::stoll(last));
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

void check_group(std::string_view group) {
  if (group.empty() || group.find_first_of("{} \r\n") != std::string_view::npos)
    throw InvalidArgument("candidate group '" + std::string(group) +
                          "' must be non-empty without braces or white space");
}

}  // namespace

void RedisStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                               Deadline deadline) {
  check_group(group);
  if (candidate.node_id.empty()) throw InvalidArgument("candidate node_id must not be empty");
  if (ttl <= Duration{0}) throw InvalidArgument("candidate ttl must be positive");
  (void)eval(put_candidate_script(), {candidates_key(group)},
             {candidate.node_id, std::to_string(ttl.count()), encode_payload(candidate)}, deadline);
}

std::vector<Candidate> RedisStore::list_candidates(std::string_view group, Deadline deadline) {
  check_group(group);
  Reply reply = eval(list_candidates_script(), {candidates_key(group)}, {}, deadline);
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

void RedisStore::remove_candidate(std::string_view group, std::string_view node_id,
                                  Deadline deadline) {
  check_group(group);
  (void)command({"HDEL", candidates_key(group), std::string(node_id)}, deadline);
}

}  // namespace leader::detail::redis
