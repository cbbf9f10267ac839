// Registers the mysql store and its history sink under the URI schemes of its leader_add_store
// (SCHEMES in CMakeLists.txt).

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "my_history.hpp"
#include "mysql_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::mysql::MysqlStore>(leader::mysql::Config::from_uri(uri));
}

std::shared_ptr<leader::HistorySink> make_history(const leader::Uri& uri,
                                                  const leader::HistoryOptions& options) {
  return leader::mysql::make_history_sink(leader::mysql::Config::from_uri(uri), options);
}

}  // namespace

LEADER_REGISTER_STORE(mysql, make_store)
LEADER_REGISTER_HISTORY_SINK(mysql, make_history)
