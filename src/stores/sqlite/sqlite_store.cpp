#include "sqlite_store.hpp"

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "connection.hpp"
#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "rows.hpp"
#include "schema.hpp"

namespace leader::sqlite {
namespace {

using std::chrono::steady_clock;

std::int64_t ms(Duration d) { return d.count(); }

std::int64_t ms_from_wall(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string metadata_json(const std::map<std::string, std::string>& metadata) {
  return nlohmann::json(metadata).dump();
}

}  // namespace

/// Every prepared statement of one connection.
struct Statements {
  Statements(Connection& c, const SqlText& s)
      : begin(c, "BEGIN IMMEDIATE"),
        commit(c, "COMMIT"),
        rollback(c, "ROLLBACK"),
        held_size(c, s.held_size),
        renew_own(c, s.renew_own),
        bump_fence(c, s.bump_fence),
        take_slot(c, s.take_slot),
        renew(c, s.renew),
        release(c, s.release),
        release_keep(c, s.release_keep),
        inspect(c, s.inspect),
        list_locks(c, s.list_locks),
        put_candidate(c, s.put_candidate),
        list_candidates(c, s.list_candidates),
        remove_candidate(c, s.remove_candidate) {}
  Statement begin, commit, rollback;
  Statement held_size, renew_own, bump_fence, take_slot, renew, release, release_keep, inspect;
  Statement list_locks;
  Statement put_candidate, list_candidates, remove_candidate;
};

/// The connection with its statements, prepared once the schema is ready.
class Session {
 public:
  explicit Session(const std::string& path) : conn(path) {}

  /// Prepares the schema and the statements unless that already succeeded.
  void ensure_ready(const Config& o) {
    if (statements) return;
    prepare_schema(conn, o.table_prefix, o.create_schema);
    install_clock(conn, o.table_prefix);
    statements.emplace(conn, SqlText::for_prefix(o.table_prefix));
  }

  /// Runs a BEGIN/COMMIT/ROLLBACK statement.
  void run(Statement& s, std::string_view what) {
    ResetOnExit reset(s);
    s.execute(what);
  }

  Connection conn;
  std::optional<Statements> statements;
};

SqliteStore::SqliteStore(Config config)
    : config_(std::move(config)), session_(std::make_unique<Session>(config_.path)) {
  session_->conn.begin_call(Deadline::after(config_.busy_timeout), config_.busy_timeout);
  try {
    session_->ensure_ready(config_);
  } catch (const BackendError& e) {
    // A database locked right now is retried by the first call; misconfiguration is not.
    if (e.code() != ErrorCode::unavailable && e.code() != ErrorCode::deadline_exceeded) throw;
  }
}

SqliteStore::~SqliteStore() = default;

/// Holds the session for one call: waits until it is free or the deadline passes.
class SqliteStore::Gate {
 public:
  Gate(SqliteStore& store, Deadline deadline) : store_(store) {
    std::unique_lock lock(store_.mu_);
    entered_ = !deadline.expired() &&
               store_.released_.wait_until(lock, deadline.at(), [&] { return !store_.in_use_; });
    if (entered_) store_.in_use_ = true;
  }
  ~Gate() {
    if (!entered_) return;
    {
      std::lock_guard lock(store_.mu_);
      store_.in_use_ = false;
    }
    store_.released_.notify_one();
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  /// True when the session is ours.
  [[nodiscard]] bool entered() const { return entered_; }

 private:
  SqliteStore& store_;
  bool entered_ = false;
};

template <class Fn>
auto SqliteStore::with_session(std::string_view op, Deadline deadline, Fn&& fn) {
  Gate gate(*this, deadline);
  if (!gate.entered())
    throw sqlite_error(ErrorCode::deadline_exceeded, "database '" + config_.path +
                                                         "': " + std::string(op) +
                                                         " reached its deadline before it could "
                                                         "start");
  session_->conn.begin_call(deadline, config_.busy_timeout);
  session_->ensure_ready(config_);
  return fn(*session_, *session_->statements);
}

namespace {

// Throws failed_precondition when the lock has a live holder of another group size.
void check_group_size(Statements& st, const LeaseRequest& r) {
  ResetOnExit reset(st.held_size);
  st.held_size.bind(1, r.lock).bind(2, std::int64_t{r.slots});
  if (st.held_size.step("reading the group size of the lock"))
    throw detail::group_size_mismatch("sqlite", r.lock, static_cast<int>(st.held_size.int_at(0)),
                                      r.slots);
}

// The caller's live lease (same owner token) with its expiry reset to now + ttl, if any.
std::optional<Lease> renew_own(Statements& st, const LeaseRequest& r, TimePoint sent_at) {
  ResetOnExit reset(st.renew_own);
  st.renew_own.bind(1, r.lock).bind(2, r.owner).bind(3, ms(r.ttl));
  if (!st.renew_own.step("renewing the owner's lease")) return std::nullopt;
  Lease lease{r.lock,
              r.owner,
              r.node_id,
              static_cast<std::uint64_t>(st.renew_own.int_at(1)),
              static_cast<int>(st.renew_own.int_at(0)),
              r.slots,
              r.ttl,
              sent_at};
  st.renew_own.execute("renewing the owner's lease");
  return lease;
}

// Bumps the fence and takes the lowest free slot; nullopt on contention (the caller rolls back).
std::optional<Lease> take_slot(Statements& st, const LeaseRequest& r, TimePoint sent_at) {
  ResetOnExit reset_fence(st.bump_fence);
  st.bump_fence.bind(1, r.lock).bind(2, std::int64_t{r.slots});
  if (!st.bump_fence.step("bumping the fencing counter"))
    throw sqlite_error(ErrorCode::internal, "fencing counter returned no row");
  const auto token = st.bump_fence.int_at(0);
  st.bump_fence.execute("bumping the fencing counter");

  ResetOnExit reset_take(st.take_slot);
  st.take_slot.bind(1, r.lock)
      .bind(2, std::int64_t{std::max(r.slots, 1)})
      .bind(3, r.owner)
      .bind(4, r.node_id)
      .bind(5, token)
      .bind(6, ms(r.ttl));
  if (!st.take_slot.step("taking a lease slot")) return std::nullopt;
  const int slot = static_cast<int>(st.take_slot.int_at(0));
  st.take_slot.execute("taking a lease slot");
  return Lease{r.lock, r.owner, r.node_id, static_cast<std::uint64_t>(token),
               slot,   r.slots, r.ttl,     sent_at};
}

}  // namespace

Acquired SqliteStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  const TimePoint sent_at = steady_clock::now();
  return with_session("acquire", deadline, [&](Session& s, Statements& st) -> Acquired {
    s.run(st.begin, "starting the acquire transaction");
    try {
      check_group_size(st, request);
      std::optional<Lease> lease = renew_own(st, request, sent_at);
      if (!lease) lease = take_slot(st, request, sent_at);
      if (!lease) {  // contention: keep the counter
        s.run(st.rollback, "rolling back the acquire transaction");
        return {};
      }
      s.run(st.commit, "committing the acquisition");
      return Acquired{std::move(lease)};
    } catch (...) {
      s.conn.rollback_quietly();
      throw;
    }
  });
}

Renewal SqliteStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  const int changed = with_session("renew", deadline, [&](Session&, Statements& st) {
    ResetOnExit reset(st.renew);
    st.renew.bind(1, lease.lock).bind(2, std::int64_t{lease.slot}).bind(3, lease.owner);
    st.renew.bind(4, ms(ttl));
    return st.renew.execute("renewing a lease");
  });
  if (changed == 0) return {};
  return {LeaseStatus::ok, ttl};
}

std::vector<BatchRenewal> SqliteStore::renew_batch(std::span<const RenewalRequest> requests,
                                                   Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  if (requests.empty()) return out;
  with_session("renew_batch", deadline, [&](Session& s, Statements& st) {
    // Waiting for the write lock (busy handler, deadline) happens here, before any lease is
    // touched: a failure throws, as renew() would.
    s.run(st.begin, "starting the renew_batch transaction");
    try {
      for (std::size_t i = 0; i < requests.size(); ++i) {
        const Lease& lease = *requests[i].lease;
        ResetOnExit reset(st.renew);
        st.renew.bind(1, lease.lock).bind(2, std::int64_t{lease.slot}).bind(3, lease.owner);
        st.renew.bind(4, ms(requests[i].ttl));
        if (st.renew.execute("renewing a lease") != 0)
          out[i].renewal = {LeaseStatus::ok, requests[i].ttl};
      }
      s.run(st.commit, "committing the renew_batch transaction");
    } catch (const BackendError& e) {
      s.conn.rollback_quietly();
      for (auto& r : out) r = BatchRenewal{{}, e};  // unknown outcome for every lease
    } catch (...) {
      s.conn.rollback_quietly();  // nothing committed: as if nothing was sent
      throw;
    }
  });
  return out;
}

LeaseStatus SqliteStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  const int changed = with_session("release", deadline, [&](Session&, Statements& st) {
    Statement& q = keep_for.count() > 0 ? st.release_keep : st.release;
    ResetOnExit reset(q);
    q.bind(1, lease.lock).bind(2, std::int64_t{lease.slot}).bind(3, lease.owner);
    if (keep_for.count() > 0) q.bind(4, ms(keep_for));
    return q.execute("releasing a lease");
  });
  return changed == 0 ? LeaseStatus::lost : LeaseStatus::ok;
}

LockState SqliteStore::inspect(std::string_view lock, Deadline deadline) {
  LockState state{std::string(lock), {}};
  with_session("inspect", deadline, [&](Session&, Statements& st) {
    ResetOnExit reset(st.inspect);
    st.inspect.bind(1, lock);
    while (st.inspect.step("inspecting a lock")) {
      state.holders.push_back(holder_from_row(st.inspect));
    }
  });
  return state;
}

std::vector<LockState> SqliteStore::list_locks(std::string_view prefix, Deadline deadline) {
  std::vector<LockState> out;
  with_session("list_locks", deadline, [&](Session&, Statements& st) {
    ResetOnExit reset(st.list_locks);
    st.list_locks.bind(1, prefix);
    while (st.list_locks.step("listing locks")) {
      std::string lock = st.list_locks.text_at(5);
      if (out.empty() || out.back().lock != lock) out.push_back(LockState{lock, {}});
      out.back().holders.push_back(holder_from_row(st.list_locks));
    }
  });
  return out;
}

void SqliteStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                Deadline deadline) {
  const std::string metadata = metadata_json(candidate.metadata);
  with_session("put_candidate", deadline, [&](Session&, Statements& st) {
    Statement& q = st.put_candidate;
    ResetOnExit reset(q);
    q.bind(1, group).bind(2, candidate.node_id).bind(3, ms(ttl));
    q.bind(4, static_cast<std::int64_t>(candidate.successes));
    q.bind(5, static_cast<std::int64_t>(candidate.failures));
    if (candidate.last_completion)
      q.bind(6, ms_from_wall(*candidate.last_completion));
    else
      q.bind_null(6);
    q.bind(7, metadata);
    q.execute("registering a candidate");
  });
}

std::vector<Candidate> SqliteStore::list_candidates(std::string_view group, Deadline deadline) {
  std::vector<Candidate> out;
  with_session("list_candidates", deadline, [&](Session&, Statements& st) {
    Statement& q = st.list_candidates;
    ResetOnExit reset(q);
    q.bind(1, group);
    while (q.step("listing candidates")) {
      out.push_back(candidate_from_row(q, config_.path));
    }
  });
  return out;
}

void SqliteStore::remove_candidate(std::string_view group, std::string_view node_id,
                                   Deadline deadline) {
  with_session("remove_candidate", deadline, [&](Session&, Statements& st) {
    ResetOnExit reset(st.remove_candidate);
    st.remove_candidate.bind(1, group).bind(2, node_id);
    st.remove_candidate.execute("removing a candidate");
  });
}

}  // namespace leader::sqlite
