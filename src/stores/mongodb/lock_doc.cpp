#include "lock_doc.hpp"

#include <cstdlib>

#include "connection.hpp"

namespace leader::mongodb {
namespace {

std::string utf8(const bson_iter_t* it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(it, &len);
  return std::string(s, len);
}

std::optional<SlotRecord> parse_record(const char* key, bson_iter_t* rec) {
  char* end = nullptr;
  const long slot = std::strtol(key, &end, 10);
  if (*key == '\0' || *end != '\0' || slot < 0 || slot > 1000000) return std::nullopt;
  SlotRecord r;
  r.slot = static_cast<int>(slot);
  bool has_owner = false;
  bool has_renewed = false;
  while (bson_iter_next(rec)) {
    const std::string k = bson_iter_key(rec);
    if (k == "owner" && BSON_ITER_HOLDS_UTF8(rec)) {
      r.owner = utf8(rec);
      has_owner = true;
    } else if (k == "node" && BSON_ITER_HOLDS_UTF8(rec)) {
      r.node = utf8(rec);
    } else if (k == "token" && BSON_ITER_HOLDS_NUMBER(rec)) {
      r.token = static_cast<std::uint64_t>(bson_iter_as_int64(rec));
    } else if (k == "renewed" && BSON_ITER_HOLDS_DATE_TIME(rec)) {
      r.renewed_ms = bson_iter_date_time(rec);
      has_renewed = true;
    } else if (k == "ttl_ms" && BSON_ITER_HOLDS_NUMBER(rec)) {
      r.ttl_ms = bson_iter_as_int64(rec);
    }
  }
  if (!has_owner || !has_renewed) return std::nullopt;
  return r;
}

}  // namespace

void append_expiry_expr(bson_t* parent, const char* key, const std::string& prefix,
                        const char* op) {
  const std::string dot = prefix.empty() ? "" : ".";
  const std::string renewed = "$" + prefix + dot + "renewed";
  const std::string ttl = "$" + prefix + dot + "ttl_ms";
  bson_t clause, expr, args, sub, sub_args;
  BSON_APPEND_DOCUMENT_BEGIN(parent, key, &clause);
  BSON_APPEND_DOCUMENT_BEGIN(&clause, "$expr", &expr);
  BSON_APPEND_ARRAY_BEGIN(&expr, op, &args);
  BSON_APPEND_UTF8(&args, "0", renewed.c_str());
  BSON_APPEND_DOCUMENT_BEGIN(&args, "1", &sub);
  BSON_APPEND_ARRAY_BEGIN(&sub, "$subtract", &sub_args);
  BSON_APPEND_UTF8(&sub_args, "0", "$$NOW");  // server time, never the client's
  BSON_APPEND_UTF8(&sub_args, "1", ttl.c_str());
  bson_append_array_end(&sub, &sub_args);
  bson_append_document_end(&args, &sub);
  bson_append_array_end(&expr, &args);
  bson_append_document_end(&clause, &expr);
  bson_append_document_end(parent, &clause);
}

std::string holder_path(int slot, const char* field) {
  std::string p = "holders." + std::to_string(slot);
  if (field != nullptr) p += std::string(".") + field;
  return p;
}

void append_live(bson_t* clauses, const char* key, int slot) {
  // renewed > $$NOW - ttl_ms  <=>  renewed + ttl_ms > $$NOW
  append_expiry_expr(clauses, key, holder_path(slot), "$gt");
}

void append_free_or_expired(bson_t* clauses, const char* key, int slot) {
  const std::string path = holder_path(slot);
  bson_t clause, alternatives, absent, cond;
  BSON_APPEND_DOCUMENT_BEGIN(clauses, key, &clause);
  BSON_APPEND_ARRAY_BEGIN(&clause, "$or", &alternatives);
  BSON_APPEND_DOCUMENT_BEGIN(&alternatives, "0", &absent);
  BSON_APPEND_DOCUMENT_BEGIN(&absent, path.c_str(), &cond);
  BSON_APPEND_BOOL(&cond, "$exists", false);
  bson_append_document_end(&absent, &cond);
  bson_append_document_end(&alternatives, &absent);
  append_expiry_expr(&alternatives, "1", path, "$lte");
  bson_append_array_end(&clause, &alternatives);
  bson_append_document_end(clauses, &clause);
}

LockDoc parse_lock_reply(const bson_t* reply) {
  LockDoc doc;
  bson_iter_t it;
  bson_iter_t d;
  if (!bson_iter_init(&it, reply) || !bson_iter_find_descendant(&it, "cursor.firstBatch.0", &d) ||
      !BSON_ITER_HOLDS_DOCUMENT(&d))
    return doc;
  doc.exists = true;
  bson_iter_t field;
  bson_iter_recurse(&d, &field);
  while (bson_iter_next(&field)) {
    const std::string k = bson_iter_key(&field);
    if (k == "fence" && BSON_ITER_HOLDS_NUMBER(&field)) {
      doc.fence = bson_iter_as_int64(&field);
    } else if (k == "slots" && BSON_ITER_HOLDS_NUMBER(&field)) {
      doc.slots = static_cast<int>(bson_iter_as_int64(&field));
    } else if (k == "server_now" && BSON_ITER_HOLDS_DATE_TIME(&field)) {
      doc.now_ms = bson_iter_date_time(&field);
    } else if (k == "holders" && BSON_ITER_HOLDS_DOCUMENT(&field)) {
      bson_iter_t h;
      bson_iter_recurse(&field, &h);
      while (bson_iter_next(&h)) {
        if (!BSON_ITER_HOLDS_DOCUMENT(&h)) continue;
        bson_iter_t rec;
        bson_iter_recurse(&h, &rec);
        if (auto r = parse_record(bson_iter_key(&h), &rec)) doc.holders.push_back(std::move(*r));
      }
    }
  }
  return doc;
}

}  // namespace leader::mongodb
