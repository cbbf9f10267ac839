// bench_peers: the C++ side of bench/peers.sh (issue 14, targets 6 and 7; bench/README.md,
// "peers" and "server-side cost per lease"). Every timing mode runs for SECONDS, one operation
// after the other on one thread, and prints one line
//   <row> n=<operations> mean_us=<mean> p50_us=<median>
// Modes:
//   ours-store URI SECONDS LOCK          try_acquire + release(keep_for = 0) on the bare store
//   ours-elector URI SECONDS LOCK        LeaderElector::run_if_leader, no-op action (wait 0)
//   shedlock CONNINFO SECONDS TABLE      ShedLock's PostgreSQL statements over one libpq
//                                        connection: lock = UPDATE .. WHERE lock_until <= now(),
//                                        unlock = UPDATE .. SET lock_until = now(); then
//                                        SELECT 1 (libpq round trip); TABLE created and dropped
//   pg-parts CONNINFO PREFIX SECONDS     where ours' PostgreSQL time goes: the store's own prepared
//                                        statements (tables PREFIX*, created by the store) one
//                                        round trip each, autocommitted, each timed
//                                        separately, beside SELECT 1 and the fencing token's WAL
//                                        timeline read alone (rows "pg_<statement>")
//   redis-ping PORT SECONDS              PING over a plain blocking socket (C++ round trip)
//   proc ROW SECONDS ARGV...             one process per operation (posix_spawn + wait, stdout
//                                        to /dev/null); fails on a non-zero exit
//   hold URI LOCK_PREFIX N LEASE_S       target 7: acquires N locks LOCK_PREFIX<i> on the bare
//                                        store, prints "HELD N", then for each stdin line:
//                                        "renew" renews all (prints "RENEWED N"), "release"
//                                        releases all (prints "RELEASED N") and exits.
// Lock names come from the caller (bench/peers.sh puts its process id in them).

#include <arpa/inet.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/stores/postgres/pg_schema.hpp"
#include "../src/stores/postgres/pg_statements.hpp"
#include "leader/leader.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

leader::Deadline soon() { return leader::Deadline::after(5s); }

// Runs `op` back to back for `seconds` (at least 20 times) and prints the row.
void timed(const std::string& row, double seconds, const std::function<void()>& op) {
  std::vector<double> us;
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end || us.size() < 20) {
    auto t0 = Clock::now();
    op();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  double sum = 0;
  for (double v : us) sum += v;
  std::sort(us.begin(), us.end());
  std::printf("%s n=%zu mean_us=%.1f p50_us=%.1f\n", row.c_str(), us.size(),
              sum / static_cast<double>(us.size()), us[us.size() / 2]);
  std::fflush(stdout);
}

void ours_store(const std::string& uri, double seconds, const std::string& lock) {
  auto store = leader::open(uri);
  timed("ours_store", seconds, [&] {
    auto got = store->try_acquire({lock, leader::new_owner_token(), "peers", 30s, 0}, soon());
    if (!got) throw std::runtime_error("ours-store: the uncontended acquire was refused");
    (void)store->release(*got.lease, leader::Duration{0}, soon());
  });
}

void ours_elector(const std::string& uri, double seconds, const std::string& lock) {
  leader::LeaderElector elector(leader::open(uri),
                                {.wait_time = 0ms, .lease_time = 30s, .node_id = "peers"});
  timed("ours_elector", seconds, [&] {
    if (!elector.run_if_leader(lock, [] {}))
      throw std::runtime_error("ours-elector: the uncontended run_if_leader was skipped");
  });
}

PGresult* checked(PGconn* c, PGresult* r) {
  auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    std::string msg = PQerrorMessage(c);
    PQclear(r);
    throw std::runtime_error("shedlock: " + msg);
  }
  return r;
}

void shedlock(const std::string& conninfo, double seconds, const std::string& table) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
  auto exec = [&](const std::string& sql) { PQclear(checked(c, PQexec(c, sql.c_str()))); };
  // ShedLock's table (its README, "Configure LockProvider") and the JdbcTemplateLockProvider
  // statements with usingDbTime(): insert once, then lock/unlock by conditional UPDATE.
  exec("CREATE TABLE " + table +
       " (name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP NOT NULL,"
       " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL)");
  exec("INSERT INTO " + table + " VALUES ('peers', now(), now(), 'peers')");
  PQclear(checked(c, PQprepare(c, "lock",
                               ("UPDATE " + table +
                                " SET lock_until = now() + cast($1 AS interval), locked_at = now(),"
                                " locked_by = $2 WHERE name = $3 AND lock_until <= now()")
                                   .c_str(),
                               3, nullptr)));
  PQclear(checked(c, PQprepare(c, "unlock",
                               ("UPDATE " + table +
                                " SET lock_until = now() WHERE name = $1 AND locked_by = $2")
                                   .c_str(),
                               2, nullptr)));
  PQclear(checked(c, PQprepare(c, "one", "SELECT 1", 0, nullptr)));
  const char* lock_args[] = {"30 seconds", "peers-host", "peers"};
  const char* unlock_args[] = {"peers", "peers-host"};
  try {
    timed("shedlock_sql", seconds, [&] {
      PGresult* r = checked(c, PQexecPrepared(c, "lock", 3, lock_args, nullptr, nullptr, 0));
      bool got = std::string(PQcmdTuples(r)) == "1";
      PQclear(r);
      if (!got) throw std::runtime_error("shedlock: the uncontended lock updated no row");
      PQclear(checked(c, PQexecPrepared(c, "unlock", 2, unlock_args, nullptr, nullptr, 0)));
    });
    timed("libpq_select1", seconds,
          [&] { PQclear(checked(c, PQexecPrepared(c, "one", 0, nullptr, nullptr, nullptr, 0))); });
  } catch (...) {
    PQclear(PQexec(c, ("DROP TABLE IF EXISTS " + table).c_str()));
    PQfinish(c);
    throw;
  }
  exec("DROP TABLE " + table);
  PQfinish(c);
}

// One raw libpq connection; each step of an acquire + release timed on its own (p50 per step).
void pg_parts(const std::string& conninfo, const std::string& prefix, double seconds) {
  namespace pg = leader::postgres;
  (void)leader::open(conninfo + "?prefix=" + prefix)->inspect("peers", soon());  // the tables
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
  auto tables = pg::tables_for(prefix);
  for (const auto& [name, sql] : pg::statements(tables))
    PQclear(checked(c, PQprepare(c, name.c_str(), sql.c_str(), 0, nullptr)));
  tables.channel.clear();  // the same grant and release without pg_notify
  for (const auto& [name, sql] : pg::statements(tables))
    PQclear(checked(c, PQprepare(c, ("quiet_" + name).c_str(), sql.c_str(), 0, nullptr)));
  PQclear(checked(c, PQprepare(c, "one", "SELECT 1", 0, nullptr)));
  PQclear(checked(c, PQprepare(c, "timeline",
                               "SELECT ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))"
                               "::bit(32)::bigint",
                               0, nullptr)));
  const std::string lock = "peers-parts";
  std::vector<std::string> steps = {pg::kAcquire, pg::kRelease};
  std::vector<std::vector<double>> us(steps.size() + 4);
  auto run = [&](const std::string& name, std::vector<const char*> params) {
    auto t0 = Clock::now();
    PGresult* r = PQexecPrepared(c, name.c_str(), static_cast<int>(params.size()), params.data(),
                                 nullptr, nullptr, 0);
    PQclear(checked(c, r));
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    const std::string owner = leader::new_owner_token();
    const char* l = lock.c_str();
    const char* o = owner.c_str();
    us[0].push_back(run(pg::kAcquire, {l, o, "peers", "30000", "0"}));
    us[1].push_back(run(pg::kRelease, {l, "0", o}));
    // The same pair without NOTIFY.
    const std::string owner2 = leader::new_owner_token();
    us[2].push_back(
        run(std::string("quiet_") + pg::kAcquire, {l, owner2.c_str(), "peers", "30000", "0"}));
    us[3].push_back(run(std::string("quiet_") + pg::kRelease, {l, "0", owner2.c_str()}));
    us[4].push_back(run("one", {}));
    us[5].push_back(run("timeline", {}));
  }
  steps.insert(steps.end(), {"acquire_without_notify", "release_without_notify", "select1",
                             "wal_timeline_read"});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto& v = us[i];
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    std::printf("pg_%s n=%zu mean_us=%.1f p50_us=%.1f\n", steps[i].c_str(), v.size(),
                sum / static_cast<double>(v.size()), v[v.size() / 2]);
  }
  PQfinish(c);
}

void redis_ping(int port, double seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("redis-ping: connect failed");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  static const char kPing[] = "*1\r\n$4\r\nPING\r\n";
  timed("cpp_redis_ping", seconds, [&] {
    if (::write(fd, kPing, sizeof kPing - 1) != static_cast<ssize_t>(sizeof kPing - 1))
      throw std::runtime_error("redis-ping: write failed");
    char buf[16];
    std::size_t got = 0;
    while (got < 7) {  // "+PONG\r\n"
      ssize_t n = ::read(fd, buf + got, sizeof buf - got);
      if (n <= 0) throw std::runtime_error("redis-ping: read failed");
      got += static_cast<std::size_t>(n);
    }
  });
  ::close(fd);
}

void proc(const std::string& row, double seconds, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  timed(row, seconds, [&] {
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &quiet, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&quiet);
    if (rc != 0) throw std::runtime_error("proc: cannot start " + argv[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      throw std::runtime_error("proc: " + argv[0] + " failed");
  });
}

void hold(const std::string& uri, const std::string& prefix, int n, int lease_s) {
  auto store = leader::open(uri);
  const leader::Duration lease = std::chrono::seconds(lease_s);
  std::vector<leader::Lease> held;
  held.reserve(static_cast<std::size_t>(n));
  auto release_all = [&] {
    int released = 0;
    for (const auto& l : held) {
      try {
        (void)store->release(l, leader::Duration{0}, soon());
        ++released;
      } catch (const std::exception& e) {
        std::cerr << "release of " << l.lock << " failed: " << e.what() << "\n";
      }
    }
    held.clear();
    return released;
  };
  try {
    for (int i = 0; i < n; ++i) {
      auto lock = prefix + std::to_string(i);
      auto got = store->try_acquire({lock, leader::new_owner_token(), "peers", lease, 0}, soon());
      if (!got) throw std::runtime_error("hold: " + lock + " was not granted");
      held.push_back(*got.lease);
    }
  } catch (...) {
    release_all();
    throw;
  }
  std::printf("HELD %zu\n", held.size());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "renew") {
      int ok = 0;
      for (const auto& l : held)
        ok += store->renew(l, lease, soon()).status == leader::LeaseStatus::ok;
      std::printf("RENEWED %d\n", ok);
    } else if (line == "release") {
      break;
    }
    std::fflush(stdout);
  }
  std::printf("RELEASED %d\n", release_all());  // also when stdin closed early
  std::fflush(stdout);
}

int usage() {
  std::cerr << "usage: bench_peers ours-store|ours-elector URI SECONDS LOCK\n"
               "       bench_peers shedlock CONNINFO SECONDS TABLE\n"
               "       bench_peers pg-parts CONNINFO PREFIX SECONDS\n"
               "       bench_peers redis-ping PORT SECONDS\n"
               "       bench_peers proc ROW SECONDS ARGV...\n"
               "       bench_peers hold URI LOCK_PREFIX N LEASE_SECONDS\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 4 && a[0] == "ours-store") {
      ours_store(a[1], std::stod(a[2]), a[3]);
    } else if (a.size() == 4 && a[0] == "ours-elector") {
      ours_elector(a[1], std::stod(a[2]), a[3]);
    } else if (a.size() == 4 && a[0] == "shedlock") {
      shedlock(a[1], std::stod(a[2]), a[3]);
    } else if (a.size() == 4 && a[0] == "pg-parts") {
      pg_parts(a[1], a[2], std::stod(a[3]));
    } else if (a.size() == 3 && a[0] == "redis-ping") {
      redis_ping(std::stoi(a[1]), std::stod(a[2]));
    } else if (a.size() >= 4 && a[0] == "proc") {
      proc(a[1], std::stod(a[2]), {a.begin() + 3, a.end()});
    } else if (a.size() == 5 && a[0] == "hold") {
      hold(a[1], a[2], std::stoi(a[3]), std::stoi(a[4]));
    } else {
      return usage();
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_peers: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
