#include "mongodb_store.hpp"

#include <algorithm>
#include <set>

#include "leader/detail/group_size.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::mongodb {
namespace {

// A grant that lost a race (another grant changed `fence` between our read and our write) is
// retried from a fresh read; groups get a round per slot so that N simultaneous callers of a
// group of N all get a slot.
int max_rounds(int slots) { return std::min(3 + slots, 16); }

Acquired granted(const LeaseRequest& r, int slot, std::uint64_t token) {
  return Acquired{Lease{r.lock, r.owner, r.node_id, token, slot, r.slots, r.ttl, {}}};
}

// {_id: <lock>, holders.<slot>.owner: <owner>, holders.<slot>.token: <token>}
void append_owned_by(bson_t* q, const Lease& lease) {
  BSON_APPEND_UTF8(q, "_id", lease.lock.c_str());
  BSON_APPEND_UTF8(q, holder_path(lease.slot, "owner").c_str(), lease.owner.c_str());
  BSON_APPEND_INT64(q, holder_path(lease.slot, "token").c_str(),
                    static_cast<int64_t>(lease.fencing_token));
}

// {update: <coll>, updates: [{q: <q>, u: <u>}]}: one conditional updateOne.
void build_update(bson_t* cmd, const std::string& coll, const bson_t* q, const bson_t* u,
                  bool upsert = false) {
  bson_t updates, item;
  BSON_APPEND_UTF8(cmd, "update", coll.c_str());
  BSON_APPEND_ARRAY_BEGIN(cmd, "updates", &updates);
  BSON_APPEND_DOCUMENT_BEGIN(&updates, "0", &item);
  BSON_APPEND_DOCUMENT(&item, "q", q);
  BSON_APPEND_DOCUMENT(&item, "u", u);
  if (upsert) BSON_APPEND_BOOL(&item, "upsert", true);
  bson_append_document_end(&updates, &item);
  bson_append_array_end(cmd, &updates);
}

// The grant's condition: the lock document exactly at the fence value read (no grant since),
// and the chosen slot free or expired by $$NOW (a size change: every record read expired). A
// lock without a document: only "still no document" ({fence: {$exists: false}}, false for every
// document this store writes), because the server refuses $expr in the query of an upsert
// (code 224, MongoDB JIRA DOCS-14158) and a missing document has no holders anyway.
void build_grant_query(bson_t* q, const LeaseRequest& r, const LockDoc& doc, int slot,
                       bool size_change) {
  BSON_APPEND_UTF8(q, "_id", r.lock.c_str());
  bson_t clauses, fence, absent;
  if (!doc.exists) {
    BSON_APPEND_DOCUMENT_BEGIN(q, "fence", &absent);
    BSON_APPEND_BOOL(&absent, "$exists", false);
    bson_append_document_end(q, &absent);
    return;
  }
  BSON_APPEND_ARRAY_BEGIN(q, "$and", &clauses);
  BSON_APPEND_DOCUMENT_BEGIN(&clauses, "0", &fence);
  if (doc.fence) {
    BSON_APPEND_INT64(&fence, "fence", *doc.fence);
  } else {
    BSON_APPEND_DOCUMENT_BEGIN(&fence, "fence", &absent);
    BSON_APPEND_BOOL(&absent, "$exists", false);
    bson_append_document_end(&fence, &absent);
  }
  bson_append_document_end(&clauses, &fence);
  int n = 1;
  append_free_or_expired(&clauses, std::to_string(n++).c_str(), slot);
  if (size_change)
    for (const SlotRecord& h : doc.holders)
      if (h.slot != slot) append_free_or_expired(&clauses, std::to_string(n++).c_str(), h.slot);
  bson_append_array_end(q, &clauses);
}

// fence + 1 and the slot's record (token = the new fence value) in the same update; a size
// change also removes every other record read (all expired, as the condition checks).
void build_grant_update(bson_t* u, const LeaseRequest& r, const LockDoc& doc, int slot,
                        bool size_change) {
  const int64_t token = doc.fence.value_or(0) + 1;
  bson_t inc, set, now, unset;
  BSON_APPEND_DOCUMENT_BEGIN(u, "$inc", &inc);
  BSON_APPEND_INT64(&inc, "fence", 1);
  bson_append_document_end(u, &inc);
  BSON_APPEND_DOCUMENT_BEGIN(u, "$set", &set);
  BSON_APPEND_INT32(&set, "slots", r.slots);
  BSON_APPEND_UTF8(&set, holder_path(slot, "owner").c_str(), r.owner.c_str());
  BSON_APPEND_UTF8(&set, holder_path(slot, "node").c_str(), r.node_id.c_str());
  BSON_APPEND_INT64(&set, holder_path(slot, "token").c_str(), token);
  BSON_APPEND_INT64(&set, holder_path(slot, "ttl_ms").c_str(), r.ttl.count());
  bson_append_document_end(u, &set);
  BSON_APPEND_DOCUMENT_BEGIN(u, "$currentDate", &now);
  BSON_APPEND_BOOL(&now, holder_path(slot, "renewed").c_str(), true);
  bson_append_document_end(u, &now);
  if (!size_change) return;
  bool any = false;
  for (const SlotRecord& h : doc.holders) {
    if (h.slot == slot) continue;
    if (!any) BSON_APPEND_DOCUMENT_BEGIN(u, "$unset", &unset);
    any = true;
    BSON_APPEND_UTF8(&unset, holder_path(h.slot).c_str(), "");
  }
  if (any) bson_append_document_end(u, &unset);
}

}  // namespace

MongoStore::MongoStore(Config config)
    : connection_(std::move(config)),
      locks_(connection_.collection("locks")),
      candidates_(connection_.collection("candidates")) {}

LockDoc MongoStore::read_lock(std::string_view lock, Deadline deadline) {
  const std::string id(lock);
  Doc cmd;
  bson_t pipeline, match_stage, match, add_stage, add, cursor;
  BSON_APPEND_UTF8(&cmd.b, "aggregate", locks_.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cmd.b, "pipeline", &pipeline);
  BSON_APPEND_DOCUMENT_BEGIN(&pipeline, "0", &match_stage);
  BSON_APPEND_DOCUMENT_BEGIN(&match_stage, "$match", &match);
  BSON_APPEND_UTF8(&match, "_id", id.c_str());
  bson_append_document_end(&match_stage, &match);
  bson_append_document_end(&pipeline, &match_stage);
  BSON_APPEND_DOCUMENT_BEGIN(&pipeline, "1", &add_stage);
  BSON_APPEND_DOCUMENT_BEGIN(&add_stage, "$addFields", &add);
  BSON_APPEND_UTF8(&add, "server_now", "$$NOW");  // the server's clock, read with the document
  bson_append_document_end(&add_stage, &add);
  bson_append_document_end(&pipeline, &add_stage);
  bson_append_array_end(&cmd.b, &pipeline);
  BSON_APPEND_DOCUMENT_BEGIN(&cmd.b, "cursor", &cursor);
  bson_append_document_end(&cmd.b, &cursor);
  DocPtr reply = connection_.read("aggregate (read lock)", &cmd.b, deadline);
  return parse_lock_reply(&reply->b);
}

std::optional<std::uint64_t> MongoStore::grant(const LeaseRequest& r, const LockDoc& doc, int slot,
                                               bool size_change, Deadline deadline) {
  Doc cmd, q, u;
  build_grant_query(&q.b, r, doc, slot, size_change);
  build_grant_update(&u.b, r, doc, slot, size_change);
  BSON_APPEND_UTF8(&cmd.b, "findAndModify", locks_.c_str());
  BSON_APPEND_DOCUMENT(&cmd.b, "query", &q.b);
  BSON_APPEND_DOCUMENT(&cmd.b, "update", &u.b);
  BSON_APPEND_BOOL(&cmd.b, "new", true);
  // Only a lock without a document upserts: if another caller created it meanwhile, the insert
  // collides on _id (DuplicateKey, 11000): a lost race, read again.
  if (!doc.exists) BSON_APPEND_BOOL(&cmd.b, "upsert", true);
  auto reply = connection_.write("findAndModify (acquire)", &cmd.b, deadline);
  if (!reply) return std::nullopt;
  bson_iter_t it;
  if (bson_iter_init_find(&it, &(*reply)->b, "value") && BSON_ITER_HOLDS_NULL(&it))
    return std::nullopt;  // the condition did not match: a lost race
  const auto fence = get_int(&(*reply)->b, "value.fence");
  const int64_t token = doc.fence.value_or(0) + 1;
  if (!fence || *fence != token)
    throw BackendError(ErrorCode::internal, "mongodb",
                       "findAndModify (acquire) of lock '" + r.lock +
                           "' returned no document with the expected fence " +
                           std::to_string(token));
  return static_cast<std::uint64_t>(token);
}

Acquired MongoStore::try_acquire(const LeaseRequest& r, Deadline deadline) {
  const int n = std::max(1, r.slots);
  for (int round = 0; round < max_rounds(n); ++round) {
    const LockDoc doc = read_lock(r.lock, deadline);
    auto own = std::find_if(doc.holders.begin(), doc.holders.end(),
                            [&](const SlotRecord& h) { return h.owner == r.owner; });
    if (own != doc.holders.end() && !own->expired_at(doc.now_ms)) {  // the owner's retry
      Lease lease{r.lock, r.owner, r.node_id, own->token, own->slot, r.slots, r.ttl, {}};
      if (refresh(lease, r.ttl, &r.node_id, deadline) == LeaseStatus::ok)
        return Acquired{std::move(lease)};
      continue;
    }
    const bool any_live = std::any_of(doc.holders.begin(), doc.holders.end(),
                                      [&](const auto& h) { return !h.expired_at(doc.now_ms); });
    if (doc.slots && *doc.slots != r.slots) {
      if (any_live) throw detail::group_size_mismatch("mongodb", r.lock, *doc.slots, r.slots);
      if (auto token = grant(r, doc, 0, true, deadline)) return granted(r, 0, *token);
      continue;
    }
    std::optional<int> slot;
    for (int i = 0; i < n && !slot; ++i) {
      auto h = std::find_if(doc.holders.begin(), doc.holders.end(),
                            [&](const SlotRecord& rec) { return rec.slot == i; });
      if (h == doc.holders.end() || h->expired_at(doc.now_ms)) slot = i;
    }
    if (!slot) return {};  // every slot is held: contention
    if (auto token = grant(r, doc, *slot, false, deadline)) return granted(r, *slot, *token);
  }
  return {};
}

LeaseStatus MongoStore::refresh(const Lease& lease, Duration ttl, const std::string* node,
                                Deadline deadline) {
  Doc cmd, q, u;
  append_owned_by(&q.b, lease);
  bson_t clauses, set, now;
  BSON_APPEND_ARRAY_BEGIN(&q.b, "$and", &clauses);
  append_live(&clauses, "0", lease.slot);  // an expired lease is gone, even if still ours
  bson_append_array_end(&q.b, &clauses);
  BSON_APPEND_DOCUMENT_BEGIN(&u.b, "$set", &set);
  BSON_APPEND_INT64(&set, holder_path(lease.slot, "ttl_ms").c_str(), ttl.count());
  if (node != nullptr)
    BSON_APPEND_UTF8(&set, holder_path(lease.slot, "node").c_str(), node->c_str());
  bson_append_document_end(&u.b, &set);
  BSON_APPEND_DOCUMENT_BEGIN(&u.b, "$currentDate", &now);
  BSON_APPEND_BOOL(&now, holder_path(lease.slot, "renewed").c_str(), true);
  bson_append_document_end(&u.b, &now);
  build_update(&cmd.b, locks_, &q.b, &u.b);
  auto reply = connection_.write("update (renew)", &cmd.b, deadline);
  if (!reply) return LeaseStatus::lost;
  return get_int(&(*reply)->b, "n").value_or(0) == 1 ? LeaseStatus::ok : LeaseStatus::lost;
}

Renewal MongoStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  if (refresh(lease, ttl, nullptr, deadline) != LeaseStatus::ok) return {};
  return {LeaseStatus::ok, ttl};
}

LeaseStatus MongoStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  if (keep_for > Duration{0}) return refresh(lease, keep_for, nullptr, deadline);
  Doc cmd, q, u;
  append_owned_by(&q.b, lease);
  bson_t unset;
  BSON_APPEND_DOCUMENT_BEGIN(&u.b, "$unset", &unset);
  BSON_APPEND_UTF8(&unset, holder_path(lease.slot).c_str(), "");
  bson_append_document_end(&u.b, &unset);
  build_update(&cmd.b, locks_, &q.b, &u.b);
  auto reply = connection_.write("update (release)", &cmd.b, deadline);
  if (!reply) return LeaseStatus::lost;
  return get_int(&(*reply)->b, "n").value_or(0) == 1 ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState MongoStore::inspect(std::string_view lock, Deadline deadline) {
  const LockDoc doc = read_lock(lock, deadline);
  LockState out{std::string(lock), {}};
  for (const SlotRecord& h : doc.holders) {
    if (h.expired_at(doc.now_ms)) continue;
    out.holders.push_back(
        Holder{h.node, h.owner, h.token, h.slot, Duration{h.renewed_ms + h.ttl_ms - doc.now_ms}});
  }
  std::sort(out.holders.begin(), out.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
  return out;
}

namespace {

// Appends the string _id of every document of the batch `key` ("cursor.firstBatch" /
// "cursor.nextBatch").
void collect_ids(const bson_t* reply, const char* key, std::set<std::string>& out) {
  bson_iter_t it, batch, doc;
  if (!bson_iter_init(&it, reply) || !bson_iter_find_descendant(&it, key, &batch) ||
      !BSON_ITER_HOLDS_ARRAY(&batch))
    return;
  bson_iter_recurse(&batch, &doc);
  while (bson_iter_next(&doc)) {
    bson_iter_t fields;
    if (!BSON_ITER_HOLDS_DOCUMENT(&doc) || !bson_iter_recurse(&doc, &fields) ||
        !bson_iter_find(&fields, "_id") || !BSON_ITER_HOLDS_UTF8(&fields))
      continue;
    std::uint32_t len = 0;
    const char* id = bson_iter_utf8(&fields, &len);
    out.emplace(id, len);
  }
}

}  // namespace

std::vector<LockState> MongoStore::list_locks(std::string_view prefix, Deadline deadline) {
  std::string pattern = "^";
  for (char c : prefix) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  Doc cmd, filter, projection;
  bson_t id_match;
  BSON_APPEND_DOCUMENT_BEGIN(&filter.b, "_id", &id_match);
  BSON_APPEND_UTF8(&id_match, "$regex", pattern.c_str());
  bson_append_document_end(&filter.b, &id_match);
  BSON_APPEND_INT32(&projection.b, "_id", 1);
  BSON_APPEND_UTF8(&cmd.b, "find", locks_.c_str());
  BSON_APPEND_DOCUMENT(&cmd.b, "filter", &filter.b);
  BSON_APPEND_DOCUMENT(&cmd.b, "projection", &projection.b);
  BSON_APPEND_INT32(&cmd.b, "batchSize", 10000);
  std::set<std::string> ids;
  DocPtr reply = connection_.read("find (list locks)", &cmd.b, deadline);
  collect_ids(&reply->b, "cursor.firstBatch", ids);
  for (auto id = get_int(&reply->b, "cursor.id"); id && *id != 0;
       id = get_int(&reply->b, "cursor.id")) {
    Doc more;
    BSON_APPEND_INT64(&more.b, "getMore", *id);
    BSON_APPEND_UTF8(&more.b, "collection", locks_.c_str());
    reply = connection_.read("getMore (list locks)", &more.b, deadline);
    collect_ids(&reply->b, "cursor.nextBatch", ids);
  }
  return detail::held_locks(*this, ids, deadline);
}

}  // namespace leader::mongodb
