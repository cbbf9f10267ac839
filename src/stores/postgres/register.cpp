// Registers the postgres store and its history sink under the URI schemes of its leader_add_store
// (SCHEMES in CMakeLists.txt).

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "pg_history.hpp"
#include "postgres_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::postgres::PostgresStore>(leader::postgres::Config::from_uri(uri));
}

std::shared_ptr<leader::HistorySink> make_history(const leader::Uri& uri,
                                                  const leader::HistoryOptions& options) {
  return leader::postgres::make_history_sink(leader::postgres::Config::from_uri(uri), options);
}

}  // namespace

LEADER_REGISTER_STORE(postgres, make_store)
LEADER_REGISTER_HISTORY_SINK(postgres, make_history)
