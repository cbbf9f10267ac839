#pragma once
// Shared pieces of the async / asio integration tests: the stores they run against (memory and
// sqlite always; each network store that was built, at the test-server endpoint or the URI in
// LEADER_TEST_<STORE>_URI) and a store wrapper that records which threads call the store.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "leader/detail/capabilities.hpp"
#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader::asio_test {

/// One store the suites run against.
struct StoreCase {
  std::string name;
  std::function<std::shared_ptr<LeaseStore>()> open;
  /// A lease short enough to lose within a test; coarse stores (ZooKeeper sessions) raise it.
  Duration short_lease = std::chrono::milliseconds(400);
};

/// Prints only the name (test names and failure messages stay readable).
inline void PrintTo(const StoreCase& c, std::ostream* os) { *os << c.name; }

inline std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

inline std::string sqlite_path() {
  static const std::string path = [] {
    std::string p = "/tmp/leader-asio-test-" + std::to_string(getpid()) + ".db";
    std::atexit([] {
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((sqlite_path() + suffix).c_str());
    });
    return p;
  }();
  return path;
}

/// A StoreCase opening `uri` (read from `env` when set), as the contract suite does.
inline StoreCase network_case(std::string name, const char* env, std::string fallback) {
  std::string uri = env_or(env, std::move(fallback));
  return {std::move(name), [uri] { return open(uri); }};
}

/// The stores built into this binary (network stores at the scripts/test-servers.sh endpoints).
inline std::vector<StoreCase> store_cases() {
  std::vector<StoreCase> cases;
  cases.push_back({"memory", [] { return make_memory_store(); }});
#ifdef LEADER_TEST_HAS_SQLITE
  cases.push_back({"sqlite", [] { return open("sqlite://" + sqlite_path()); }});
#endif
#ifdef LEADER_TEST_HAS_REDIS
  cases.push_back(network_case("redis", "LEADER_TEST_REDIS_URI", "redis://127.0.0.1:16379"));
#endif
#ifdef LEADER_TEST_HAS_POSTGRES
  cases.push_back(network_case("postgres", "LEADER_TEST_POSTGRES_URI",
                               "postgresql://postgres@127.0.0.1:15432/leader_test"));
#endif
#ifdef LEADER_TEST_HAS_MYSQL
  cases.push_back(
      network_case("mysql", "LEADER_TEST_MYSQL_URI", "mysql://root@127.0.0.1:13306/leader_test"));
#endif
#ifdef LEADER_TEST_HAS_ETCD
  cases.push_back(
      network_case("etcd", "LEADER_TEST_ETCD_URI", "etcd://127.0.0.1:12379?prefix=/leader-asio"));
#endif
#ifdef LEADER_TEST_HAS_ZOOKEEPER
  cases.push_back(network_case("zookeeper", "LEADER_TEST_ZOOKEEPER_URI",
                               "zk://127.0.0.1:12181?session_timeout=2s&root=/leader-asio"));
  cases.back().short_lease = std::chrono::seconds(3);
#endif
  return cases;
}

/// A unique lock name per call.
inline std::string unique_lock(const std::string& prefix) {
  static std::atomic<int> n{0};
  return "asio-" + prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

/// Forwards every call to a real store and counts calls made on a forbidden thread (the event
/// loop under test), so a test can prove that store I/O never runs there. A store with
/// asynchronous attempts (Redis) keeps them: starting one never blocks, so it may start on the
/// event loop; its I/O runs on the store's own thread.
class ThreadCheckedStore : public LeaseStore, public detail::AsyncAttempts {
 public:
  explicit ThreadCheckedStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}

  /// Calls from `id` count as violations from now on.
  void forbid(std::thread::id id) {
    std::lock_guard lock(mu_);
    forbidden_ = id;
  }
  [[nodiscard]] int violations() const { return violations_.load(); }
  [[nodiscard]] int calls() const { return calls_.load(); }

  std::string_view scheme() const override { return inner_->scheme(); }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    check();
    return inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    check();
    return inner_->renew(l, ttl, d);
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    check();
    return inner_->release(l, keep_for, d);
  }
  LockState inspect(std::string_view lock, Deadline d) override { return inner_->inspect(lock, d); }
  void put_candidate(std::string_view g, const Candidate& c, Duration ttl, Deadline d) override {
    inner_->put_candidate(g, c, ttl, d);
  }
  std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view node, Deadline d) override {
    inner_->remove_candidate(g, node, d);
  }

  [[nodiscard]] bool attempts_async() const noexcept override {
    return async() != nullptr && async()->attempts_async();
  }
  void try_acquire_async(const LeaseRequest& r, Deadline d,
                         std::function<void(Attempt)> done) override {
    ++calls_;
    async()->try_acquire_async(r, d, std::move(done));
  }
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order,
                            std::function<void(bool)> woken) override {
    return async()->wait_change(lock, seen, until, last, order, std::move(woken));
  }
  void cancel_wait(std::uint64_t id) noexcept override { async()->cancel_wait(id); }
  // Its own asynchronous attempts (counted) when the store has them; nothing else.
  Capabilities capabilities() noexcept override {
    return {.async = async() != nullptr ? this : nullptr};
  }

 private:
  [[nodiscard]] detail::AsyncAttempts* async() const { return inner_->capabilities().async; }
  void check() {
    ++calls_;
    std::lock_guard lock(mu_);
    if (std::this_thread::get_id() == forbidden_) ++violations_;
  }
  std::shared_ptr<LeaseStore> inner_;
  std::mutex mu_;
  std::thread::id forbidden_;
  std::atomic<int> violations_{0};
  std::atomic<int> calls_{0};
};

/// Options for a lock that is either free or held: no waiting, a long lease.
inline ElectionOptions no_wait(Duration lease = std::chrono::seconds(30)) {
  ElectionOptions o;
  o.wait_time = Duration{0};
  o.lease_time = lease;
  return o;
}

/// True when the lock has no holder.
inline bool is_free(LeaseStore& store, const std::string& lock) {
  return !store.inspect(lock, Deadline::after(std::chrono::seconds(5))).held();
}

}  // namespace leader::asio_test

/// Instantiates a parameterized suite over every built store.
#define LEADER_ASIO_STORES(Suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(Stores, Suite, ::testing::ValuesIn(::leader::asio_test::store_cases()), \
                           [](const ::testing::TestParamInfo<::leader::asio_test::StoreCase>& i) { \
                             return i.param.name;                                                  \
                           })
