#include <string>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "sqlite_store.hpp"

namespace leader::sqlite {
namespace {

std::string path_of(const Uri& uri) {
  const std::string shown = uri.redacted();
  if (!uri.hosts.empty() || uri.user || uri.password)
    throw InvalidArgument("store URI '" + shown +
                          "': sqlite URIs take no host or user; use sqlite:///abs/path.db or "
                          "sqlite:relative/path.db");
  if (uri.path.empty())
    throw InvalidArgument("store URI '" + shown +
                          "' names no database file; use sqlite:///abs/path.db or "
                          "sqlite:relative/path.db");
  if (uri.path == ":memory:" || uri.path.rfind("file:", 0) == 0)
    throw InvalidArgument("store URI '" + shown + "': path '" + uri.path +
                          "' is not supported; an in-memory or URI-named database is private to "
                          "one connection, so leases would not be shared; name a file instead");
  return uri.path;
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  if (uri.scheme != "sqlite")
    throw InvalidArgument("store URI '" + uri.redacted() + "' is not a sqlite: URI");
  uri.expect_params({"busy_timeout", "prefix", "create_schema"});
  Config o;
  o.path = path_of(uri);
  o.busy_timeout = uri.duration_param("busy_timeout", o.busy_timeout);
  o.table_prefix = uri.param("prefix").value_or(o.table_prefix);
  detail::validate_table_prefix(o.table_prefix, "store URI '" + uri.redacted() + "'");
  o.create_schema = uri.bool_param("create_schema", o.create_schema);
  return o;
}

}  // namespace leader::sqlite
