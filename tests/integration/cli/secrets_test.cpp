// Secrets in store URIs never reach leader's output: passwords, secret-bearing query parameters
// and the userinfo of URIs that do not parse, in errors and in -v logs, for run and status.

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

// Every secret below is "S3cr3t..." (some split by a reserved character as "S3c/r3t..."): no
// piece of it may appear in what leader prints.
const std::vector<std::string> kPieces = {"S3c", "r3t"};

// expect_hidden's expected code for "69 or 78".
constexpr int kStoreFailure = -1;

class Secrets : public CliTest {
 protected:
  // Runs `leader <args...>` (with `env`) and checks that the marker appears nowhere.
  void expect_hidden(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                     int expected_code = 69) {
    Finished f = leader(args, env);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    if (expected_code == kStoreFailure)
      EXPECT_TRUE(f.code == 69 || f.code == 78) << f.code << " " << shown << "\n" << f.err;
    else
      EXPECT_EQ(f.code, expected_code) << shown << "\n" << f.err;
    for (const auto& piece : kPieces) {
      EXPECT_EQ(f.out.find(piece), std::string::npos) << shown << "\nstdout: " << f.out;
      EXPECT_EQ(f.err.find(piece), std::string::npos) << shown << "\nstderr: " << f.err;
    }
    EXPECT_NE(f.err.find("***"), std::string::npos) << shown << "\nstderr: " << f.err;
  }
};

// Unreachable stores (nothing listens on port 1) whose URIs carry secrets in every place.
const std::vector<std::string> kUnreachable = {
    "redis://u:S3cr3tA@127.0.0.1:1/?password=S3cr3tB",
    "redis://:S3cr3tA@127.0.0.1:1/0?token=S3cr3tB&prefix=app",
    "postgresql://u:S3cr3tA@127.0.0.1:1/db?sslpassword=S3cr3tB&password=S3cr3tC&connect_timeout=2",
    "mysql://u:S3cr3tA@127.0.0.1:1/db?password=S3cr3tB",
    "etcd://u:S3cr3tA@127.0.0.1:1?api_key=S3cr3tB",
    "zk://u:S3cr3tA@127.0.0.1:1?auth=S3cr3tB",
    "dynamodb://127.0.0.1:1?aws_secret_access_key=S3cr3tA&Session_Token=S3cr3tB",
    "sqlite:///nonexistent-dir/leader.db?secret=S3cr3tA",
};

// URIs that do not parse: the whole userinfo must be hidden, wherever it seems to end.
const std::vector<std::string> kMalformed = {
    "redis://u:S3cr3tA@h:notaport",  "redis://S3cr3tA@h:notaport",
    "redis://u:S3c/r3tA@h:notaport", "redis://u:S3c?r3tA@h:notaport",
    "redis://u:S3c#r3tA@h",          "redis://u:pw@h:notaport?password=S3cr3tA",
    "re dis://u:S3cr3tA@h",
};

// These URIs fail as unreachable (69) or as misconfigured (78: a parameter the store does not
// know, a store not built in, no such SQLite directory); what matters here is what is printed.
int unreachable_code(const std::string& /*uri*/) { return kStoreFailure; }

TEST_F(Secrets, StatusNeverPrintsThemEvenVerbose) {
  for (const auto& uri : kUnreachable)
    expect_hidden({"status", "--store", uri, "--lock", "x", "-v"}, {}, unreachable_code(uri));
  for (const auto& uri : kMalformed)
    expect_hidden({"status", "--store", uri, "--lock", "x", "-v"}, {}, 78);
}

TEST_F(Secrets, RunNeverPrintsThemEvenVerbose) {
  for (const auto& uri : kUnreachable)
    expect_hidden({"run", "--store", uri, "--lock", "x", "-v", "--", "true"}, {},
                  unreachable_code(uri));
  for (const auto& uri : kMalformed)
    expect_hidden({"run", "--store", uri, "--lock", "x", "-v", "--", "true"}, {}, 78);
}

TEST_F(Secrets, UsageErrorsThatEchoAStrayUriRedactIt) {
  expect_hidden({"status", "redis://u:S3cr3tA@h?password=S3cr3tB", "--lock", "x"}, {}, 64);
}

TEST_F(Secrets, StoreFromTheEnvironmentIsRedactedToo) {
  for (const auto& uri : {kUnreachable[0], kUnreachable[2]})
    expect_hidden({"status", "--lock", "x", "-v"}, {"LEADER_STORE=" + uri}, kStoreFailure);
  expect_hidden({"status", "--lock", "x", "-v"}, {"LEADER_STORE=" + kMalformed[2]}, 78);
}

TEST_F(Secrets, VerboseLogOfAWorkingStoreShowsTheUriWithoutSecretParameters) {
  // SQLite ignores nothing: an unknown secret-bearing parameter is refused, and named redacted.
  expect_hidden({"status", "--store", store_ + "?password=S3cr3tA", "--lock", "x", "-v"}, {}, 78);
  Finished ok = leader({"status", "--store", store_, "--lock", "x", "-v"});
  EXPECT_EQ(ok.code, 3) << ok.err;
  EXPECT_NE(ok.err.find("store " + store_), std::string::npos) << ok.err;
}

}  // namespace
}  // namespace leader::cli_test
