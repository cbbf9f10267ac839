// Registers the `sqlite` URI scheme with leader::open().

#include <memory>

#include "history.hpp"
#include "leader/open.hpp"
#include "sqlite_store.hpp"

extern "C" {
/// Referenced by the linker option of leader::sqlite so this registration is always linked.
extern const int leader_store_sqlite_anchor;
const int leader_store_sqlite_anchor = 0;
}

namespace {

const bool kRegistered = [] {
  leader::register_store("sqlite",
                         [](const leader::Uri& uri) -> std::shared_ptr<leader::LeaseStore> {
                           return std::make_shared<leader::sqlite::SqliteStore>(
                               leader::sqlite::Options::from_uri(uri));
                         });
  leader::sqlite::register_history_sinks();
  return true;
}();

}  // namespace
