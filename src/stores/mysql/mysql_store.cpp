#include "mysql_store.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "leader/detail/group_size.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/names.hpp"
#include "my_rows.hpp"
#include "my_statements.hpp"

namespace leader::mysql {
namespace {

using std::chrono::microseconds;

std::int64_t micros(Duration d) { return static_cast<std::int64_t>(d.count()) * 1000; }

}  // namespace

Config Config::from_uri(const Uri& uri) {
  uri.expect_params({"prefix", "create_schema", "pool_size", "connect_timeout", "statement_timeout",
                     "socket", "tls", "tls_ca", "tls_cert", "tls_key", "tls_verify"});
  Config o;
  auto bad = [&](const std::string& why) {
    return InvalidArgument("store URI '" + uri.redacted() + "': " + why);
  };
  if (uri.hosts.size() > 1) throw bad("the mysql store takes one host");
  ConnectOptions& c = o.connect;
  if (!uri.hosts.empty()) {
    c.host = uri.hosts[0].host;
    c.port = static_cast<unsigned>(uri.hosts[0].port.value_or(3306));
  }
  c.socket = uri.param("socket");
  if (uri.hosts.empty() && !c.socket) throw bad("needs a host (mysql://host:3306/db) or ?socket=");
  c.user = uri.user;
  c.password = uri.password;
  c.database = uri.path.empty() ? "" : uri.path.substr(1);
  if (c.database.empty() || c.database.find('/') != std::string::npos)
    throw bad("needs a database name as its path (mysql://host:3306/db)");
  c.tls_ca = uri.param("tls_ca");
  c.tls_cert = uri.param("tls_cert");
  c.tls_key = uri.param("tls_key");
  c.tls = uri.bool_param("tls", c.tls_ca || c.tls_cert || c.tls_key);
  c.tls_verify = uri.bool_param("tls_verify", true);
  c.statement_timeout = uri.duration_param("statement_timeout", c.statement_timeout);
  o.connect_timeout = uri.duration_param("connect_timeout", o.connect_timeout);
  if (c.statement_timeout.count() <= 0 || o.connect_timeout.count() <= 0)
    throw bad("timeouts must be > 0");
  o.tables = tables_for(uri.param("prefix").value_or("leader_"));
  o.create_schema = uri.bool_param("create_schema", true);
  if (auto p = uri.param("pool_size")) {
    auto [end, ec] = std::from_chars(p->data(), p->data() + p->size(), o.pool_size);
    if (ec != std::errc() || end != p->data() + p->size() || o.pool_size < 1 || o.pool_size > 64)
      throw bad("pool_size '" + *p + "' is not a number in 1..64");
  }
  return o;
}

MysqlStore::MysqlStore(Config config)
    : config_(std::move(config)),
      pool_(std::string(kScheme), config_.pool_size, [this](Deadline deadline) {
        auto conn = Connection::open(config_.connect, deadline);
        set_up(*conn, deadline);
        return conn;
      }) {}

void MysqlStore::set_up(Connection& conn, Deadline deadline) {
  deadline = deadline.min(Deadline::after(config_.connect_timeout));
  ensure_schema(conn, config_.tables, config_.create_schema, deadline);
  for (const auto& [name, sql] : statements(config_.tables)) {
    if (name != kRenewBatch) {
      conn.prepare(name, sql, deadline);
      continue;
    }
    try {  // optional: a server without compound statements or JSON_TABLE refuses it
      conn.prepare(name, sql, deadline);
    } catch (const BackendError&) {
      if (conn.broken()) throw;
    }
  }
}

Rows MysqlStore::run(const char* statement, const std::vector<Param>& params, Deadline deadline) {
  auto conn = pool_.acquire(deadline);
  return conn->execute(statement, params, deadline);
}

Acquired MysqlStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  Lease lease{request.lock,
              request.owner,
              request.node_id,
              0,
              0,
              request.slots,
              request.ttl,
              {}};  // sent_at: stamped by the CheckedStore
  auto r = run(
      kAcquire,
      {request.lock, request.owner, request.node_id, static_cast<std::int64_t>(request.ttl.count()),
       static_cast<std::int64_t>(request.slots)},
      deadline);
  // On "mismatch" the slot column holds the lock's size.
  const GrantRow granted = decode_grant(r.rows);
  if (granted.outcome == "mismatch")
    throw detail::group_size_mismatch(kScheme, request.lock, granted.slot, request.slots);
  if (granted.outcome == "busy") return {};
  lease.slot = granted.slot;
  lease.fencing_token = granted.fencing_token;
  return {std::move(lease)};
}

Renewal MysqlStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  // CLIENT_FOUND_ROWS: affected = matched, so a renewal within the same microsecond is not lost.
  auto r = run(kRenew, {micros(ttl), lease.lock, std::int64_t{lease.slot}, lease.owner}, deadline);
  if (r.affected != 1) return {};
  return {LeaseStatus::ok, ttl};
}

std::vector<BatchRenewal> MysqlStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  std::optional<detail::ConnectionPool<Connection>::Handle> conn;
  bool sent = false;
  for (std::size_t begin = 0; begin < requests.size(); begin += kBatchChunk) {
    const std::size_t end = std::min(requests.size(), begin + kBatchChunk);
    auto fail = [&](const BackendError& e) {
      for (std::size_t i = begin; i < end; ++i) out[i].error = e;
    };
    if (!pool_.connection_for_chunk(conn, deadline, sent, fail)) continue;
    if (!(*conn)->prepared(kRenewBatch)) {  // MySQL, MariaDB < 10.6: one renew at a time
      conn.reset();
      auto rest = LeaseStore::renew_batch(requests.subspan(begin), deadline);
      std::move(rest.begin(), rest.end(), out.begin() + static_cast<std::ptrdiff_t>(begin));
      return out;
    }
    nlohmann::json batch = nlohmann::json::array();
    for (std::size_t i = begin; i < end; ++i) {
      const Lease& l = *requests[i].lease;
      batch.push_back({l.lock, l.slot, l.owner, micros(requests[i].ttl)});
    }
    std::string text = batch.dump();
    sent = true;
    try {
      Rows r = (*conn)->execute(kRenewBatch, {std::move(text)}, deadline);
      const std::string flags =
          r.rows.size() == 1 && r.rows[0].size() == 1 ? r.rows[0][0].value_or("") : "";
      if (flags.size() != end - begin)
        throw BackendError(ErrorCode::internal, kScheme,
                           "renew_batch: the server answered " + std::to_string(flags.size()) +
                               " outcomes for " + std::to_string(end - begin) + " leases");
      for (std::size_t i = begin; i < end; ++i)
        if (flags[i - begin] == '1') out[i].renewal = {LeaseStatus::ok, requests[i].ttl};
    } catch (const BackendError& e) {
      fail(e);
    }
  }
  return out;
}

LeaseStatus MysqlStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  Rows r = keep_for.count() > 0
               ? run(kKeep, {micros(keep_for), lease.lock, std::int64_t{lease.slot}, lease.owner},
                     deadline)
               : run(kRelease, {lease.lock, std::int64_t{lease.slot}, lease.owner}, deadline);
  return r.affected == 1 ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState MysqlStore::inspect(std::string_view lock, Deadline deadline) {
  LockState state{std::string(lock), {}};
  auto r = run(kInspect, {std::string(lock)}, deadline);
  state.holders = decode_holders(r.rows);
  return state;
}

std::vector<LockState> MysqlStore::list_locks(std::string_view prefix, Deadline deadline) {
  auto r = run(kListLocks, {std::string(prefix), std::string(prefix)}, deadline);
  std::vector<Holder> holders = decode_holders(r.rows);
  std::vector<LockState> out;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    std::string lock = r.rows[i].at(5).value_or("");
    if (out.empty() || out.back().lock != lock) out.push_back(LockState{lock, {}});
    out.back().holders.push_back(std::move(holders[i]));
  }
  return out;
}

void MysqlStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                               Deadline deadline) {
  Param last;
  if (candidate.last_completion)
    last = static_cast<std::int64_t>(
        std::chrono::duration_cast<microseconds>(candidate.last_completion->time_since_epoch())
            .count());
  run(kPutCandidate,
      {std::string(group), candidate.node_id, micros(ttl),
       static_cast<std::int64_t>(candidate.successes),
       static_cast<std::int64_t>(candidate.failures), last,
       nlohmann::json(candidate.metadata).dump()},
      deadline);
}

std::vector<Candidate> MysqlStore::list_candidates(std::string_view group, Deadline deadline) {
  auto r = run(kListCandidates, {std::string(group)}, deadline);
  return decode_candidates(r.rows);
}

void MysqlStore::remove_candidate(std::string_view group, std::string_view node_id,
                                  Deadline deadline) {
  run(kRemoveCandidate, {std::string(group), std::string(node_id)}, deadline);
}

}  // namespace leader::mysql
