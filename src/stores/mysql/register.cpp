// Registers the mysql:// and mariadb:// schemes with leader::open.
#include <memory>

#include "leader/open.hpp"
#include "my_history.hpp"
#include "mysql_store.hpp"

extern "C" const int leader_store_mysql_anchor = 0;

namespace {

const bool kRegistered = [] {
  for (const char* scheme : {"mysql", "mariadb"}) {
    leader::register_store(scheme, [](const leader::Uri& uri) {
      return std::make_shared<leader::detail::my::MysqlStore>(
          leader::detail::my::parse_options(uri));
    });
  }
  leader::detail::my::register_history_sinks();
  return true;
}();

}  // namespace
