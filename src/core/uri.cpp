#include "leader/uri.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "leader/errors.hpp"

namespace leader {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode(std::string_view s, const std::string& shown) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0)
      throw InvalidArgument("store URI '" + shown + "' has a bad percent-escape");
    out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
    i += 2;
  }
  return out;
}

// The input with any password in the userinfo replaced, for messages.
std::string redact_text(std::string_view text) {
  auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) return std::string(text);
  auto auth_start = scheme_end + 3;
  auto auth_end = text.find_first_of("/?#", auth_start);
  auto authority =
      text.substr(auth_start, auth_end == std::string_view::npos ? std::string_view::npos
                                                                 : auth_end - auth_start);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(text);
  auto colon = authority.substr(0, at).find(':');
  if (colon == std::string_view::npos) return std::string(text);
  std::string out(text.substr(0, auth_start + colon + 1));
  out += "***";
  out += text.substr(auth_start + at);
  return out;
}

}  // namespace

Uri Uri::parse(std::string_view text) {
  Uri uri;
  uri.original = std::string(text);
  const std::string shown = redact_text(text);
  auto bad = [&](const std::string& why) {
    return InvalidArgument("store URI '" + shown + "' is malformed: " + why);
  };
  if (text.empty()) throw InvalidArgument("store URI is empty (expected e.g. sqlite:///path.db)");
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0)
    throw bad("no scheme (expected scheme://... or scheme:path)");
  for (std::size_t i = 0; i < colon; ++i) {
    char c = text[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
      throw bad("invalid character in scheme");
  }
  uri.scheme = lower(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);

  if (auto q = rest.find('?'); q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    while (!query.empty()) {
      auto amp = query.find('&');
      auto part = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
      if (part.empty()) continue;
      auto eq = part.find('=');
      if (eq == 0) throw bad("empty query parameter name");
      std::string key = decode(part.substr(0, eq), shown);
      std::string value = eq == std::string_view::npos ? "" : decode(part.substr(eq + 1), shown);
      uri.query[key] = value;
    }
  }
  if (rest.find('#') != std::string_view::npos) throw bad("fragments (#) are not supported");

  if (rest.substr(0, 2) != "//") {  // scheme:path
    uri.path = decode(rest, shown);
    return uri;
  }
  rest = rest.substr(2);
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  uri.path = slash == std::string_view::npos ? "" : decode(rest.substr(slash), shown);
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    auto userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto c = userinfo.find(':');
    uri.user = decode(userinfo.substr(0, c), shown);
    if (c != std::string_view::npos) uri.password = decode(userinfo.substr(c + 1), shown);
  }
  while (!authority.empty()) {
    auto comma = authority.find(',');
    auto hp = authority.substr(0, comma);
    authority = comma == std::string_view::npos ? std::string_view{} : authority.substr(comma + 1);
    if (hp.empty()) throw bad("empty host in host list");
    UriHost h;
    std::string_view port_text;
    if (hp.front() == '[') {  // [ipv6]:port
      auto close = hp.find(']');
      if (close == std::string_view::npos) throw bad("unterminated '[' in host");
      h.host = std::string(hp.substr(1, close - 1));
      auto after = hp.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':') throw bad("unexpected text after ']'");
        port_text = after.substr(1);
      }
    } else {
      auto c = hp.rfind(':');
      h.host = std::string(hp.substr(0, c));
      if (c != std::string_view::npos) port_text = hp.substr(c + 1);
      if (h.host.empty()) throw bad("empty host name");
    }
    if (!port_text.empty() || hp.back() == ':') {
      int port = 0;
      auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
      if (ec != std::errc() || p != port_text.data() + port_text.size() || port < 1 || port > 65535)
        throw bad("port '" + std::string(port_text) + "' is not a number in 1..65535");
      h.port = port;
    }
    uri.hosts.push_back(std::move(h));
  }
  return uri;
}

std::string Uri::redacted() const { return redact_text(original); }

std::optional<std::string> Uri::param(const std::string& key) const {
  auto it = query.find(key);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::chrono::milliseconds Uri::duration_param(const std::string& key,
                                              std::chrono::milliseconds fallback) const {
  auto v = param(key);
  if (!v) return fallback;
  return parse_duration(*v, "URI parameter '" + key + "' of '" + redacted() + "'");
}

bool Uri::bool_param(const std::string& key, bool fallback) const {
  auto v = param(key);
  if (!v) return fallback;
  auto s = lower(*v);
  if (s == "1" || s == "true" || s == "yes" || s == "on" || s.empty()) return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw InvalidArgument("URI parameter '" + key + "' of '" + redacted() + "' is '" + *v +
                        "'; expected true or false");
}

void Uri::expect_params(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, value] : query) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InvalidArgument("unknown parameter '" + key + "' in store URI '" + redacted() +
                          "' (known: " + (list.empty() ? "none" : list) + ")");
  }
}

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return InvalidArgument(std::string(what) + ": '" + std::string(text) +
                           "' is not a duration (examples: 500ms, 30s, 5m, 1h)");
  };
  if (text.empty()) throw bad();
  double value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !(value >= 0)) throw bad();  // also rejects "nan"
  std::string_view unit = text.substr(p - text.data());
  double ms = 0;
  if (unit == "ms")
    ms = value;
  else if (unit == "s" || unit.empty())
    ms = value * 1000;
  else if (unit == "m" || unit == "min")
    ms = value * 60'000;
  else if (unit == "h")
    ms = value * 3'600'000;
  else if (unit == "us")
    ms = value / 1000;
  else
    throw bad();
  if (ms > 1e15) throw bad();
  auto whole = static_cast<std::int64_t>(ms);
  if (static_cast<double>(whole) < ms) ++whole;  // round sub-millisecond values up
  return std::chrono::milliseconds(whole);
}

std::string format_duration(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 3'600'000 == 0 && ms != 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0 && ms != 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  if (ms >= 1000) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3gs", static_cast<double>(ms) / 1000.0);
    return buf;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace leader
