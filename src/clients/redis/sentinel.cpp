#include "sentinel.hpp"

#include "leader/errors.hpp"
#include "reply_reader.hpp"

namespace leader::redis {

SentinelAnswer ask_sentinels(const ClientConfig& config, std::span<const Endpoint> sentinels,
                             Deadline deadline) {
  std::string why;
  bool unknown_name = false;
  for (std::size_t i = 0; i < sentinels.size(); ++i) {
    const Endpoint& s = sentinels[i];
    if (deadline.expired()) {
      why += (why.empty() ? "" : "; ") + std::string("the call's deadline passed before ") +
             std::to_string(sentinels.size() - i) + " more were asked";
      break;
    }
    ClientConfig sc = config;  // a Sentinel: no password, no database, plain TCP
    sc.host = s.host;
    sc.port = s.port;
    sc.user.reset();
    sc.password.reset();
    sc.db = 0;
    sc.sentinels.clear();
    try {
      // This Sentinel's own bound: a frozen one (its kernel still accepts the connection, no
      // reply ever comes) leaves the rest of the call's time to the next.
      const Deadline by = deadline.min(Deadline::after(config.connect_timeout));
      auto c = Connection::open(sc, nullptr, by);
      Reply r = c->call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", config.master_name}, by);
      if (const std::string text = error_text(r.get()); !text.empty()) {
        why += (why.empty() ? "" : "; ") + sc.endpoint() + ": " + text;
        continue;
      }
      if (r->type == REDIS_REPLY_NIL) {
        unknown_name = true;
        why += (why.empty() ? "" : "; ") + sc.endpoint() + " does not monitor '" +
               config.master_name + "'";
        continue;
      }
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        throw BackendError(ErrorCode::internal, "redis",
                           "unexpected reply of Sentinel " + sc.endpoint() +
                               " to SENTINEL GET-MASTER-ADDR-BY-NAME");
      Endpoint primary{std::string(r->element[0]->str, r->element[0]->len), 0};
      const std::string port(r->element[1]->str, r->element[1]->len);
      try {
        primary.port = std::stoi(port);
      } catch (const std::exception&) {
        throw BackendError(ErrorCode::internal, "redis",
                           "Sentinel " + sc.endpoint() + " named port '" + port + "'");
      }
      return {primary, i};
    } catch (const BackendError& e) {
      if (e.code() == ErrorCode::internal) throw;
      why += (why.empty() ? "" : "; ") + std::string("Sentinel ") + sc.endpoint() + ": " + e.what();
    }
  }
  throw BackendError(unknown_name ? ErrorCode::failed_precondition : ErrorCode::unavailable,
                     "redis",
                     "no Sentinel of " + config.redacted_uri + " named the primary of '" +
                         config.master_name + "'" + (why.empty() ? "" : ": " + why));
}

void verify_primary(Connection& c, Deadline deadline) {
  Reply r = c.call({"ROLE"}, deadline);
  const bool named = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                     r->element[0]->type == REDIS_REPLY_STRING;
  const std::string_view name = named ? text_of(r->element[0]) : "";
  if (name == "master") return;
  std::string role = named ? "'" + std::string(name) + "'" : error_text(r.get());
  if (role.empty()) role = "an unexpected reply";
  throw BackendError(ErrorCode::unavailable, "redis",
                     "redis at " + c.endpoint() +
                         ", named primary by a Sentinel, answers ROLE with " + role +
                         " (failover in progress): not used");
}

}  // namespace leader::redis
