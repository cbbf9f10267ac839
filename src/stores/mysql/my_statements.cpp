#include "my_statements.hpp"

namespace leader::mysql {

std::vector<std::pair<std::string, std::string>> statements(const Tables& t) {
  const std::string now = "UTC_TIMESTAMP(6)";
  const std::string owned =
      " WHERE lock_name = ? AND slot = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)";
  const std::string epoch = "'1970-01-01 00:00:00'";
  return {
      {kAcquire, "CALL " + t.acquire + "(?, ?, ?, ?, ?)"},
      {kRenew,
       "UPDATE " + t.leases + " SET expires_at = " + now + " + INTERVAL ? MICROSECOND" + owned},
      // kRenew's statement once per lease of the JSON array, in one READ COMMITTED transaction
      // (one commit), in key order (lock, slot; as the acquire procedure locks rows), each with
      // UTC_TIMESTAMP(6) of its own statement; ROW_COUNT() of each (matched rows:
      // CLIENT_FOUND_ROWS) marks its character. A failure rolls back and is returned as is.
      {kRenewBatch,
       "BEGIN NOT ATOMIC"
       " DECLARE v_batch LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT ?;"
       " DECLARE v_out LONGTEXT CHARACTER SET ascii DEFAULT REPEAT('0', JSON_LENGTH(v_batch));"
       " DECLARE v_done INT DEFAULT 0; DECLARE v_n INT; DECLARE v_slot INT;"
       " DECLARE v_lock VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
       " DECLARE v_owner CHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
       " DECLARE v_ttl BIGINT;"
       " DECLARE c CURSOR FOR SELECT n, lock_name, slot, owner, ttl_us FROM JSON_TABLE(v_batch,"
       " '$[*]' COLUMNS (n FOR ORDINALITY,"
       " lock_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$[0]',"
       " slot INT PATH '$[1]', owner CHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
       " PATH '$[2]', ttl_us BIGINT PATH '$[3]')) AS b ORDER BY lock_name, slot, n;"
       " DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;"
       " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
       " SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION; OPEN c;"
       " renewing: LOOP FETCH c INTO v_n, v_lock, v_slot, v_owner, v_ttl;"
       " IF v_done THEN LEAVE renewing; END IF;"
       " UPDATE " +
           t.leases + " SET expires_at = " + now +
           " + INTERVAL v_ttl MICROSECOND WHERE lock_name = v_lock AND slot = v_slot"
           " AND owner = v_owner AND expires_at > " +
           now +
           ";"
           " IF ROW_COUNT() = 1 THEN SET v_out = INSERT(v_out, v_n, 1, '1'); END IF;"
           " END LOOP; CLOSE c; COMMIT; SELECT v_out; END"},
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

}  // namespace leader::mysql
