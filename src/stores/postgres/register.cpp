// Registers the postgresql:// and postgres:// schemes with leader::open.
#include <memory>

#include "leader/open.hpp"
#include "pg_history.hpp"
#include "postgres_store.hpp"

extern "C" const int leader_store_postgres_anchor = 0;

namespace {

const bool kRegistered = [] {
  for (const char* scheme : {"postgresql", "postgres"}) {
    leader::register_store(scheme, [](const leader::Uri& uri) {
      return std::make_shared<leader::detail::pg::PostgresStore>(
          leader::detail::pg::parse_options(uri));
    });
  }
  leader::detail::pg::register_history_sinks();
  return true;
}();

}  // namespace
