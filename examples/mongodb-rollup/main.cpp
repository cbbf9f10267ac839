// mongodb-rollup: the lease and the data it protects in one MongoDB database. The leader folds
// one round of events into a rollup document per round, under auto_extend; every write to that
// document is an update whose filter demands `token <= <my fencing token>`, so MongoDB itself
// refuses a write from a replica whose lease was taken over (matched 0). A newly elected replica
// first claims the document with its token, so a stale writer is refused from that moment on,
// even before the new leader wrote anything.
//
// The write that shows it: a round's work happens between the stop check and the write (as when
// a process is paused mid-round), so a leader paused past its lease and resumed sends the write
// of the round it was in with its old token, and MongoDB rejects it.
//
//   example_mongodb_rollup <mongodb-uri> <replica> [--lock NAME] [--rounds N] [--round-ms N]
//                          [--lease-ms N]
//
// The URI is both the store's and the data's (database from its path; no query parameters here,
// libmongoc would warn about the store's own ones).
//
// Output (one line per event; the test driver greps them):
//   LEADING replica=<r> token=<t> at=<n>          elected and claimed the rollup at round n
//   ROLLUP replica=<r> token=<t> round=<n>        round n written
//   REJECTED replica=<r> token=<t> newer=<t'>     MongoDB refused the write: a newer leader owns it
//   STOPPED replica=<r> token=<t>                 the lease was lost (stop_token)
//   DONE replica=<r> rounds=<n> token=<t>         the rollup is complete (as stored)
#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include <chrono>
#include <cstdint>
#include <leader/leader.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;

struct Rollup {
  std::uint64_t token = 0;
  long rounds = 0;
};

// The rollup document {_id: <name>, token: Int64, rounds: Int32} in the `rollups` collection.
class RollupDocument {
 public:
  RollupDocument(const std::string& uri, const std::string& name) : name_(name) {
    bson_error_t error;
    mongoc_uri_t* parsed = mongoc_uri_new_with_error(uri.c_str(), &error);
    if (parsed == nullptr) throw std::runtime_error(std::string("bad URI: ") + error.message);
    const char* db = mongoc_uri_get_database(parsed);
    const std::string database = db != nullptr ? db : "leader";
    client_.reset(mongoc_client_new_from_uri(parsed));
    mongoc_uri_destroy(parsed);
    if (!client_) throw std::runtime_error("mongoc_client_new_from_uri failed");
    collection_.reset(mongoc_client_get_collection(client_.get(), database.c_str(), "rollups"));
    // Create it once (token 0); a duplicate key means it exists already.
    bson_t* doc =
        BCON_NEW("_id", BCON_UTF8(name_.c_str()), "token", BCON_INT64(0), "rounds", BCON_INT32(0));
    const bool ok = mongoc_collection_insert_one(collection_.get(), doc, nullptr, nullptr, &error);
    bson_destroy(doc);
    if (!ok && error.code != 11000)
      throw std::runtime_error(std::string("insert: ") + error.message);
  }

  Rollup read() const {
    bson_t* filter = BCON_NEW("_id", BCON_UTF8(name_.c_str()));
    mongoc_cursor_t* cursor =
        mongoc_collection_find_with_opts(collection_.get(), filter, nullptr, nullptr);
    Rollup r;
    const bson_t* doc = nullptr;
    if (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, doc, "token")) r.token = bson_iter_as_int64(&it);
      if (bson_iter_init_find(&it, doc, "rounds")) r.rounds = bson_iter_as_int64(&it);
    }
    bson_error_t error;
    const bool failed = mongoc_cursor_error(cursor, &error);
    mongoc_cursor_destroy(cursor);
    bson_destroy(filter);
    if (failed) throw std::runtime_error(std::string("find: ") + error.message);
    return r;
  }

  // Sets the token (a new leader's claim); true when MongoDB accepted it.
  bool claim(std::uint64_t token) const {
    bson_t* update = BCON_NEW("$set", "{", "token", BCON_INT64(static_cast<int64_t>(token)), "}");
    return fenced_update(token, update);
  }
  // Adds one round under `token`; true when MongoDB accepted it.
  bool add_round(std::uint64_t token) const {
    bson_t* update = BCON_NEW("$set", "{", "token", BCON_INT64(static_cast<int64_t>(token)), "}",
                              "$inc", "{", "rounds", BCON_INT32(1), "}");
    return fenced_update(token, update);
  }

 private:
  // update_one({_id, token: {$lte: token}}, update): the fence is the filter.
  bool fenced_update(std::uint64_t token, bson_t* update) const {
    bson_t* filter = BCON_NEW("_id", BCON_UTF8(name_.c_str()), "token", "{", "$lte",
                              BCON_INT64(static_cast<int64_t>(token)), "}");
    bson_t reply;
    bson_error_t error;
    const bool ok =
        mongoc_collection_update_one(collection_.get(), filter, update, nullptr, &reply, &error);
    bson_iter_t it;
    const bool matched =
        ok && bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) == 1;
    bson_destroy(&reply);
    bson_destroy(filter);
    bson_destroy(update);
    if (!ok) throw std::runtime_error(std::string("update: ") + error.message);
    return matched;
  }

  struct ClientFree {
    void operator()(mongoc_client_t* c) const { mongoc_client_destroy(c); }
  };
  struct CollectionFree {
    void operator()(mongoc_collection_t* c) const { mongoc_collection_destroy(c); }
  };
  std::string name_;
  std::unique_ptr<mongoc_client_t, ClientFree> client_;
  std::unique_ptr<mongoc_collection_t, CollectionFree> collection_;
};

}  // namespace

int main(int argc, char** argv) {
  mongoc_init();
  const char* usage =
      "<mongodb-uri> <replica> [--lock NAME] [--rounds N] [--round-ms N] [--lease-ms N]";
  const int rc = example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "daily-rollup");
    const long rounds = args.number("--rounds", 10);
    const auto round_time = std::chrono::milliseconds(args.number("--round-ms", 200));
    const RollupDocument rollup(args.at(0), lock);
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 500ms,
         .lease_time = std::chrono::milliseconds(args.number("--lease-ms", 1000)),
         .auto_extend = true,
         .node_id = replica});
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (rollup.read().rounds < rounds) {
      if (std::chrono::steady_clock::now() > give_up) throw std::runtime_error("rollup unfinished");
      elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        const auto t = static_cast<unsigned long long>(ctx.fencing_token());
        auto rejected = [&] {
          std::printf("REJECTED replica=%s token=%llu newer=%llu\n", replica.c_str(), t,
                      static_cast<unsigned long long>(rollup.read().token));
        };
        if (rollup.read().rounds >= rounds) return;  // finished by another leader meanwhile
        if (!rollup.claim(ctx.fencing_token())) return rejected();
        std::printf("LEADING replica=%s token=%llu at=%ld\n", replica.c_str(), t,
                    rollup.read().rounds);
        for (long done = rollup.read().rounds; done < rounds; ++done) {
          if (ctx.stop_token().stop_requested()) {
            std::printf("STOPPED replica=%s token=%llu\n", replica.c_str(), t);
            return;
          }
          std::this_thread::sleep_for(round_time);  // fold this round's events
          if (!rollup.add_round(ctx.fencing_token())) return rejected();
          std::printf("ROLLUP replica=%s token=%llu round=%ld\n", replica.c_str(), t, done + 1);
        }
      });
    }
    const Rollup done = rollup.read();
    std::printf("DONE replica=%s rounds=%ld token=%llu\n", replica.c_str(), done.rounds,
                static_cast<unsigned long long>(done.token));
    return 0;
  });
  mongoc_cleanup();
  return rc;
}
