// A three-process election through the C interface, judged by a second client of the real store:
//   capi_judge REPLICA URI
// Starts three REPLICA processes (capi_replica, a C program on libleader.so.0, or a binding's
// replica with the same arguments and log lines: go/cmd/leader-replica), three terms each, on one
// lock, while this process, a second client of the same store (leader::open), reads the lock's
// holders every few milliseconds. Passes when:
// - every replica led its terms and exited 0;
// - the terms' fencing tokens strictly increase in the order the terms started, and no two terms
//   overlap in time (CLOCK_MONOTONIC, shared by the processes of one machine);
// - the server agrees: every read made entirely inside a term shows that term's token as the one
//   holder, and every term was seen so at least once.

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "leader/open.hpp"
#include "leader/store.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

long long ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

struct Term {
  std::string replica;
  unsigned long long token = 0;
  long long start = 0, end = 0;
  int stopped = 0;
  int seen = 0;  // reads inside the term that showed its token
};

struct Read {
  long long sent = 0, replied = 0;
  std::vector<std::uint64_t> tokens;  // the holders' fencing tokens
};

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

int fail(const std::string& why) {
  std::cerr << "capi_judge: FAILED: " << why << "\n";
  return 1;
}

}  // namespace

int judge_election(const std::string& replica, const std::string& uri);

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: capi_judge REPLICA URI\n";
    return 64;
  }
  try {
    return judge_election(argv[1], argv[2]);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

int judge_election(const std::string& replica, const std::string& uri) {
  const std::string lock = "capi-judge-" + std::to_string(::getpid());
  char dir_template[] = "/tmp/leader-capi-judge.XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(dir_template);
  constexpr std::size_t kReplicas = 3;
  constexpr std::size_t kTerms = 3;

  auto store = leader::open(uri);
  std::atomic<bool> done{false};
  std::vector<Read> reads;
  std::string read_error;
  std::thread judge([&] {
    while (!done.load()) {
      Read r;
      r.sent = ns(Clock::now());
      try {
        const leader::LockState s =
            store->inspect(lock, leader::Deadline::after(std::chrono::seconds(2)));
        for (const leader::Holder& h : s.holders) r.tokens.push_back(h.fencing_token);
      } catch (const std::exception& e) {
        read_error = e.what();
        return;
      }
      r.replied = ns(Clock::now());
      reads.push_back(std::move(r));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });

  std::vector<pid_t> pids;
  for (std::size_t i = 0; i < kReplicas; ++i) {
    const std::string node = "capi-replica-" + std::to_string(i);
    pids.push_back(spawn({replica, uri, lock, std::to_string(kTerms), "150", node,
                          (dir / (node + ".log")).string()}));
    if (pids.back() < 0) return fail("cannot start " + replica);
  }
  int bad_exits = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad_exits;
  }
  done = true;
  judge.join();
  if (!read_error.empty()) return fail("the judge's read failed: " + read_error);
  if (bad_exits != 0) return fail(std::to_string(bad_exits) + " replicas did not lead their terms");

  std::vector<Term> terms;
  for (std::size_t i = 0; i < kReplicas; ++i) {
    const std::string node = "capi-replica-" + std::to_string(i);
    std::ifstream in(dir / (node + ".log"));
    Term t;
    t.replica = node;
    while (in >> t.token >> t.start >> t.end >> t.stopped) terms.push_back(t);
  }
  std::filesystem::remove_all(dir);
  if (terms.size() != kReplicas * kTerms)
    return fail("logged " + std::to_string(terms.size()) + " terms, not " +
                std::to_string(kReplicas * kTerms));
  std::sort(terms.begin(), terms.end(),
            [](const Term& a, const Term& b) { return a.start < b.start; });
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].stopped) return fail(terms[i].replica + "'s term was stopped (lease lost)");
    if (i == 0) continue;
    if (terms[i].token <= terms[i - 1].token)
      return fail("token " + std::to_string(terms[i].token) + " of " + terms[i].replica +
                  " does not exceed the previous term's " + std::to_string(terms[i - 1].token));
    if (terms[i].start <= terms[i - 1].end)
      return fail(terms[i].replica + "'s term started " +
                  std::to_string((terms[i - 1].end - terms[i].start) / 1000) + " us before " +
                  terms[i - 1].replica + "'s ended");
  }
  // The server's word: a read sent and answered inside a term shows that term's token only.
  for (const Read& r : reads) {
    for (Term& t : terms) {
      if (r.sent < t.start || r.replied > t.end) continue;
      if (r.tokens.size() != 1 || r.tokens[0] != t.token)
        return fail("a read inside " + t.replica + "'s term (token " + std::to_string(t.token) +
                    ") showed " + std::to_string(r.tokens.size()) + " holders, the first " +
                    (r.tokens.empty() ? std::string("none") : std::to_string(r.tokens[0])));
      ++t.seen;
    }
  }
  for (const Term& t : terms)
    if (t.seen == 0)
      return fail("no read of the judge fell inside " + t.replica + "'s term (token " +
                  std::to_string(t.token) + ")");
  std::cout << "capi_judge: " << terms.size() << " terms of " << kReplicas << " "
            << std::filesystem::path(replica).filename().string()
            << " processes, tokens increasing, no overlap; " << reads.size()
            << " reads of the server agree (" << uri.substr(0, uri.find(':')) << ")\n";
  return 0;
}
