// Registers the sqlite store and its history sink under the URI schemes of its leader_add_store
// (SCHEMES in CMakeLists.txt).

#include <memory>

#include "history.hpp"
#include "leader/detail/store_registration.hpp"
#include "sqlite_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::sqlite::SqliteStore>(leader::sqlite::Config::from_uri(uri));
}

std::shared_ptr<leader::HistorySink> make_history(const leader::Uri& uri,
                                                  const leader::HistoryOptions& options) {
  return leader::sqlite::make_history_sink(leader::sqlite::Config::from_uri(uri), options);
}

}  // namespace

LEADER_REGISTER_STORE(sqlite, make_store)
LEADER_REGISTER_HISTORY_SINK(sqlite, make_history)
