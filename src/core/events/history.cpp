// History records from `released` events, error-text sanitising, and the asynchronous feed.

#include "leader/history.hpp"

#include <cctype>

#include "leader/uri.hpp"

namespace leader {
namespace {

bool uri_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '.' || c == '-';
}

bool token_char(char c) {
  return c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '"' && c != '\'' && c != '<' &&
         c != '>' && c != ',' && c != ';';
}

// Hides the value of `name=value` / `name: value` pairs whose name is secret-bearing.
std::string hide_secret_pairs(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) != 0 ||
                               text[i] == '_' || text[i] == '-'))
      ++i;
    std::string_view name(text.data() + start, i - start);
    out.append(name);
    if (i == start) {
      out.push_back(text[i++]);
      continue;
    }
    if (i < text.size() && (text[i] == '=' || text[i] == ':') && is_secret_parameter(name)) {
      out.push_back(text[i++]);
      while (i < text.size() && text[i] == ' ') out.push_back(text[i++]);
      std::size_t value = i;
      while (i < text.size() && token_char(text[i]) && text[i] != '&') ++i;
      if (i > value) out += "***";
    }
  }
  return out;
}

// Replaces every `scheme://...` token by its redacted form.
std::string redact_uris(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t sep = text.find("://", i);
    if (sep == std::string_view::npos) break;
    std::size_t begin = sep;
    while (begin > i && uri_scheme_char(text[begin - 1])) --begin;
    std::size_t end = sep + 3;
    while (end < text.size() && token_char(text[end])) ++end;
    out.append(text.substr(i, begin - i));
    if (begin == sep) {
      out.append(text.substr(sep, end - sep));
    } else {
      out += redact_uri(text.substr(begin, end - begin));
    }
    i = end;
  }
  out.append(text.substr(std::min(i, text.size())));
  return out;
}

}  // namespace

std::string sanitize_error_text(std::string_view text, std::size_t limit) {
  std::string out = hide_secret_pairs(redact_uris(text));
  if (out.size() <= limit) return out;
  constexpr std::string_view kEllipsis = "...";
  std::size_t cut = limit > kEllipsis.size() ? limit - kEllipsis.size() : 0;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  if (limit >= kEllipsis.size()) out += kEllipsis;
  return out;
}

std::optional<HistoryRecord> history_record(const ElectionEvent& event) {
  if (event.kind != EventKind::released) return std::nullopt;
  HistoryRecord r;
  r.lock = event.lock;
  r.node_id = event.lease.node_id;
  r.fencing_token = event.lease.fencing_token;
  r.slot = event.lease.slot;
  r.started = event.started;
  r.ended = event.at;
  r.outcome = event.outcome.value_or(LeaseOutcome::completed);
  r.error = event.detail;
  r.fail_open = event.lease.fail_open;
  return r;
}

Subscription attach_history(EventBus& bus, std::shared_ptr<HistorySink> sink,
                            SubscribeOptions options) {
  if (!sink) throw InvalidArgument("attach_history: the sink is null");
  options.kinds = {EventKind::released};
  return bus.subscribe(
      [sink = std::move(sink)](const ElectionEvent& e) {
        if (auto r = history_record(e)) sink->record(*r);
      },
      options);
}

}  // namespace leader
