// The result object of `leader run --json` (run_report.hpp).

#include "run_report.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "holders_json.hpp"
#include "leader/history.hpp"
#include "leader/uri.hpp"
#include "log.hpp"

namespace leader::cli {

void write_report(const RunOptions& o, const RunReport& r) {
  nlohmann::json j = {
      {"lock", o.lock},
      {"outcome", r.outcome},
      {"exit_code", r.exit_code},
      {"store", r.store},
      {"started_at", format_utc(r.started)},
      {"finished_at", format_utc(r.finished)},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(r.finished - r.started).count()}};
  if (!r.node_id.empty()) j["node_id"] = r.node_id;
  if (r.fencing_token != 0) j["fencing_token"] = r.fencing_token;
  if (r.slot >= 0) j["slot"] = r.slot;
  if (!r.holders.empty()) j["held_by"] = r.holders;
  if (r.holder_state && r.holder_state->held()) {
    j["holders"] = holders_json(*r.holder_state);
    j["holder"] = j["holders"][0];
  }
  if (!r.error.empty()) j["error"] = without_secrets(r.error);
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (o.json_file.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::string tmp = o.json_file + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      Log(0).error("cannot write --json-file " + o.json_file + ": " + std::strerror(errno));
      return;
    }
  }
  if (std::rename(tmp.c_str(), o.json_file.c_str()) != 0) {
    Log(0).error("cannot write --json-file " + o.json_file + ": " + std::strerror(errno));
    std::remove(tmp.c_str());
  }
}

}  // namespace leader::cli
