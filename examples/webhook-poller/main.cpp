// webhook-poller: replicas poll an event table and deliver new events to a webhook. Only the
// leader polls; the cursor (last delivered event id) advances only under the leader's fencing
// token, so a poller paused past its lease, replaced by another replica, cannot move the cursor
// back when it resumes: its write is rejected. Delivery itself is at-least-once (a resumed stale
// poller may already have sent its batch); the cursor is exactly right.
//
//   example_webhook_poller <mysql-uri> <replica> [--reset EVENTS] [--lock NAME] [--lease-ms N]
//                          [--batch N] [--deliver-ms N]
//
// Output (one line per event; the test driver greps them):
//   POLLED replica=<r> token=<t> from=<id> to=<id>       a batch was read (and is being delivered)
//   ADVANCED replica=<r> token=<t> cursor=<id>           the fenced cursor write succeeded
//   REJECTED replica=<r> token=<t> current=<t'>          a newer poller owns the cursor
//   WAITING replica=<r>                                  another replica is the poller
//   DONE replica=<r> cursor=<id>                         every event is delivered
#include <mysql.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <leader/leader.hpp>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;

struct MysqlDeleter {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
using Connection = std::unique_ptr<MYSQL, MysqlDeleter>;

struct ResultDeleter {
  void operator()(MYSQL_RES* r) const { mysql_free_result(r); }
};

// mysql://user[:password]@host[:port]/database[?store options]
Connection connect(const std::string& uri) {
  static const std::regex form(R"(^mysql://([^:@/]+)(?::([^@/]*))?@([^:/?]+)(?::(\d+))?/([^?]+))");
  std::smatch m;
  if (!std::regex_search(uri, m, form)) {
    throw std::invalid_argument("not a mysql://user@host:port/database URI: " + uri);
  }
  Connection c(mysql_init(nullptr));
  unsigned port = m[4].matched ? static_cast<unsigned>(std::stoul(m[4].str())) : 3306;
  // CLIENT_FOUND_ROWS: an UPDATE reports the rows it matched, so 0 means "fenced out".
  if (!mysql_real_connect(c.get(), m[3].str().c_str(), m[1].str().c_str(),
                          m[2].matched ? m[2].str().c_str() : nullptr, m[5].str().c_str(), port,
                          nullptr, CLIENT_FOUND_ROWS)) {
    throw std::runtime_error(std::string("mysql: ") + mysql_error(c.get()));
  }
  return c;
}

void exec(MYSQL* c, const std::string& sql) {
  if (mysql_query(c, sql.c_str()) != 0) {
    throw std::runtime_error(std::string("mysql: ") + mysql_error(c) + " in: " + sql);
  }
}

// The first column of the first row of a query (0 when NULL).
long long scalar(MYSQL* c, const std::string& sql) {
  exec(c, sql);
  std::unique_ptr<MYSQL_RES, ResultDeleter> r(mysql_store_result(c));
  if (!r) throw std::runtime_error(std::string("mysql: ") + mysql_error(c));
  MYSQL_ROW row = mysql_fetch_row(r.get());
  if (!row) throw std::runtime_error("no row for: " + sql);
  return row[0] ? std::atoll(row[0]) : 0;
}

void reset(MYSQL* c, int events) {
  exec(c, "DROP TABLE IF EXISTS example_webhook_events, example_webhook_cursor");
  exec(c,
       "CREATE TABLE example_webhook_events (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
       "payload VARCHAR(200) NOT NULL)");
  exec(c,
       "CREATE TABLE example_webhook_cursor (id INT PRIMARY KEY, last_id BIGINT NOT NULL, "
       "fencing_token BIGINT UNSIGNED NOT NULL)");
  exec(c, "INSERT INTO example_webhook_cursor VALUES (1, 0, 0)");
  for (int i = 1; i <= events; ++i) {
    exec(c, "INSERT INTO example_webhook_events (payload) VALUES ('{\"order\": " +
                std::to_string(i) + "}')");
  }
}

long long cursor(MYSQL* c) {
  return scalar(c, "SELECT last_id FROM example_webhook_cursor WHERE id = 1");
}
long long newest(MYSQL* c) { return scalar(c, "SELECT MAX(id) FROM example_webhook_events"); }

// One poll as leader: read a batch after the cursor, deliver it, advance the cursor under
// `token`. Returns false when the cursor write was fenced out.
bool poll_once(MYSQL* c, const std::string& replica, std::uint64_t token, int batch,
               std::chrono::milliseconds deliver) {
  const long long from = cursor(c);
  const long long to =
      scalar(c, "SELECT COALESCE(MAX(id), " + std::to_string(from) +
                    ") FROM (SELECT id FROM example_webhook_events WHERE id > " +
                    std::to_string(from) + " ORDER BY id LIMIT " + std::to_string(batch) + ") b");
  if (to == from) return true;
  const std::string t = std::to_string(token);
  std::printf("POLLED replica=%s token=%s from=%lld to=%lld\n", replica.c_str(), t.c_str(), from,
              to);
  std::this_thread::sleep_for(deliver);  // POST the batch to the webhook
  // The fenced write: only a token at least as new as the cursor's last writer may advance it.
  exec(c, "UPDATE example_webhook_cursor SET last_id = " + std::to_string(to) +
              ", fencing_token = " + t + " WHERE id = 1 AND fencing_token <= " + t);
  if (mysql_affected_rows(c) != 1) {
    long long current = scalar(c, "SELECT fencing_token FROM example_webhook_cursor WHERE id = 1");
    std::printf("REJECTED replica=%s token=%s current=%lld\n", replica.c_str(), t.c_str(), current);
    return false;
  }
  std::printf("ADVANCED replica=%s token=%s cursor=%lld\n", replica.c_str(), t.c_str(), to);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "<mysql-uri> <replica> [--reset EVENTS] [--lock NAME] [--lease-ms N] [--batch N] "
      "[--deliver-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& uri = args.at(0);
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "webhook-poller");
    const long reset_events = args.number("--reset", -1);
    const long lease_ms = args.number("--lease-ms", 2000);
    const int batch = static_cast<int>(args.number("--batch", 5));
    const long deliver_ms = args.number("--deliver-ms", 100);
    auto db = connect(uri);
    if (reset_events >= 0) {
      reset(db.get(), static_cast<int>(reset_events));
      std::printf("RESET events=%ld\n", reset_events);
      return 0;
    }
    leader::LeaderElector elector(
        leader::open(uri),
        {.wait_time = 0s, .lease_time = std::chrono::milliseconds(lease_ms), .node_id = replica});
    bool said_waiting = false;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    // A real poller runs forever; this one stops once every event is delivered.
    while (cursor(db.get()) < newest(db.get())) {
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("events still undelivered after 60 s");
      }
      bool ran = elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        poll_once(db.get(), replica, ctx.fencing_token(), batch,
                  std::chrono::milliseconds(deliver_ms));
      });
      if (!ran && !said_waiting) {
        std::printf("WAITING replica=%s\n", replica.c_str());
        said_waiting = true;
      }
      std::this_thread::sleep_for(50ms);
    }
    std::printf("DONE replica=%s cursor=%lld\n", replica.c_str(), cursor(db.get()));
    return 0;
  });
}
