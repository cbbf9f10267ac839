#include "pg_statements.hpp"

namespace leader::postgres {
namespace {

std::string ms(const char* param) {
  return std::string(param) + "::bigint * interval '1 millisecond'";
}

// A RETURNING column that notifies the watchers of lock $1 (README.md "Watching"), once per row
// the statement changed; delivered at commit. Empty when the tables have no channel.
std::string notify(const Tables& t) {
  if (t.channel.empty()) return {};
  return "pg_notify('" + t.channel + "', $1::text)";
}
std::string returning_notify(const Tables& t) {
  return t.channel.empty() ? std::string() : " RETURNING " + notify(t);
}

// The next fencing token after `last`: the counter + 1, but at least the server's current WAL
// timeline in the bits above kTimelineShift (README.md "Fencing source"). A promoted standby
// writes on a new, higher timeline, so its tokens exceed every token of the old primary, also
// those it granted but never replicated (asynchronous commit). The timeline is read from the
// name of the current WAL file (its first 8 hex digits): pg_walfile_name uses the timeline WAL is
// inserted on, which is the new one before the first write after a promotion is allowed
// (pg_control_checkpoint() shows it only after the next checkpoint).
std::string next_token(const char* last) {
  return "greatest(" + std::string(last) +
         " + 1, ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::bigint << " +
         std::to_string(kTimelineShift) + ")";
}

// ON CONFLICT clause that takes a lease row over only once it has expired (server time).
std::string take_over_if_expired() {
  return " ON CONFLICT (lock_name, slot) DO UPDATE SET owner = EXCLUDED.owner,"
         " node_id = EXCLUDED.node_id, fencing_token = EXCLUDED.fencing_token,"
         " acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at"
         " WHERE l.expires_at <= now()";
}

// The acquisition, one statement; returns at most one row (outcome, slot, fencing_token):
// "mismatch" (slot = the size the live holders use), "held" (the owner's own live lease, its
// expiry reset), "granted" (the lowest free-or-expired slot < max(N, 1), the fence bumped) or
// "retry" (another acquisition of the lock committed after this statement's snapshot: its view of
// the slots is stale, nothing was written). No row: contention.
//
// The fence row is the lock's serialisation point: the upsert that bumps it takes its row lock and
// sees its latest committed version, and bumps it only while last_token still equals the value
// in the statement's snapshot. Every grant bumps it, so an equal counter means no grant committed
// since the snapshot, and the slots picked from the snapshot are the current ones. The lease
// upsert then re-checks expiry on the latest version of its row under the row lock, so a renewal
// that committed meanwhile wins (the token it consumed is skipped).
std::string acquire(const Tables& t) {
  const std::string live = " AND e.expires_at > now()";
  return "WITH held AS (SELECT f.slots FROM " + t.fences +
         " f WHERE f.lock_name = $1::text AND f.slots IS NOT NULL AND f.slots <> $5::int"
         " AND EXISTS (SELECT 1 FROM " +
         t.leases + " e WHERE e.lock_name = $1::text" + live + ")), own AS (UPDATE " + t.leases +
         " e SET expires_at = now() + " + ms("$4") +
         " WHERE e.lock_name = $1::text AND e.owner = $2::text" + live +
         " AND NOT EXISTS (SELECT 1 FROM held) RETURNING e.slot, e.fencing_token),"
         " pick AS (SELECT s FROM generate_series(0, greatest($5::int, 1) - 1) AS s"
         " WHERE NOT EXISTS (SELECT 1 FROM held) AND NOT EXISTS (SELECT 1 FROM own)"
         " AND NOT EXISTS (SELECT 1 FROM " +
         t.leases + " e WHERE e.lock_name = $1::text AND e.slot = s" + live +
         ") ORDER BY s LIMIT 1), fence AS (INSERT INTO " + t.fences +
         " AS f (lock_name, last_token, slots) SELECT $1::text, " + next_token("0") +
         ", $5::int FROM pick ON CONFLICT (lock_name) DO UPDATE SET last_token = " +
         next_token("f.last_token") +
         ", slots = EXCLUDED.slots WHERE f.last_token = (SELECT c.last_token FROM " + t.fences +
         " c WHERE c.lock_name = $1::text) RETURNING last_token), ins AS (INSERT INTO " + t.leases +
         " AS l (lock_name, slot, owner, node_id, fencing_token, acquired_at, expires_at)"
         " SELECT $1::text, s, $2::text, $3::text, last_token, now(), now() + " +
         ms("$4") + " FROM pick, fence" + take_over_if_expired() +
         " RETURNING slot, fencing_token" + (t.channel.empty() ? std::string() : ", " + notify(t)) +
         ")"
         " SELECT 'mismatch', slots, NULL::bigint FROM held"
         " UNION ALL SELECT 'held', slot, fencing_token FROM own"
         " UNION ALL SELECT 'granted', slot, fencing_token FROM ins"
         " UNION ALL SELECT 'retry', s, NULL::bigint FROM pick WHERE NOT EXISTS (SELECT 1 FROM "
         "fence)";
}

// The acquisition of a single lease (slots 0) when nobody holds the lock, cheaper than acquire():
// "granted" (slot 0, the fence bumped) when the statement's snapshot shows no live lease of the
// lock and no grant committed since it (the same fence-row check as acquire()); "busy" when
// another owner's lease is live and the lock is not held as a group of another size
// (contention); no row otherwise (the owner's own live lease, a size mismatch, a stale snapshot
// or a renewal that won the row): the caller then sends acquire(), which tells them apart.
std::string acquire_single(const Tables& t) {
  const std::string live = "e.lock_name = $1::text AND e.expires_at > now()";
  return "WITH fence AS (INSERT INTO " + t.fences +
         " AS f (lock_name, last_token, slots) VALUES ($1::text, " + next_token("0") +
         ", 0) ON CONFLICT (lock_name) DO UPDATE SET last_token = " + next_token("f.last_token") +
         ", slots = 0 WHERE f.last_token = (SELECT c.last_token FROM " + t.fences +
         " c WHERE c.lock_name = $1::text) AND NOT EXISTS (SELECT 1 FROM " + t.leases +
         " e WHERE " + live + ") RETURNING last_token), ins AS (INSERT INTO " + t.leases +
         " AS l (lock_name, slot, owner, node_id, fencing_token, acquired_at, expires_at)"
         " SELECT $1::text, 0, $2::text, $3::text, last_token, now(), now() + " +
         ms("$4") + " FROM fence" + take_over_if_expired() + " RETURNING slot, fencing_token" +
         (t.channel.empty() ? std::string() : ", " + notify(t)) +
         ") SELECT 'granted', slot, fencing_token FROM ins"
         " UNION ALL SELECT 'busy', NULL::int, NULL::bigint WHERE NOT EXISTS (SELECT 1 FROM fence)"
         " AND EXISTS (SELECT 1 FROM " +
         t.leases + " e WHERE " + live +
         " AND e.owner <> $2::text) AND NOT EXISTS (SELECT 1 FROM " + t.fences +
         " f WHERE f.lock_name = $1::text AND f.slots IS NOT NULL AND f.slots <> 0)";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> statements(const Tables& t) {
  return {
      {kAcquire, acquire(t)},
      {kAcquireSingle, acquire_single(t)},
      {kRenew, "UPDATE " + t.leases + " SET expires_at = now() + " + ms("$4") +
                   " WHERE lock_name = $1::text AND slot = $2::int AND owner = $3::text"
                   " AND expires_at > now()"},
      // The same condition and expiry as kRenew for each lease of the arrays, all in one
      // statement (one implicit transaction: now() is its start, after the call began).
      {kRenewBatch,
       "UPDATE " + t.leases +
           " l SET expires_at = now() + b.ttl_ms * interval '1 millisecond'"
           " FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[]) WITH ORDINALITY"
           " AS b (lock_name, slot, owner, ttl_ms, n)"
           " WHERE l.lock_name = b.lock_name AND l.slot = b.slot AND l.owner = b.owner"
           " AND l.expires_at > now() RETURNING b.n"},
      // A renewal keeps the holders (no notification); a release or a keep (a shorter expiry the
      // watchers re-read to wake at) notifies, as a granted acquisition does.
      {kRelease, "DELETE FROM " + t.leases +
                     " WHERE lock_name = $1::text AND slot = $2::int AND owner = $3::text"
                     " AND expires_at > now()" +
                     returning_notify(t)},
      {kKeep, "UPDATE " + t.leases + " SET expires_at = now() + " + ms("$4") +
                  " WHERE lock_name = $1::text AND slot = $2::int AND owner = $3::text"
                  " AND expires_at > now()" +
                  returning_notify(t)},
      {kInspect,
       "SELECT slot, node_id, owner, fencing_token,"
       " ceil(extract(epoch FROM expires_at - now()) * 1000)::bigint FROM " +
           t.leases + " WHERE lock_name = $1::text AND expires_at > now() ORDER BY slot"},
      // The columns of kInspect, then lock_name; left() rather than LIKE: no pattern characters.
      {kListLocks,
       "SELECT slot, node_id, owner, fencing_token,"
       " ceil(extract(epoch FROM expires_at - now()) * 1000)::bigint, lock_name FROM " +
           t.leases +
           " WHERE left(lock_name, length($1::text)) = $1::text AND expires_at > now()"
           " ORDER BY lock_name, slot"},
      // $1 group $2 node $3 ttl_ms $4 successes $5 failures $6 last_completion_us $7 metadata
      {kPutCandidate,
       "INSERT INTO " + t.candidates +
           " AS c (group_name, node_id, registered_at, expires_at, successes, failures,"
           " last_completion, metadata) VALUES ($1::text, $2::text, now(), now() + " +
           ms("$3") +
           ", $4::bigint, $5::bigint, 'epoch'::timestamptz + $6::bigint * interval '1 microsecond',"
           " $7::text) ON CONFLICT (group_name, node_id) DO UPDATE SET registered_at = CASE WHEN"
           " c.expires_at > now() THEN c.registered_at ELSE EXCLUDED.registered_at END,"
           " expires_at = EXCLUDED.expires_at, successes = EXCLUDED.successes,"
           " failures = EXCLUDED.failures, last_completion = EXCLUDED.last_completion,"
           " metadata = EXCLUDED.metadata"},
      {kListCandidates,
       "SELECT node_id, (extract(epoch FROM registered_at) * 1000000)::bigint, successes,"
       " failures, (extract(epoch FROM last_completion) * 1000000)::bigint, metadata FROM " +
           t.candidates + " WHERE group_name = $1::text AND expires_at > now()"},
      {kRemoveCandidate,
       "DELETE FROM " + t.candidates + " WHERE group_name = $1::text AND node_id = $2::text"},
  };
}

}  // namespace leader::postgres
