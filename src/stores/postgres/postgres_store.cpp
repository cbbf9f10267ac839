#include "postgres_store.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "leader/detail/group_size.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/names.hpp"
#include "pg_rows.hpp"
#include "pg_statements.hpp"

namespace leader::postgres {
namespace {

using std::chrono::microseconds;

constexpr std::string_view kOwnOptions[] = {"prefix",    "table_prefix",      "create_schema",
                                            "pool_size", "statement_timeout", "connect_timeout"};

// The URI without this store's own query parameters; libpq's own ones are kept verbatim.
std::string libpq_uri(const std::string& original) {
  auto q = original.find('?');
  if (q == std::string::npos) return original;
  std::string kept;
  std::string_view query(original);
  query.remove_prefix(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto key = part.substr(0, part.find('='));
    if (part.empty() ||
        std::find(std::begin(kOwnOptions), std::end(kOwnOptions), key) != std::end(kOwnOptions))
      continue;
    kept += (kept.empty() ? "" : "&") + std::string(part);
  }
  return original.substr(0, q) + (kept.empty() ? "" : "?" + kept);
}

std::string affected(PGresult* r) { return PQcmdTuples(r); }

// A PostgreSQL array literal of text elements: each one double-quoted, '"' and backslash escaped.
void append_text_element(std::string& array, const std::string& value) {
  array += array.size() > 1 ? ",\"" : "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') array += '\\';
    array += c;
  }
  array += '"';
}

void append_int_element(std::string& array, long long value) {
  if (array.size() > 1) array += ',';
  array += std::to_string(value);
}

// Splits a batch into chunks of at most `limit` positions, in order; a lease (lock, slot, owner)
// already in the current chunk starts a new one, so that each statement names a row once.
std::vector<std::vector<std::size_t>> chunks_of(std::span<const RenewalRequest> requests,
                                                std::size_t limit) {
  std::vector<std::vector<std::size_t>> chunks;
  std::set<std::tuple<std::string_view, int, std::string_view>> named;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Lease& l = *requests[i].lease;
    auto key = std::make_tuple(std::string_view(l.lock), l.slot, std::string_view(l.owner));
    if (chunks.empty() || chunks.back().size() >= limit || named.contains(key)) {
      chunks.emplace_back();
      named.clear();
    }
    named.insert(key);
    chunks.back().push_back(i);
  }
  return chunks;
}

std::string metadata_json(const std::map<std::string, std::string>& metadata) {
  return nlohmann::json(metadata).dump();
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  Config o;
  o.tables = tables_for(uri.param("prefix").value_or("leader_"));
  o.create_schema = uri.bool_param("create_schema", true);
  if (auto p = uri.param("pool_size")) {
    auto [end, ec] = std::from_chars(p->data(), p->data() + p->size(), o.pool_size);
    if (ec != std::errc() || end != p->data() + p->size() || o.pool_size < 1 || o.pool_size > 64)
      throw InvalidArgument("URI parameter 'pool_size' of '" + uri.redacted() + "' is '" + *p +
                            "'; expected a number in 1..64");
  }
  o.statement_timeout = uri.duration_param("statement_timeout", o.statement_timeout);
  o.connect_timeout = uri.duration_param("connect_timeout", o.connect_timeout);
  if (o.statement_timeout.count() <= 0 || o.connect_timeout.count() <= 0)
    throw InvalidArgument("timeouts in '" + uri.redacted() + "' must be > 0");
  o.conninfo = libpq_uri(uri.original);
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(o.conninfo.c_str(), &error);
  if (parsed == nullptr) {
    std::string why = error ? error : "out of memory";
    if (error) PQfreemem(error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw InvalidArgument("store URI '" + uri.redacted() +
                          "' is rejected by libpq: " + uri.scrub(why));
  }
  PQconninfoFree(parsed);
  return o;
}

PostgresStore::PostgresStore(Config config)
    : config_(std::move(config)),
      pool_(std::string(kScheme), config_.pool_size, [this](Deadline deadline) {
        auto conn = Connection::open(config_.conninfo, deadline);
        set_up(*conn, deadline);
        return conn;
      }) {}

void PostgresStore::set_up(Connection& conn, Deadline deadline) {
  deadline = deadline.min(Deadline::after(config_.connect_timeout));
  if (conn.hot_standby())
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       "the server is a standby (in recovery, read-only): the store needs the "
                       "primary; name every host with target_session_attrs=read-write");
  ensure_schema(conn, config_.tables, config_.create_schema, deadline);
  conn.run({{"SELECT set_config('statement_timeout', $1, false),"
             " set_config('client_connection_check_interval', '1000', false)",
             {std::to_string(config_.statement_timeout.count())},
             false}},
           deadline);
  conn.prepare(statements(config_.tables), deadline);
}

std::vector<Result> PostgresStore::run(const std::vector<Call>& calls, Deadline deadline) {
  auto conn = pool_.acquire(deadline);
  return conn->run(calls, deadline);
}

Acquired PostgresStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  Lease lease{request.lock,
              request.owner,
              request.node_id,
              0,
              0,
              request.slots,
              request.ttl,
              {}};  // sent_at: stamped by the CheckedStore
  const std::vector<std::optional<std::string>> params{request.lock, request.owner, request.node_id,
                                                       std::to_string(request.ttl.count()),
                                                       std::to_string(request.slots)};
  auto send = [&](const char* statement, std::vector<std::optional<std::string>> values) {
    auto results = run({{statement, std::move(values)}}, deadline);
    return decode_grant(results[0].get());
  };
  // A single lease first tries the cheap statement; what it cannot decide goes to kAcquire.
  std::optional<GrantRow> granted;
  if (request.slots == 0) {
    granted = send(kAcquireSingle, {params.begin(), params.end() - 1});
    if (granted && granted->outcome == "busy") return {};
  }
  // "retry" only when another acquisition of the lock committed while this one ran (contention),
  // e.g. group acquirers racing for free slots: send it again with a fresh snapshot.
  for (int attempt = 0; !granted && attempt < kAcquireAttempts; ++attempt) {
    granted = send(kAcquire, params);
    if (!granted) return {};
    if (granted->outcome == "retry" && !deadline.expired()) granted.reset();
  }
  if (!granted || granted->outcome == "retry") return {};
  if (granted->outcome == "mismatch")
    throw detail::group_size_mismatch(kScheme, request.lock, granted->slot, request.slots);
  lease.slot = granted->slot;
  lease.fencing_token = granted->fencing_token;
  return {std::move(lease)};
}

Renewal PostgresStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  auto results =
      run({{kRenew,
            {lease.lock, std::to_string(lease.slot), lease.owner, std::to_string(ttl.count())}}},
          deadline);
  if (affected(results[0].get()) != "1") return {};
  return {LeaseStatus::ok, ttl};
}

std::vector<BatchRenewal> PostgresStore::renew_batch(std::span<const RenewalRequest> requests,
                                                     Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  std::optional<detail::ConnectionPool<Connection>::Handle> conn;
  bool sent = false;
  for (const auto& chunk : chunks_of(requests, kBatchChunk)) {
    auto fail = [&](const BackendError& e) {
      for (std::size_t i : chunk) out[i].error = e;
    };
    if (!pool_.connection_for_chunk(conn, deadline, sent, fail)) continue;
    std::string locks = "{", slots = "{", owners = "{", ttls = "{";
    for (std::size_t i : chunk) {
      const Lease& l = *requests[i].lease;
      append_text_element(locks, l.lock);
      append_int_element(slots, l.slot);
      append_text_element(owners, l.owner);
      append_int_element(ttls, requests[i].ttl.count());
    }
    for (std::string* a : {&locks, &slots, &owners, &ttls}) *a += '}';
    sent = true;
    try {
      auto results = (*conn)->run(
          {{kRenewBatch, {std::move(locks), std::move(slots), std::move(owners), std::move(ttls)}}},
          deadline);
      PGresult* r = results[0].get();
      for (int row = 0; row < PQntuples(r); ++row) {
        const long long n = std::atoll(PQgetvalue(r, row, 0));
        if (n < 1 || n > static_cast<long long>(chunk.size()))
          throw BackendError(ErrorCode::internal, kScheme,
                             "renew_batch: the server returned position " + std::to_string(n) +
                                 " of a chunk of " + std::to_string(chunk.size()));
        const std::size_t i = chunk[static_cast<std::size_t>(n - 1)];
        out[i].renewal = {LeaseStatus::ok, requests[i].ttl};
      }
    } catch (const BackendError& e) {
      for (std::size_t i : chunk) out[i].renewal = {};
      fail(e);
    }
  }
  return out;
}

LeaseStatus PostgresStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  std::vector<std::optional<std::string>> params{lease.lock, std::to_string(lease.slot),
                                                 lease.owner};
  if (keep_for.count() > 0) {
    params.emplace_back(std::to_string(keep_for.count()));
    auto results = run({{kKeep, std::move(params)}}, deadline);
    return affected(results[0].get()) == "1" ? LeaseStatus::ok : LeaseStatus::lost;
  }
  auto results = run({{kRelease, std::move(params)}}, deadline);
  return affected(results[0].get()) == "1" ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState PostgresStore::inspect(std::string_view lock, Deadline deadline) {
  LockState state{std::string(lock), {}};
  auto results = run({{kInspect, {std::string(lock)}}}, deadline);
  state.holders = decode_holders(results[0].get());
  return state;
}

std::vector<LockState> PostgresStore::list_locks(std::string_view prefix, Deadline deadline) {
  auto results = run({{kListLocks, {std::string(prefix)}}}, deadline);
  PGresult* r = results[0].get();
  std::vector<Holder> holders = decode_holders(r);
  std::vector<LockState> out;
  for (int i = 0; i < PQntuples(r); ++i) {
    std::string lock = PQgetvalue(r, i, 5);
    if (out.empty() || out.back().lock != lock) out.push_back(LockState{lock, {}});
    out.back().holders.push_back(std::move(holders[static_cast<std::size_t>(i)]));
  }
  return out;
}

void PostgresStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                  Deadline deadline) {
  std::optional<std::string> last;
  if (candidate.last_completion)
    last = std::to_string(
        std::chrono::duration_cast<microseconds>(candidate.last_completion->time_since_epoch())
            .count());
  run({{kPutCandidate,
        {std::string(group), candidate.node_id, std::to_string(ttl.count()),
         std::to_string(candidate.successes), std::to_string(candidate.failures), last,
         metadata_json(candidate.metadata)}}},
      deadline);
}

std::vector<Candidate> PostgresStore::list_candidates(std::string_view group, Deadline deadline) {
  auto results = run({{kListCandidates, {std::string(group)}}}, deadline);
  return decode_candidates(results[0].get());
}

void PostgresStore::remove_candidate(std::string_view group, std::string_view node_id,
                                     Deadline deadline) {
  run({{kRemoveCandidate, {std::string(group), std::string(node_id)}}}, deadline);
}

}  // namespace leader::postgres
