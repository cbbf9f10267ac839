#include "store_location.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "exit_codes.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"

namespace leader::cli {
namespace {

// mkdir -p with mode 0755; true when `dir` exists as a directory afterwards.
bool make_dirs(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  auto slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash))) return false;
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

bool writable_dir(const std::string& dir) {
  return make_dirs(dir) && ::access(dir.c_str(), W_OK | X_OK) == 0;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

}  // namespace

std::string default_sqlite_path() {
  if (writable_dir(kSystemStateDir)) return std::string(kSystemStateDir) + "/leader.db";
  std::string base = env_or_empty("XDG_STATE_HOME");
  if (base.empty() || base.front() != '/') {
    std::string home = env_or_empty("HOME");
    if (home.empty() || home.front() != '/')
      throw StoreUnavailable(
          "no default store: /var/lib/leader is not writable and neither $XDG_STATE_HOME nor "
          "$HOME is set; pass --store or set LEADER_STORE");
    base = home + "/.local/state";
  }
  std::string dir = base + "/leader";
  if (!writable_dir(dir))
    throw StoreUnavailable("no default store: cannot create a writable directory " + dir + " (" +
                           std::strerror(errno) + "); pass --store or set LEADER_STORE");
  return dir + "/leader.db";
}

std::string sqlite_uri(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "sqlite://";
  for (unsigned char c : path) {
    bool plain = std::isalnum(c) != 0 || std::strchr("/-._~", c) != nullptr;
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string store_uri_problem(const std::string& uri, const std::string& source) {
  if (uri.empty())
    return source + " is empty: give a store URI (e.g. redis://host:6379), or leave " + source +
           " out to use the per-host SQLite default";
  std::string scheme = uri.substr(0, uri.find(':'));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "memory")
    return source +
           " is memory:, a store inside one process: every replica would hold its own "
           "lock and all would run; give a shared store (sqlite file, redis://, postgresql://, "
           "...)";
  return "";
}

std::string announce_store(const StoreChoice& choice, const Log& log) {
  store_uri_for_messages() = Uri::parse(choice.uri);
  std::string shown = store_uri_for_messages()->redacted();
  if (choice.source == "default") {
    log.notice("store " + shown + " (from default)");
  } else {
    log.info("store " + shown + " (from " + choice.source + ")");
  }
  return shown;
}

StoreChoice choose_store(const std::string& flag) {
  auto checked = [](std::string uri, const std::string& source) -> StoreChoice {
    if (std::string problem = store_uri_problem(uri, source); !problem.empty())
      throw UsageError(problem);
    return {std::move(uri), source};
  };
  if (!flag.empty()) return checked(flag, "--store");
  if (std::getenv("LEADER_STORE") != nullptr)
    return checked(env_or_empty("LEADER_STORE"), "$LEADER_STORE");
  return {sqlite_uri(default_sqlite_path()), "default"};
}

std::shared_ptr<LeaseStore> open_store(const std::string& flag, const Log& log,
                                       std::string* shown) {
  StoreChoice choice = choose_store(flag);
  std::string local;
  std::string& named = shown != nullptr ? *shown : local;
  named = redact_uri(choice.uri);
  try {
    named = announce_store(choice, log);
    return leader::open(choice.uri);
  } catch (const std::exception& e) {
    throw store_failure("cannot open store " + named, e);
  }
}

}  // namespace leader::cli
