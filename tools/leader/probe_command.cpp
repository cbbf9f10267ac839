// `leader probe`: one GET of the sidecar's /healthz or /readyz (both open without the bearer
// token), one line saying what it answered, exit 0 when it is alive / ready.

#include "probe_command.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "duration.hpp"
#include "exit_codes.hpp"

namespace leader::cli {
namespace {

struct ProbeOptions {
  std::string address = "127.0.0.1:9464";
  std::string timeout = "3s";
  bool ready = false;
};

struct Target {
  std::string host;  // without the brackets of an IPv6 address
  int port = 0;
};

// HOST:PORT or [IPV6]:PORT, as `leader serve --listen` takes it (port 0 cannot be probed).
Target parse_address(const std::string& text) {
  Target t;
  std::string port;
  std::string::size_type colon;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw UsageError("--listen '" + text + "': expected [IPV6]:PORT");
    t.host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw UsageError("--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:9464");
    t.host = text.substr(0, colon);
  }
  port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535)
    throw UsageError("--listen '" + text + "': the port must be a number in 1..65535");
  t.port = std::stoi(port);
  return t;
}

// Why a request got no HTTP answer, in words (httplib's names are terse: "Connection").
std::string no_answer_reason(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "no reply within the timeout, or the connection closed";
    case httplib::Error::Write:
      return "cannot send the request";
    default:
      return httplib::to_string(e);
  }
}

// The reason a JSON error body gives ({"error": ..., "reason"/"message": ...}), else its text.
std::string reason_of(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    std::string out = j.value("error", "");
    for (const char* key : {"reason", "message"}) {
      if (j.contains(key) && j[key].is_string())
        out += (out.empty() ? "" : ": ") + j[key].get<std::string>();
    }
    if (!out.empty()) return out;
  }
  std::string text = body.substr(0, 200);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

int probe(const ProbeOptions& o) {
  Target t = parse_address(o.address);
  auto timeout = parse_duration(o.timeout, "--timeout");
  const char* path = o.ready ? "/readyz" : "/healthz";
  std::string where = "http://" + o.address + path;
  httplib::Client client(t.host, t.port);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  httplib::Result res = client.Get(path);
  if (!res) {
    std::fprintf(stderr, "leader probe: %s: no answer (%s); is leader serve running there?\n",
                 where.c_str(), no_answer_reason(res.error()).c_str());
    return kExitUnavailable;
  }
  if (res->status != 200) {
    std::fprintf(stderr, "leader probe: %s: %s (HTTP %d: %s)\n", where.c_str(),
                 o.ready ? "not ready" : "not alive", res->status, reason_of(res->body).c_str());
    return kExitUnavailable;
  }
  std::string detail;
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_object() && j.contains("store") && j["store"].is_string())
    detail = " (store " + j["store"].get<std::string>() + ")";
  std::printf("leader probe: %s: %s%s\n", where.c_str(), o.ready ? "ready" : "alive",
              detail.c_str());
  return kExitOk;
}

}  // namespace

Subcommand add_probe_command(CLI::App& app) {
  auto o = std::make_shared<ProbeOptions>();
  auto* sub =
      app.add_subcommand("probe", "Ask a local leader serve whether it is alive (or --ready)");
  sub->footer(
      "\nOne GET of the sidecar's /healthz (alive: it answers HTTP) or, with --ready, /readyz\n"
      "(ready: its store answers), then one line saying what it answered. For exec probes of\n"
      "a sidecar that listens on loopback only (Kubernetes: deploy/k8s/deployment.yaml).\n\n"
      "Exit codes: 0 alive / ready, 64 usage error, 69 no answer, not ready or not alive.");
  sub->add_option("--listen", o->address, "The sidecar's --listen address")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  sub->add_flag("--ready", o->ready, "Ask /readyz (the store answers) instead of /healthz");
  sub->add_option("--timeout", o->timeout, "Give up after this long")
      ->type_name("DURATION")
      ->capture_default_str();
  return {sub, "Usage: leader probe [--listen 127.0.0.1:9464] [--ready] [--timeout 3s]",
          [o] { return probe(*o); }};
}

}  // namespace leader::cli
