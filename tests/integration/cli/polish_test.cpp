// The operator-facing behaviour of `leader` (issue 12): exit codes by cause, silent skips, the
// cause of a lost lease, log format, `leader list`, `leader release --force`, `leader run
// --json`, durations, and messages that say what to type.

#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

class Polish : public CliTest {
 protected:
  // A `leader run` holding `lock` until the file `release` exists (or it is killed).
  Process hold(const std::string& lock, std::vector<std::string> options = {}) {
    Process p =
        start_run(lock, options, sh("while [ ! -e " + path("release") + " ]; do sleep 0.02; done"));
    wait_until_held(lock);
    return p;
  }
  void let_go() { std::ofstream(path("release")) << "go\n"; }
};

TEST_F(Polish, StoreProblemsExitBySysexitsCause) {
  // 78 EX_CONFIG: unknown scheme, a URI that does not parse, an unknown URI parameter.
  for (const std::string& store : std::vector<std::string>{"nosuchstore://x", "redis://h:notaport",
                                                           store_ + "?no_such_parameter=1"}) {
    Finished run = leader({"run", "--store", store, "--lock", "x", "--", "touch", path("ran")});
    EXPECT_EQ(run.code, 78) << store << "\n" << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_EQ(leader({"status", "--store", store, "--lock", "x"}).code, 78) << store;
    EXPECT_EQ(leader({"list", "--store", store}).code, 78) << store;
  }
  // 69 EX_UNAVAILABLE: nothing listens (port 1).
  Finished down = leader({"status", "--store", "redis://127.0.0.1:1", "--lock", "x"});
  EXPECT_EQ(down.code, 69) << down.err;
  EXPECT_EQ(read_file(path("ran")), "");
}

TEST_F(Polish, SkipIsSilentUnlessVerboseOrATerminal) {
  Process holder = hold("quiet", {"--node-id", "holder-node"});
  Finished silent = run("quiet", {}, {"touch", path("ran")});
  EXPECT_EQ(silent.code, 0);
  EXPECT_EQ(silent.err, "") << "cron would mail this";
  EXPECT_EQ(silent.out, "");
  Finished verbose = run("quiet", {"-v"}, {"touch", path("ran")});
  EXPECT_THAT(verbose.err, HasSubstr("'quiet' is held by holder-node"));
  // stderr on a terminal: script(1) gives leader a pty.
  std::string line = leader_binary() + " run --store '" + store_ + "' --lock quiet -- true";
  Process on_tty({"script", "-qec", line, "/dev/null"}, dir_);
  EXPECT_EQ(on_tty.wait(), 0) << on_tty.err();
  EXPECT_THAT(on_tty.out(), HasSubstr("'quiet' is held by holder-node"));
  let_go();
  EXPECT_EQ(holder.wait(), 0) << holder.err();
  EXPECT_EQ(read_file(path("ran")), "");
}

TEST_F(Polish, LogLinesHaveRfc3339TimestampsLevelsAndAJsonForm) {
  Finished text = run("logs", {"-v"}, {"true"});
  ASSERT_EQ(text.code, 0) << text.err;
  const std::regex line_form(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info|notice|warning|error) leader: .+$)");
  ASSERT_FALSE(lines_of(text.err).empty());
  for (const auto& line : lines_of(text.err))
    EXPECT_TRUE(std::regex_match(line, line_form)) << line;
  Finished json = run("logs", {"-v", "--log-format", "json"}, {"true"});
  ASSERT_EQ(json.code, 0) << json.err;
  ASSERT_FALSE(lines_of(json.err).empty());
  for (const auto& line : lines_of(json.err)) {
    auto doc = nlohmann::json::parse(line);
    EXPECT_TRUE(std::regex_match(doc.at("time").get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    EXPECT_EQ(doc.at("level"), "info") << line;
    EXPECT_FALSE(doc.at("msg").get<std::string>().empty());
  }
  Finished env =
      leader({"status", "--store", "nosuchstore://x", "--lock", "x"}, {"LEADER_LOG_FORMAT=json"});
  EXPECT_EQ(nlohmann::json::parse(lines_of(env.err).at(0)).at("level"), "error") << env.err;
  EXPECT_EQ(leader({"status", "--store", store_, "--lock", "x", "--log-format", "xml"}).code, 64);
}

TEST_F(Polish, ListShowsHeldLocksUnderAPrefixOrTenant) {
  Process a = hold("app-nightly", {"--node-id", "node-a"});
  Process b = hold("app-hourly", {"--node-id", "node-b"});
  Process t = hold("tenant:acme:report", {"--node-id", "node-t"});
  Finished all = leader({"list", "--store", store_, "--json"});
  ASSERT_EQ(all.code, 0) << all.err;
  auto doc = nlohmann::json::parse(all.out);
  ASSERT_EQ(doc.size(), 3u) << all.out;
  EXPECT_EQ(doc[0]["lock"], "app-hourly");
  EXPECT_EQ(doc[0]["holders"][0]["node_id"], "node-b");
  EXPECT_EQ(doc[1]["lock"], "app-nightly");
  EXPECT_GT(doc[1]["holders"][0]["fencing_token"].get<std::uint64_t>(), 0u);
  Finished prefixed = leader({"list", "--store", store_, "--prefix", "app-n"});
  EXPECT_EQ(prefixed.code, 0);
  EXPECT_THAT(prefixed.out, HasSubstr("app-nightly"));
  EXPECT_THAT(prefixed.out, HasSubstr("node-a"));
  EXPECT_THAT(prefixed.out, Not(HasSubstr("app-hourly")));
  Finished tenant = leader({"list", "--store", store_, "--tenant", "acme", "--json"});
  auto tdoc = nlohmann::json::parse(tenant.out);
  ASSERT_EQ(tdoc.size(), 1u) << tenant.out;
  EXPECT_EQ(tdoc[0]["lock"], "tenant:acme:report");
  EXPECT_EQ(leader({"list", "--store", store_, "--tenant", "a:b"}).code, 64);
  let_go();
  for (Process* p : {&a, &b, &t}) EXPECT_EQ(p->wait(), 0) << p->err();
  Finished none = leader({"list", "--store", store_, "--json"});
  EXPECT_EQ(none.out, "[]\n");
}

TEST_F(Polish, ForcedReleaseNeedsConfirmationStopsTheHolderAndKeepsTokensIncreasing) {
  Process holder = hold("wedged", {"--ttl", "4s", "--grace", "500ms", "--node-id", "stuck"});
  auto before = nlohmann::json::parse(status("wedged", {"--json"}).out);
  std::uint64_t old_token = before["holders"][0]["fencing_token"];
  Finished no_force = leader({"release", "--store", store_, "--lock", "wedged"});
  EXPECT_EQ(no_force.code, 64);
  EXPECT_THAT(no_force.err, HasSubstr("--force --yes-i-know --lock wedged"));
  Finished unconfirmed = leader({"release", "--store", store_, "--lock", "wedged", "--force"});
  EXPECT_EQ(unconfirmed.code, 64);
  EXPECT_THAT(unconfirmed.err, HasSubstr("--yes-i-know"));
  EXPECT_EQ(status("wedged").code, 0) << "nothing released without confirmation";
  Finished forced =
      leader({"release", "--store", store_, "--lock", "wedged", "--force", "--yes-i-know"});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_THAT(forced.err, HasSubstr("force-released 'wedged' held by stuck"));
  EXPECT_THAT(forced.err, HasSubstr(" warning leader: "));
  // The old holder's next renewal is refused: it kills its command, says lost and why.
  EXPECT_EQ(holder.wait(), 75) << holder.err();
  EXPECT_THAT(holder.err(), HasSubstr("lost"));
  EXPECT_THAT(holder.err(), HasSubstr("renewal refused"));
  EXPECT_THAT(holder.err(), HasSubstr("was lost, not released"));
  EXPECT_THAT(holder.err(), Not(HasSubstr("; released '")));
  Finished next = run("wedged", {}, sh("echo $LEADER_FENCING_TOKEN"));
  ASSERT_EQ(next.code, 0) << next.err;
  EXPECT_GT(std::stoull(next.out), old_token);
  EXPECT_EQ(
      leader({"release", "--store", store_, "--lock", "wedged", "--force", "--yes-i-know"}).code, 3)
      << "nothing held";
}

TEST_F(Polish, RunJsonReportsTheResultOnStdoutOrInAFile) {
  Finished ran = run("report", {"--json"}, sh("exit 4"));
  EXPECT_EQ(ran.code, 4);
  auto doc = nlohmann::json::parse(lines_of(ran.out).back());
  EXPECT_EQ(doc["outcome"], "ran");
  EXPECT_EQ(doc["exit_code"], 4);
  EXPECT_EQ(doc["lock"], "report");
  EXPECT_GT(doc["fencing_token"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(doc.contains("started_at") && doc.contains("duration_ms"));
  Process holder = hold("report", {"--node-id", "other"});
  Finished skipped = run("report", {"--json-file", path("result.json")}, {"true"});
  EXPECT_EQ(skipped.code, 0);
  EXPECT_EQ(skipped.out, "");
  auto sdoc = nlohmann::json::parse(read_file(path("result.json")));
  EXPECT_EQ(sdoc["outcome"], "skipped");
  EXPECT_THAT(sdoc["held_by"].get<std::string>(), HasSubstr("other"));
  let_go();
  EXPECT_EQ(holder.wait(), 0);
  Finished broken =
      leader({"run", "--store", "nosuchstore://x", "--lock", "x", "--json", "--", "true"});
  EXPECT_EQ(broken.code, 78);
  auto bdoc = nlohmann::json::parse(broken.out);
  EXPECT_EQ(bdoc["outcome"], "error");
  EXPECT_EQ(bdoc["exit_code"], 78);
}

TEST_F(Polish, DurationsTakeCompoundUnitsAndDays) {
  Process holder = hold("long", {"--ttl", "1m30s"});
  auto doc = nlohmann::json::parse(status("long", {"--json"}).out);
  EXPECT_GT(doc["holders"][0]["expires_in_ms"].get<long>(), 60'000) << "1m30s is 90s";
  let_go();
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(run("day", {"--ttl", "1d", "--wait", "500ms", "--min-hold", "0"}, {"true"}).code, 0);
  for (const std::string bad : {"1x", "30s1m", "1m30", "-5s", "366d", "1s1s"}) {
    Finished f = run("bad", {"--ttl=" + bad}, {"true"});
    EXPECT_EQ(f.code, 64) << bad;
    EXPECT_THAT(f.err, HasSubstr("--ttl: '" + bad + "'")) << f.err;
  }
  EXPECT_THAT(run("bad", {"--ttl", "1x"}, {"true"}).err, HasSubstr("e.g. 30, 500ms, 45s, 1m30s"));
}

TEST_F(Polish, ParseErrorsSayWhatToType) {
  Finished none = leader({});
  EXPECT_EQ(none.code, 64);
  EXPECT_THAT(none.err, HasSubstr("a command is required: type leader run|status"));
  EXPECT_THAT(none.err, Not(HasSubstr("A subcommand is required")));
  Finished extras = leader({"status", "--store", store_, "--lock", "x", "--", "--bogus"});
  EXPECT_EQ(extras.code, 64);
  EXPECT_THAT(extras.err, Not(HasSubstr("were not expected")));
  EXPECT_THAT(extras.err, HasSubstr("unknown option '--bogus' for 'leader status'"));
  Finished option = leader({"run", "--store", store_, "--lock", "x", "--bogus", "--", "true"});
  EXPECT_THAT(option.err, HasSubstr("unknown option '--bogus' for 'leader run'"));
  EXPECT_THAT(option.err, HasSubstr("-- COMMAND --bogus"));
  Finished unknown = leader({"frobnicate"});
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'frobnicate'"));
  Finished nolock = leader({"run", "--store", store_, "--", "true"});
  EXPECT_THAT(nolock.err, HasSubstr("--lock NAME is required"));
  Finished novalue = leader({"run", "--store", store_, "--lock", "x", "--ttl"});
  EXPECT_THAT(novalue.err, HasSubstr("--ttl needs a value"));
  Finished both = leader({"run", "--store", store_, "--lock", "x", "-v", "-q", "--", "true"});
  EXPECT_THAT(both.err, HasSubstr("cannot be given together"));
}

}  // namespace
}  // namespace leader::cli_test
