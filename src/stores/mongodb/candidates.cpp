// Candidates of strategic elections: one document per (group, node) in <prefix>candidates,
// expiry judged by the server's clock like leases; a TTL index on `renewed` only removes entries
// idle for gc_after (garbage collection: listing already skips expired entries).

#include <algorithm>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "mongodb_store.hpp"

namespace leader::mongodb {
namespace {

void append_key(bson_t* q, std::string_view group, std::string_view node) {
  BSON_APPEND_UTF8(q, "group", std::string(group).c_str());
  BSON_APPEND_UTF8(q, "node", std::string(node).c_str());
}

void append_fields(bson_t* set, const Candidate& c, Duration ttl) {
  BSON_APPEND_INT64(set, "successes", static_cast<int64_t>(c.successes));
  BSON_APPEND_INT64(set, "failures", static_cast<int64_t>(c.failures));
  BSON_APPEND_INT64(set, "ttl_ms", ttl.count());
  if (c.last_completion)
    BSON_APPEND_DATE_TIME(
        set, "last_completion",
        std::chrono::duration_cast<std::chrono::milliseconds>(c.last_completion->time_since_epoch())
            .count());
  else
    BSON_APPEND_NULL(set, "last_completion");
  bson_t meta, pair;
  BSON_APPEND_ARRAY_BEGIN(set, "metadata", &meta);  // pairs: keys may hold '.' or '$'
  int i = 0;
  for (const auto& [k, v] : c.metadata) {
    const std::string index = std::to_string(i++);
    BSON_APPEND_DOCUMENT_BEGIN(&meta, index.c_str(), &pair);
    BSON_APPEND_UTF8(&pair, "k", k.c_str());
    BSON_APPEND_UTF8(&pair, "v", v.c_str());
    bson_append_document_end(&meta, &pair);
  }
  bson_append_array_end(set, &meta);
}

std::string utf8_of(bson_iter_t* it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(it, &len);
  return std::string(s, len);
}

void parse_metadata(bson_iter_t* arr, Candidate& c) {
  bson_iter_t item;
  bson_iter_recurse(arr, &item);
  while (bson_iter_next(&item)) {
    if (!BSON_ITER_HOLDS_DOCUMENT(&item)) continue;
    bson_iter_t f;
    bson_iter_recurse(&item, &f);
    std::string k, v;
    while (bson_iter_next(&f)) {
      if (!BSON_ITER_HOLDS_UTF8(&f)) continue;
      (std::string(bson_iter_key(&f)) == "k" ? k : v) = utf8_of(&f);
    }
    c.metadata[k] = v;
  }
}

Candidate parse_candidate(bson_iter_t* doc) {
  Candidate c;
  bson_iter_t f;
  bson_iter_recurse(doc, &f);
  while (bson_iter_next(&f)) {
    const std::string k = bson_iter_key(&f);
    if (k == "node" && BSON_ITER_HOLDS_UTF8(&f)) c.node_id = utf8_of(&f);
    if (k == "successes" && BSON_ITER_HOLDS_NUMBER(&f))
      c.successes = static_cast<std::uint64_t>(bson_iter_as_int64(&f));
    if (k == "failures" && BSON_ITER_HOLDS_NUMBER(&f))
      c.failures = static_cast<std::uint64_t>(bson_iter_as_int64(&f));
    if (k == "registered" && BSON_ITER_HOLDS_DATE_TIME(&f))
      c.registered_at = detail::wall_time_from_epoch_ms(bson_iter_date_time(&f));
    if (k == "last_completion" && BSON_ITER_HOLDS_DATE_TIME(&f))
      c.last_completion = detail::wall_time_from_epoch_ms(bson_iter_date_time(&f));
    if (k == "metadata" && BSON_ITER_HOLDS_ARRAY(&f)) parse_metadata(&f, c);
  }
  return c;
}

// Appends every document of the batch `key` ("cursor.firstBatch" / "cursor.nextBatch").
void collect(const bson_t* reply, const char* key, std::vector<Candidate>& out) {
  bson_iter_t it, batch, doc;
  if (!bson_iter_init(&it, reply) || !bson_iter_find_descendant(&it, key, &batch) ||
      !BSON_ITER_HOLDS_ARRAY(&batch))
    return;
  bson_iter_recurse(&batch, &doc);
  while (bson_iter_next(&doc))
    if (BSON_ITER_HOLDS_DOCUMENT(&doc)) out.push_back(parse_candidate(&doc));
}

}  // namespace

void MongoStore::ensure_candidate_indexes(Deadline deadline) {
  std::lock_guard lock(index_mu_);
  if (indexes_ready_ || !connection_.config().create_indexes) return;
  Doc cmd;
  bson_t indexes, unique, unique_key, ttl, ttl_key;
  BSON_APPEND_UTF8(&cmd.b, "createIndexes", candidates_.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cmd.b, "indexes", &indexes);
  BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &unique);
  BSON_APPEND_DOCUMENT_BEGIN(&unique, "key", &unique_key);
  BSON_APPEND_INT32(&unique_key, "group", 1);
  BSON_APPEND_INT32(&unique_key, "node", 1);
  bson_append_document_end(&unique, &unique_key);
  BSON_APPEND_UTF8(&unique, "name", "group_node");
  BSON_APPEND_BOOL(&unique, "unique", true);
  bson_append_document_end(&indexes, &unique);
  BSON_APPEND_DOCUMENT_BEGIN(&indexes, "1", &ttl);
  BSON_APPEND_DOCUMENT_BEGIN(&ttl, "key", &ttl_key);
  BSON_APPEND_INT32(&ttl_key, "renewed", 1);
  bson_append_document_end(&ttl, &ttl_key);
  BSON_APPEND_UTF8(&ttl, "name", "gc_renewed");
  BSON_APPEND_INT64(
      &ttl, "expireAfterSeconds",
      std::chrono::duration_cast<std::chrono::seconds>(connection_.config().gc_after).count());
  bson_append_document_end(&indexes, &ttl);
  bson_append_array_end(&cmd.b, &indexes);
  (void)connection_.write("createIndexes (candidates)", &cmd.b, deadline);
  indexes_ready_ = true;
}

// How put_candidate writes an entry (three conditions, because the server refuses $expr in the
// query of an upsert: code 224, MongoDB JIRA DOCS-14158).
enum class CandidateWrite {
  refresh,  ///< a live entry: keep `registered`
  replace,  ///< an expired entry: new `registered`
  insert,   ///< no entry: upsert (a concurrent insert collides on the unique index)
};

// False when the condition did not match (or the insert collided).
bool MongoStore::write_candidate(std::string_view group, const Candidate& c, Duration ttl, int mode,
                                 Deadline deadline) {
  const auto how = static_cast<CandidateWrite>(mode);
  Doc cmd, q, u;
  append_key(&q.b, group, c.node_id);
  bson_t clauses, absent, set, now;
  if (how == CandidateWrite::insert) {
    BSON_APPEND_DOCUMENT_BEGIN(&q.b, "renewed", &absent);
    BSON_APPEND_BOOL(&absent, "$exists", false);
    bson_append_document_end(&q.b, &absent);
  } else {
    BSON_APPEND_ARRAY_BEGIN(&q.b, "$and", &clauses);
    append_expiry_expr(&clauses, "0", "", how == CandidateWrite::refresh ? "$gt" : "$lte");
    bson_append_array_end(&q.b, &clauses);
  }
  BSON_APPEND_DOCUMENT_BEGIN(&u.b, "$set", &set);
  append_fields(&set, c, ttl);
  bson_append_document_end(&u.b, &set);
  BSON_APPEND_DOCUMENT_BEGIN(&u.b, "$currentDate", &now);
  BSON_APPEND_BOOL(&now, "renewed", true);
  if (how != CandidateWrite::refresh) BSON_APPEND_BOOL(&now, "registered", true);
  bson_append_document_end(&u.b, &now);
  bson_t updates, item;
  BSON_APPEND_UTF8(&cmd.b, "update", candidates_.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cmd.b, "updates", &updates);
  BSON_APPEND_DOCUMENT_BEGIN(&updates, "0", &item);
  BSON_APPEND_DOCUMENT(&item, "q", &q.b);
  BSON_APPEND_DOCUMENT(&item, "u", &u.b);
  if (how == CandidateWrite::insert) BSON_APPEND_BOOL(&item, "upsert", true);
  bson_append_document_end(&updates, &item);
  bson_append_array_end(&cmd.b, &updates);
  auto reply = connection_.write("update (candidate)", &cmd.b, deadline);
  return reply && get_int(&(*reply)->b, "n").value_or(0) == 1;
}

void MongoStore::put_candidate(std::string_view group, const Candidate& c, Duration ttl,
                               Deadline deadline) {
  if (ttl > connection_.config().gc_after)  // the CheckedStore saw ttl > 0
    throw InvalidArgument("mongodb: candidate ttl " + std::to_string(ttl.count()) +
                          "ms must be <= gc_after (the TTL index would delete it)");
  ensure_candidate_indexes(deadline);
  // Refresh a live entry, else replace an expired one, else insert; a concurrent writer can
  // change the entry between these conditional writes: start over once.
  for (int i = 0; i < 2; ++i)
    for (auto how : {CandidateWrite::refresh, CandidateWrite::replace, CandidateWrite::insert})
      if (write_candidate(group, c, ttl, static_cast<int>(how), deadline)) return;
  throw BackendError(ErrorCode::unavailable, "mongodb",
                     "candidate '" + c.node_id + "' kept changing under concurrent writers");
}

std::vector<Candidate> MongoStore::list_candidates(std::string_view group, Deadline deadline) {
  Doc cmd, filter;
  BSON_APPEND_UTF8(&filter.b, "group", std::string(group).c_str());
  bson_t clauses;
  BSON_APPEND_ARRAY_BEGIN(&filter.b, "$and", &clauses);
  append_expiry_expr(&clauses, "0", "", "$gt");
  bson_append_array_end(&filter.b, &clauses);
  BSON_APPEND_UTF8(&cmd.b, "find", candidates_.c_str());
  BSON_APPEND_DOCUMENT(&cmd.b, "filter", &filter.b);
  BSON_APPEND_INT32(&cmd.b, "batchSize", 10000);
  std::vector<Candidate> out;
  DocPtr reply = connection_.read("find (candidates)", &cmd.b, deadline);
  collect(&reply->b, "cursor.firstBatch", out);
  for (auto id = get_int(&reply->b, "cursor.id"); id && *id != 0;
       id = get_int(&reply->b, "cursor.id")) {
    Doc more;
    BSON_APPEND_INT64(&more.b, "getMore", *id);
    BSON_APPEND_UTF8(&more.b, "collection", candidates_.c_str());
    reply = connection_.read("getMore (candidates)", &more.b, deadline);
    collect(&reply->b, "cursor.nextBatch", out);
  }
  return out;
}

void MongoStore::remove_candidate(std::string_view group, std::string_view node_id,
                                  Deadline deadline) {
  Doc cmd;
  bson_t deletes, item, q;
  BSON_APPEND_UTF8(&cmd.b, "delete", candidates_.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cmd.b, "deletes", &deletes);
  BSON_APPEND_DOCUMENT_BEGIN(&deletes, "0", &item);
  BSON_APPEND_DOCUMENT_BEGIN(&item, "q", &q);
  append_key(&q, group, node_id);
  bson_append_document_end(&item, &q);
  BSON_APPEND_INT32(&item, "limit", 1);
  bson_append_document_end(&deletes, &item);
  bson_append_array_end(&cmd.b, &deletes);
  (void)connection_.write("delete (candidate)", &cmd.b, deadline);
}

}  // namespace leader::mongodb
