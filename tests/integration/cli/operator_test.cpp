// What an operator sees of `leader`: JSON log lines with their fields (lock, node, token, event),
// syslog priorities when stderr is the journal, sd_notify READY=1 / STOPPING=1 for Type=notify
// units, what `leader run --wait` says while it waits, and conflict messages that name the holder.

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// A datagram socket standing in for systemd's $NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      ADD_FAILURE() << "cannot bind " << path_;
    timeval tv{.tv_sec = 0, .tv_usec = 100'000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;
  ~NotifySocket() { ::close(fd_); }
  [[nodiscard]] std::string env() const { return "NOTIFY_SOCKET=" + path_; }
  // Every message received until one contains `wanted` (true) or `limit` passes (false).
  bool wait_for(const std::string& wanted, std::chrono::seconds limit = 15s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) received_ += std::string(buf, static_cast<std::size_t>(n)) + "\n";
      if (received_.find(wanted) != std::string::npos) return true;
    }
    return false;
  }
  [[nodiscard]] const std::string& received() const { return received_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string received_;
};

class Operator : public CliTest {
 protected:
  // A `leader run` holding `lock` until the file `release` exists.
  Process hold(const std::string& lock, std::vector<std::string> options = {}) {
    Process p =
        start_run(lock, options, sh("while [ ! -e " + path("release") + " ]; do sleep 0.02; done"));
    wait_until_held(lock);
    return p;
  }
  void let_go() { std::ofstream(path("release")) << "go\n"; }
  std::vector<std::string> run_argv(const std::string& lock, const std::vector<std::string>& opts,
                                    const std::vector<std::string>& command) {
    std::vector<std::string> argv = {leader_binary(), "run", "--store", store_, "--lock", lock};
    argv.insert(argv.end(), opts.begin(), opts.end());
    argv.emplace_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }
};

TEST_F(Operator, JsonLogLinesCarryLockNodeTokenAndEvent) {
  Finished ran = run("fields", {"-v", "--log-format", "json", "--node-id", "web-1"}, {"true"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  std::vector<std::string> events;
  for (const auto& line : lines_of(ran.err)) {
    auto doc = nlohmann::json::parse(line);
    if (!doc.contains("event")) continue;
    events.push_back(doc["event"]);
    EXPECT_EQ(doc.at("lock"), "fields") << line;
    EXPECT_EQ(doc.at("node"), "web-1") << line;
    EXPECT_GT(doc.at("token").get<std::uint64_t>(), 0u) << line;
  }
  EXPECT_THAT(events, ::testing::ElementsAre("acquired", "released")) << ran.err;
  Process holder = hold("fields", {"--node-id", "web-2"});
  Finished skipped = run("fields", {"-v", "--log-format", "json"}, {"true"});
  auto doc = nlohmann::json::parse(lines_of(skipped.err).back());
  EXPECT_EQ(doc.at("event"), "skipped") << skipped.err;
  EXPECT_EQ(doc.at("lock"), "fields");
  EXPECT_EQ(doc.at("node"), "web-2") << "the holder";
  EXPECT_GT(doc.at("token").get<std::uint64_t>(), 0u);
  let_go();
  EXPECT_EQ(holder.wait(), 0) << holder.err();
}

TEST_F(Operator, SidecarCampaignLinesCarryTheirFields) {
  if (leader({"serve", "--help"}).code != 0) GTEST_SKIP() << "leader serve not built";
  Process serve({leader_binary(), "serve", "--store", store_, "--listen", "127.0.0.1:0",
                 "--campaign", "primary", "--node-id", "side-1", "--log-format", "json"},
                dir_);
  nlohmann::json leading;
  EXPECT_TRUE(eventually([&] {
    for (const auto& line : lines_of(serve.err())) {
      auto doc = nlohmann::json::parse(line, nullptr, false);
      if (doc.is_object() && doc.value("event", "") == "acquired") leading = doc;
    }
    return !leading.is_null();
  })) << serve.err();
  EXPECT_EQ(leading.value("lock", ""), "primary") << leading;
  EXPECT_EQ(leading.value("node", ""), "side-1") << leading;
  EXPECT_GT(leading.value("token", std::uint64_t{0}), 0u) << leading;
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.err();
}

TEST_F(Operator, LinesToTheJournalStartWithTheirPriority) {
  // $JOURNAL_STREAM names stderr's device:inode, as systemd sets it for StandardError=journal.
  std::string script = "exec 2>" + path("journal") + "; JOURNAL_STREAM=$(stat -c %d:%i " +
                       path("journal") + ") exec " + leader_binary() + " \"$@\"";
  std::vector<std::string> argv = {"sh",   "-c",     script,    "sh", "run", "--store",
                                   store_, "--lock", "journal", "-v", "--",  "true"};
  Process p(argv, dir_);
  ASSERT_EQ(p.wait(), 0) << read_file(path("journal"));
  auto lines = read_lines(path("journal"));
  ASSERT_FALSE(lines.empty());
  for (const auto& line : lines)
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(^<6>info leader: .+$)"))) << line;
  Finished bad = leader({"status", "--store", "nosuchstore://x", "--lock", "x"});
  EXPECT_THAT(bad.err, Not(HasSubstr("<3>"))) << "no prefix when stderr is not the journal";
  Process other({"sh", "-c",
                 "exec 2>" + path("other") + "; exec " + leader_binary() +
                     " status --store nosuchstore://x --lock x"},
                dir_, {"JOURNAL_STREAM=1:1"});
  EXPECT_EQ(other.wait(), 78);
  EXPECT_THAT(read_file(path("other")), Not(HasSubstr("<3>"))) << "another stream's journal";
}

TEST_F(Operator, ConflictMessagesNameTheHolderOnceAndJsonGivesItAsAnObject) {
  Process holder = hold("nightly", {"--node-id", "report-runner-7", "--ttl", "30s"});
  Finished skipped = run("nightly", {"-v", "--json"}, {"true"});
  EXPECT_EQ(skipped.code, 0) << skipped.err;
  EXPECT_TRUE(std::regex_search(
      skipped.err,
      std::regex(
          R"('nightly' is held by report-runner-7 \(token \d+, (29|30) s left\); not running true)")))
      << skipped.err;
  auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(skipped.err, "held by"), 1u) << skipped.err;
  auto doc = nlohmann::json::parse(lines_of(skipped.out).back());
  EXPECT_EQ(doc["outcome"], "skipped");
  EXPECT_EQ(doc["holder"]["node_id"], "report-runner-7") << skipped.out;
  EXPECT_GT(doc["holder"]["fencing_token"].get<std::uint64_t>(), 0u);
  EXPECT_GT(doc["holder"]["expires_in_ms"].get<long>(), 25'000);
  EXPECT_EQ(doc["holders"].size(), 1u);
  let_go();
  EXPECT_EQ(holder.wait(), 0);
}

TEST_F(Operator, RunWaitSaysWhatItWaitsForAndWhoHoldsTheLockOnce) {
  Process holder = hold("queue", {"--node-id", "first"});
  Finished timed = run("queue", {"-v", "--wait", "2s"}, {"true"});
  EXPECT_EQ(timed.code, 0) << timed.err;
  EXPECT_TRUE(std::regex_search(
      timed.err,
      std::regex(R"(waiting for 'queue' \(--wait 2s\): held by first \(token \d+, \d+ s left\))")))
      << timed.err;
  Finished quiet = run("queue", {"--wait", "500ms"}, {"true"});
  EXPECT_THAT(quiet.err, Not(HasSubstr("waiting for"))) << "not a terminal, no -v";
  Process standby = start_run("queue", {"-v", "--wait", "forever"}, {"touch", path("ran")});
  std::this_thread::sleep_for(2500ms);  // several attempts, one holder
  let_go();
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(standby.wait(), 0) << standby.err();
  std::string err = standby.err();
  std::size_t lines = 0;
  for (auto at = err.find("waiting for 'queue'"); at != std::string::npos;
       at = err.find("waiting for 'queue'", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << err;
  EXPECT_THAT(err, HasSubstr("(--wait forever): held by first (token"));
  EXPECT_EQ(read_file(path("ran")), "");
  EXPECT_TRUE(std::ifstream(path("ran")).good()) << err;
}

// "Redis (pub/sub), PostgreSQL (LISTEN/NOTIFY)" -> {Redis, PostgreSQL}: the names of a list whose
// items may carry a parenthetical, separated by ", " or " and ".
std::set<std::string> store_names(std::string list) {
  list = std::regex_replace(list, std::regex(R"(\([^)]*\))"), "");
  list = std::regex_replace(list, std::regex(R"(\s+and\s+|\s*,\s*)"), ",");
  std::set<std::string> out;
  std::istringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    name = std::regex_replace(name, std::regex(R"(^\s+|\s+$)"), "");
    if (!name.empty() && name != "memory") out.insert(name);  // memory: not a CLI store
  }
  return out;
}

TEST_F(Operator, ObserveHelpAndTheDocsAgreeOnWhichStoresAreWatched) {
  // docs/design.md's capabilities table: the stores whose capabilities().watch is true, and the
  // others, which are polled.
  std::string design = read_file(std::string(LEADER_SOURCE_DIR) + "/docs/design.md");
  std::smatch row;
  ASSERT_TRUE(std::regex_search(
      design, row, std::regex(R"(\n\| `watch` \|[^|]*\| ([^|]*) \|[^|]*the others \(([^)]*)\))")))
      << "no watch row in the capabilities table";
  std::set<std::string> watched = store_names(row[1]), polled = store_names(row[2]);
  ASSERT_GE(watched.size(), 3u) << row[1];
  Finished help = leader({"observe", "--help"});
  ASSERT_EQ(help.code, 0);
  std::string text = std::regex_replace(help.out, std::regex(R"(\s+)"), " ");
  std::smatch said;
  ASSERT_TRUE(std::regex_search(text, said, std::regex(R"(Watched stores: ([^(]*) \()")))
      << help.out;
  EXPECT_EQ(store_names(said[1]), watched) << help.out;
  ASSERT_TRUE(std::regex_search(text, said,
                                std::regex(R"(Polled stores: ([^,]*(, [A-Z][A-Za-z]*)*), every)")))
      << help.out;
  EXPECT_EQ(store_names(said[1]), polled) << help.out;
  // docs/cli.md's `leader observe` section names the same stores.
  std::string cli = read_file(std::string(LEADER_SOURCE_DIR) + "/docs/cli.md");
  auto at = cli.find("## `leader observe`");
  ASSERT_NE(at, std::string::npos);
  std::string section = cli.substr(at, cli.find("\n## ", at + 1) - at);
  section = std::regex_replace(section, std::regex(R"(\s+)"), " ");
  ASSERT_TRUE(
      std::regex_search(section, said, std::regex(R"(On ([^.]*?) the store's notification)")))
      << section;
  EXPECT_EQ(store_names(said[1]), watched);
  ASSERT_TRUE(std::regex_search(section, said, std::regex(R"(\. ([A-Z][^.]*?) are polled)")))
      << section;
  EXPECT_EQ(store_names(said[1]), polled);
}

#ifdef LEADER_CLI_SD_NOTIFY
TEST_F(Operator, RunNotifiesReadyWhenStandingByAndStoppingOnSigterm) {
  Process holder = hold("notified", {"--node-id", "active"});
  NotifySocket sock(path("notify"));
  Process standby(run_argv("notified", {"--wait", "forever"}, {"true"}), dir_, {sock.env()});
  EXPECT_TRUE(sock.wait_for("READY=1")) << sock.received();
  EXPECT_THAT(sock.received(), HasSubstr("STATUS=waiting for 'notified'"));
  standby.signal(SIGTERM);
  EXPECT_EQ(standby.wait(), 128 + SIGTERM) << standby.err();
  EXPECT_TRUE(sock.wait_for("STOPPING=1")) << sock.received();
  let_go();
  EXPECT_EQ(holder.wait(), 0);
}

TEST_F(Operator, ServeNotifiesReadyOnceListeningAndStoppingOnSigterm) {
  if (leader({"serve", "--help"}).code != 0) GTEST_SKIP() << "leader serve not built";
  NotifySocket sock(path("notify"));
  Process serve({leader_binary(), "serve", "--store", store_, "--listen", "127.0.0.1:0"}, dir_,
                {sock.env()});
  EXPECT_TRUE(sock.wait_for("READY=1")) << sock.received() << serve.err();
  EXPECT_THAT(sock.received(), HasSubstr("STATUS=serving on port"));
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.err();
  EXPECT_TRUE(sock.wait_for("STOPPING=1")) << sock.received();
}

TEST_F(Operator, CronNotifiesReadyOnceScheduledAndStoppingOnSigterm) {
  if (leader({"cron", "--help"}).code != 0) GTEST_SKIP() << "leader cron not built";
  NotifySocket sock(path("notify"));
  Process cron({leader_binary(), "cron", "--store", store_, "--schedule", "0 0 1 1 *", "--lock",
                "yearly", "--", "true"},
               dir_, {sock.env()});
  EXPECT_TRUE(sock.wait_for("READY=1")) << sock.received() << cron.err();
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
  EXPECT_TRUE(sock.wait_for("STOPPING=1")) << sock.received();
}
#endif

}  // namespace
}  // namespace leader::cli_test
