#include "leader/uri.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "leader/errors.hpp"
#include "leader/options.hpp"

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

constexpr std::string_view kHidden = "***";

// Where a URI's scheme ends (the first ':'), or npos when the text has no valid scheme.
std::size_t scheme_end(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::string_view::npos;
  for (std::size_t i = 0; i < colon; ++i) {
    char c = text[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
      return std::string_view::npos;
  }
  return colon;
}

// `query` (the text after '?') with the value of every secret-bearing parameter replaced.
std::string redact_query(std::string_view query) {
  std::string out;
  while (true) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    auto eq = part.find('=');
    std::string key(part.substr(0, eq));
    try {
      key = decode(key, "");
    } catch (const InvalidArgument&) {
      // a bad escape in the name: judge the raw text
    }
    if (eq != std::string_view::npos && is_secret_parameter(key)) {
      out += part.substr(0, eq + 1);
      out += kHidden;
    } else {
      out += part;
    }
    if (amp == std::string_view::npos) return out;
    out += '&';
    query = query.substr(amp + 1);
  }
}

// The text of a store URI with its secrets replaced by "***" (see Uri::redacted()). With
// `whole_userinfo` (text that did not parse) everything before the last '@' is hidden, user
// included, because where the userinfo ends cannot be trusted.
std::string redact_text(std::string_view text, bool whole_userinfo) {
  auto colon = scheme_end(text);
  std::size_t start = colon == std::string_view::npos ? 0 : colon + 1;
  bool authority = colon != std::string_view::npos && text.substr(start, 2) == "//";
  if (authority) start += 2;
  auto query = text.find('?', start);  // where the parser splits the query off
  std::string out(text.substr(0, query));
  if (query != std::string_view::npos) out += "?" + redact_query(text.substr(query + 1));
  // Parsed: the userinfo ends at the last '@' before the query. Unparsed: at the last '@' of all.
  std::size_t at = std::string::npos;
  if (whole_userinfo || query == std::string_view::npos)
    at = out.rfind('@');
  else if (query > 0)
    at = out.rfind('@', query - 1);
  // `scheme:///path` has no userinfo: an '@' there belongs to the path.
  bool no_userinfo = authority && !whole_userinfo && text.substr(start, 1) == "/";
  if (at == std::string::npos || at < start || no_userinfo) return out;
  std::string_view userinfo = std::string_view(out).substr(start, at - start);
  auto user_end = userinfo.find(':');
  std::string shown;
  if (!authority || whole_userinfo || userinfo.find('/') != std::string_view::npos) {
    shown = kHidden;  // the userinfo may run into what looks like a path: hide all of it
  } else if (user_end != std::string_view::npos) {
    shown = std::string(userinfo.substr(0, user_end + 1)) + std::string(kHidden);
  } else {
    shown = userinfo;  // a user name without a password
  }
  return out.substr(0, start) + shown + out.substr(at);
}

// "port '80x'" when `fragment` is visible in the redacted text anyway; just "the port" when it
// may be a piece of a hidden secret (e.g. a password with an unencoded '/').
std::string shown_fragment(const std::string& what, std::string_view fragment,
                           const std::string& shown) {
  if (shown.find(fragment) != std::string::npos) return what + " '" + std::string(fragment) + "'";
  return "the " + what;
}

}  // namespace

bool is_secret_parameter(std::string_view name) {
  std::string key = lower(name);
  for (std::string_view word : kSecretParameterWords)
    if (key.find(word) != std::string::npos) return true;
  return false;
}

std::string redact_uri(std::string_view text) { return redact_text(text, true); }

Uri Uri::parse(std::string_view text) {
  Uri uri;
  uri.original = std::string(text);
  const std::string shown = redact_text(text, true);
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
        throw bad(shown_fragment("port", port_text, shown) + " is not a number in 1..65535");
      h.port = port;
    }
    uri.hosts.push_back(std::move(h));
  }
  return uri;
}

std::string Uri::redacted() const { return redact_text(original, false); }

std::string Uri::scrub(std::string_view message) const {
  std::vector<std::string> secrets;
  if (password) secrets.push_back(*password);
  for (const auto& [key, value] : query)
    if (is_secret_parameter(key)) secrets.push_back(value);
  // The same secrets as written (percent-escapes and all): split the original text as parse does.
  std::string_view text = original;
  auto q = text.find('?');
  for (std::string_view rest = q == std::string_view::npos ? "" : text.substr(q + 1);
       !rest.empty();) {
    auto part = rest.substr(0, rest.find('&'));
    rest = part.size() < rest.size() ? rest.substr(part.size() + 1) : std::string_view{};
    auto eq = part.find('=');
    if (eq != std::string_view::npos && is_secret_parameter(decode(part.substr(0, eq), "")))
      secrets.emplace_back(part.substr(eq + 1));
  }
  auto at = text.substr(0, q).rfind('@');
  auto colon = text.find("://");
  if (at != std::string_view::npos && colon != std::string_view::npos && colon + 3 < at) {
    auto userinfo = text.substr(colon + 3, at - colon - 3);
    if (auto c = userinfo.find(':'); c != std::string_view::npos)
      secrets.emplace_back(userinfo.substr(c + 1));
  }
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out(message);
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (auto pos = out.find(secret); pos != std::string::npos;
         pos = out.find(secret, pos + kHidden.size()))
      out.replace(pos, secret.size(), kHidden);
  }
  return out;
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

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return InvalidArgument(std::string(what) + ": '" + std::string(text) +
                           "' is not a duration (examples: 500ms, 30s, 5m, 1h)");
  };
  if (text.empty()) throw bad();
  double value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) throw bad();
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
  if (ms > static_cast<double>(kMaxDuration.count()))
    throw InvalidArgument(std::string(what) + ": '" + std::string(text) +
                          "' is longer than the maximum of 365 days (8760h)");
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
