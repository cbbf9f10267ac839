#include "api.hpp"

#include <array>
#include <cctype>
#include <charconv>

#include "http/base64.hpp"
#include "leader/errors.hpp"

namespace leader::consul {
namespace {

using Json = nlohmann::json;

std::uint64_t uint_field(const Json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0))
    throw BackendError(
        ErrorCode::internal, "consul",
        std::string("malformed reply: field ") + name + " is not an unsigned integer");
  return it->get<std::uint64_t>();
}

Json parse_json(const std::string& body, std::string_view what) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw BackendError(ErrorCode::internal, "consul",
                       "malformed reply to " + std::string(what) + ": not JSON");
  return j;
}

bool parse_bool(const Reply& r, std::string_view what) {
  Json j = parse_json(r.body, what);
  if (!j.is_boolean())
    throw BackendError(ErrorCode::internal, "consul",
                       "malformed reply to " + std::string(what) + ": not true/false");
  return j.get<bool>();
}

}  // namespace

Reply Api::call(std::string_view method, const std::string& target, const std::string& body,
                Deadline deadline) {
  return transport_.send(method, target, body, deadline);
}

void Api::fail(std::string_view what, const Reply& r) const {
  std::string text = r.body.substr(0, 200);
  if (!config_.token.empty())
    for (auto p = text.find(config_.token); p != std::string::npos; p = text.find(config_.token))
      text.replace(p, config_.token.size(), "***");
  const std::string msg = std::string(what) + " on " + config_.shown + ": HTTP " +
                          std::to_string(r.status) + " " + text;
  if (r.status == 401 || r.status == 403)
    throw BackendError(ErrorCode::failed_precondition, "consul",
                       msg + " (check the ACL token: ?token= or ?token_file=)");
  if (r.status == 429 || r.status == 503) throw BackendError(ErrorCode::unavailable, "consul", msg);
  if (r.status >= 500)  // an RPC error: a write may or may not have been applied
    throw BackendError(ErrorCode::deadline_exceeded, "consul", msg + " (outcome unknown)");
  throw BackendError(ErrorCode::internal, "consul", msg);
}

Tree Api::list(const std::string& prefix, Deadline deadline) {
  return tree_of(call("GET", "/v1/kv/" + url_path(prefix) + "?recurse", "", deadline));
}

std::optional<Tree> Api::list_after(const std::string& prefix, std::uint64_t index, Duration wait,
                                    Deadline deadline, const std::stop_token& stop) {
  const std::string target = "/v1/kv/" + url_path(prefix) +
                             "?recurse&index=" + std::to_string(index) +
                             "&wait=" + go_duration(wait);
  auto r = transport_.wait(target, deadline, stop);
  if (!r) return std::nullopt;
  return tree_of(*r);
}

Tree Api::tree_of(const Reply& r) const {
  Tree t;
  std::uint64_t idx = 0;
  std::from_chars(r.consul_index.data(), r.consul_index.data() + r.consul_index.size(), idx);
  t.index = idx;
  if (r.status == 404) return t;
  if (r.status != 200) fail("KV list", r);
  Json j = parse_json(r.body, "KV list");
  if (!j.is_array()) throw BackendError(ErrorCode::internal, "consul", "KV list: not an array");
  for (const auto& e : j) t.entries.push_back(decode_entry(e));
  return t;
}

std::optional<Entry> Api::get(const std::string& key, Deadline deadline) {
  Reply r = call("GET", "/v1/kv/" + url_path(key), "", deadline);
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) fail("KV get", r);
  Json j = parse_json(r.body, "KV get");
  if (!j.is_array() || j.empty()) return std::nullopt;
  return decode_entry(j[0]);
}

std::string Api::create_session(const SessionSpec& spec, Deadline deadline) {
  Json body = {{"Name", spec.name},
               {"TTL", go_duration(spec.ttl)},
               {"LockDelay", go_duration(spec.lock_delay)},
               {"Behavior", spec.delete_keys ? "delete" : "release"},
               // TTL only, no serfHealth link: sending either key, even empty, replaces the
               // agent's default check (Checks for agents before 1.7, NodeChecks since).
               {"Checks", Json::array()},
               {"NodeChecks", Json::array()}};
  Reply r = call("PUT", "/v1/session/create", body.dump(), deadline);
  if (r.status != 200) fail("session create", r);
  Json j = parse_json(r.body, "session create");
  auto id = j.is_object() ? j.find("ID") : j.end();
  if (id == j.end() || !id->is_string() || id->get<std::string>().empty())
    throw BackendError(ErrorCode::internal, "consul", "session create: no ID in the reply");
  return id->get<std::string>();
}

std::optional<Duration> Api::renew_session(const std::string& id, Deadline deadline) {
  Reply r = call("PUT", "/v1/session/renew/" + url_path(id), "", deadline);
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) fail("session renew", r);
  Json j = parse_json(r.body, "session renew");
  if (!j.is_array() || j.empty() || !j[0].is_object()) return std::nullopt;
  auto ttl = j[0].find("TTL");
  std::optional<Duration> d;
  if (ttl != j[0].end() && ttl->is_string()) d = parse_go_duration(ttl->get<std::string>());
  if (!d || *d <= Duration{0})
    throw BackendError(ErrorCode::internal, "consul", "session renew: no usable TTL in the reply");
  return d;
}

void Api::destroy_session(const std::string& id, Deadline deadline) {
  Reply r = call("PUT", "/v1/session/destroy/" + url_path(id), "", deadline);
  if (r.status != 200) fail("session destroy", r);
}

void Api::destroy_quietly(const std::string& id, Deadline deadline) noexcept {
  if (id.empty() || deadline.expired()) return;
  try {
    destroy_session(id, deadline);
  } catch (...) {  // the session ends after its TTL instead
  }
}

bool Api::release(const std::string& key, const std::string& id, std::uint64_t flags,
                  const std::string& value, Deadline deadline) {
  Reply r = call(
      "PUT",
      "/v1/kv/" + url_path(key) + "?release=" + url_path(id) + "&flags=" + std::to_string(flags),
      value, deadline);
  if (r.status != 200) fail("KV release", r);
  return parse_bool(r, "KV release");
}

bool Api::acquire(const std::string& key, const std::string& id, std::uint64_t flags,
                  const std::string& value, Deadline deadline) {
  Reply r = call(
      "PUT",
      "/v1/kv/" + url_path(key) + "?acquire=" + url_path(id) + "&flags=" + std::to_string(flags),
      value, deadline);
  if (r.status != 200) fail("KV acquire", r);
  return parse_bool(r, "KV acquire");
}

void Api::put(const std::string& key, const std::string& value, Deadline deadline) {
  Reply r = call("PUT", "/v1/kv/" + url_path(key), value, deadline);
  if (r.status != 200) fail("KV put", r);
}

bool Api::delete_cas(const std::string& key, std::uint64_t index, Deadline deadline) {
  Reply r =
      call("DELETE", "/v1/kv/" + url_path(key) + "?cas=" + std::to_string(index), "", deadline);
  if (r.status != 200) fail("KV delete", r);
  return parse_bool(r, "KV delete");
}

TxnResult Api::txn(const Json& ops, Deadline deadline) {
  Reply r = call("PUT", "/v1/txn", ops.dump(), deadline);
  if (r.status != 200 && r.status != 409) fail("txn", r);
  Json j = parse_json(r.body, "txn");
  TxnResult out;
  out.committed = r.status == 200;
  if (!j.is_object()) throw BackendError(ErrorCode::internal, "consul", "txn: not an object");
  if (auto res = j.find("Results"); res != j.end() && res->is_array())
    for (const auto& item : *res)
      if (item.is_object() && item.contains("KV") && item["KV"].is_object())
        out.results.push_back(decode_entry(item["KV"]));
  if (auto errs = j.find("Errors"); errs != j.end() && errs->is_array())
    for (const auto& e : *errs)
      if (e.is_object() && e.contains("What") && e["What"].is_string())
        out.errors += (out.errors.empty() ? "" : "; ") + e["What"].get<std::string>();
  return out;
}

Json kv_op(const std::string& verb, const std::string& key, const std::string& value,
           std::uint64_t flags, std::uint64_t index, const std::string& session) {
  Json kv = {{"Verb", verb}, {"Key", key}};
  if (!value.empty()) kv["Value"] = http::base64_encode(value);
  if (flags != 0) kv["Flags"] = flags;
  if (index != 0) kv["Index"] = index;
  if (!session.empty()) kv["Session"] = session;
  return {{"KV", kv}};
}

Entry decode_entry(const Json& j) {
  if (!j.is_object() || !j.contains("Key") || !j["Key"].is_string())
    throw BackendError(ErrorCode::internal, "consul", "malformed KV entry: no Key");
  Entry e;
  e.key = j["Key"].get<std::string>();
  if (auto v = j.find("Value"); v != j.end() && v->is_string()) {
    auto bytes = http::base64_decode(v->get<std::string>());
    if (!bytes) throw BackendError(ErrorCode::internal, "consul", "malformed KV entry: Value");
    e.value = std::move(*bytes);
  }
  if (auto s = j.find("Session"); s != j.end() && s->is_string()) e.session = s->get<std::string>();
  e.flags = uint_field(j, "Flags");
  e.lock_index = uint_field(j, "LockIndex");
  e.create_index = uint_field(j, "CreateIndex");
  e.modify_index = uint_field(j, "ModifyIndex");
  return e;
}

std::optional<Duration> parse_go_duration(std::string_view text) {
  if (text == "0") return Duration{0};
  double total_ms = 0;
  bool any = false;
  while (!text.empty()) {
    std::size_t n = 0;
    while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.'))
      ++n;
    if (n == 0) return std::nullopt;
    double value = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + n, value);
    if (ec != std::errc() || p != text.data() + n) return std::nullopt;
    text.remove_prefix(n);
    static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits{
        {{"ns", 1e-6}, {"us", 1e-3}, {"ms", 1.0}, {"s", 1e3}, {"m", 6e4}, {"h", 3.6e6}}};
    bool matched = false;
    for (const auto& [unit, ms] : kUnits)
      if (text.starts_with(unit) && !(unit == "m" && text.starts_with("ms"))) {
        total_ms += value * ms;
        text.remove_prefix(unit.size());
        matched = true;
        break;
      }
    if (!matched) return std::nullopt;
    any = true;
  }
  if (!any || total_ms > 1e13) return std::nullopt;
  return Duration{static_cast<Duration::rep>(total_ms)};
}

std::string go_duration(Duration d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

std::string url_path(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

}  // namespace leader::consul
