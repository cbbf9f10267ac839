// tenant-aggregator: every replica walks the same tenant list and runs each tenant's aggregation
// under that tenant's own lock (`elector.for_tenant(id)`: lock `tenant:<id>:<job>`). Different
// tenants aggregate in parallel on different replicas; one tenant's runs never overlap. The
// action records "tenant busy" in a table whose primary key would refuse a second concurrent
// run of the same tenant (printed as OVERLAP, which must never happen).
//
//   example_tenant_aggregator <postgres-uri> <replica> [--reset] [--job NAME]
//                             [--tenants a,b,c] [--rounds N] [--work-ms N]
//
// Output (one line per event; the test driver greps them):
//   AGGREGATED tenant=<id> replica=<r> token=<t>   this replica ran the tenant's aggregation
//   SKIPPED tenant=<id> replica=<r>                another replica was running that tenant
//   OVERLAP tenant=<id> replica=<r>                two runs of one tenant at once (a bug)
#include <libpq-fe.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <leader/leader.hpp>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;

struct PgDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Connection = std::unique_ptr<PGconn, PgDeleter>;

// Runs one statement; returns false (and keeps the message) when the server refused it.
bool exec(PGconn* c, const char* sql, std::initializer_list<std::string> params,
          std::string* error = nullptr) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecParams(c, sql, static_cast<int>(values.size()), nullptr, values.data(),
                             nullptr, nullptr, 0);
  auto status = PQresultStatus(r);
  PQclear(r);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return true;
  if (!error) throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c));
  *error = PQerrorMessage(c);
  return false;
}

Connection connect(const std::string& uri) {
  Connection c(PQconnectdb(uri.substr(0, uri.find('?')).c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK) {
    throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c.get()));
  }
  exec(c.get(), "SET client_min_messages = warning", {});
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "<postgres-uri> <replica> [--reset] [--job NAME] [--tenants a,b,c] [--rounds N] "
      "[--work-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& uri = args.at(0);
    const std::string& replica = args.at(1);
    const std::string job = args.get("--job", "daily-aggregation");
    std::vector<std::string> tenants;
    std::stringstream list(args.get("--tenants", "acme,globex,initech"));
    for (std::string t; std::getline(list, t, ',');) tenants.push_back(t);
    const long rounds = args.number("--rounds", 2);
    const auto work = std::chrono::milliseconds(args.number("--work-ms", 200));
    auto db = connect(uri);
    if (args.has("--reset")) {
      exec(db.get(), "DROP TABLE IF EXISTS example_tenant_running", {});
      exec(db.get(), "CREATE TABLE example_tenant_running (tenant text PRIMARY KEY, replica text)",
           {});
      std::printf("RESET\n");
      return 0;
    }
    leader::LeaderElector elector(leader::open(uri),
                                  {.wait_time = 0s, .lease_time = 5s, .node_id = replica});
    for (long round = 0; round < rounds; ++round) {
      for (const auto& tenant : tenants) {
        bool ran = elector.for_tenant(tenant).run_if_leader(job, [&](leader::LeaderContext& ctx) {
          std::string error;
          if (!exec(db.get(), "INSERT INTO example_tenant_running VALUES ($1, $2)",
                    {tenant, replica}, &error)) {
            std::printf("OVERLAP tenant=%s replica=%s (%s)\n", tenant.c_str(), replica.c_str(),
                        error.c_str());
            return;
          }
          std::this_thread::sleep_for(work);  // the aggregation
          exec(db.get(), "DELETE FROM example_tenant_running WHERE tenant = $1", {tenant});
          std::printf("AGGREGATED tenant=%s replica=%s token=%llu\n", tenant.c_str(),
                      replica.c_str(), static_cast<unsigned long long>(ctx.fencing_token()));
        });
        if (!ran) std::printf("SKIPPED tenant=%s replica=%s\n", tenant.c_str(), replica.c_str());
      }
    }
    return 0;
  });
}
