#include "my_statements.hpp"

namespace leader::detail::my {

std::vector<std::pair<std::string, std::string>> statements(const Tables& t) {
  const std::string now = "UTC_TIMESTAMP(6)";
  const std::string owned =
      " WHERE lock_name = ? AND slot = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)";
  const std::string epoch = "'1970-01-01 00:00:00'";
  return {
      {kAcquire, "CALL " + t.acquire + "(?, ?, ?, ?, ?)"},
      {kRenew,
       "UPDATE " + t.leases + " SET expires_at = " + now + " + INTERVAL ? MICROSECOND" + owned},
      {kRelease, "DELETE FROM " + t.leases + owned},
      {kKeep,
       "UPDATE " + t.leases + " SET expires_at = " + now + " + INTERVAL ? MICROSECOND" + owned},
      {kInspect, "SELECT slot, node_id, owner, fencing_token, CEIL(TIMESTAMPDIFF(MICROSECOND, " +
                     now + ", expires_at) / 1000) FROM " + t.leases +
                     " WHERE lock_name = ? AND expires_at > " + now + " ORDER BY slot"},
      // The columns of kInspect, then lock_name; LEFT() rather than LIKE: no pattern characters.
      {kListLocks, "SELECT slot, node_id, owner, fencing_token, CEIL(TIMESTAMPDIFF(MICROSECOND, " +
                       now + ", expires_at) / 1000), lock_name FROM " + t.leases +
                       " WHERE LEFT(lock_name, CHAR_LENGTH(?)) = ? AND expires_at > " + now +
                       " ORDER BY lock_name, slot"},
      // group, node, ttl_us, successes, failures, last_completion_us, metadata. Assignments run
      // left to right: registered_at reads the old expires_at, which is updated last.
      {kPutCandidate, "INSERT INTO " + t.candidates +
                          " (group_name, node_id, registered_at, expires_at, successes, failures,"
                          " last_completion, metadata) VALUES (?, ?, " +
                          now + ", " + now +
                          " + INTERVAL ? MICROSECOND, ?, ?, TIMESTAMPADD(MICROSECOND, ?, " + epoch +
                          "), ?) ON DUPLICATE KEY UPDATE registered_at = IF(expires_at > " + now +
                          ", registered_at, VALUES(registered_at)), successes = VALUES(successes),"
                          " failures = VALUES(failures), last_completion = VALUES(last_completion),"
                          " metadata = VALUES(metadata), expires_at = VALUES(expires_at)"},
      {kListCandidates, "SELECT node_id, TIMESTAMPDIFF(MICROSECOND, " + epoch +
                            ", registered_at), successes, failures, TIMESTAMPDIFF(MICROSECOND, " +
                            epoch + ", last_completion), metadata FROM " + t.candidates +
                            " WHERE group_name = ? AND expires_at > " + now},
      {kRemoveCandidate, "DELETE FROM " + t.candidates + " WHERE group_name = ? AND node_id = ?"},
  };
}

}  // namespace leader::detail::my
