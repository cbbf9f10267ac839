#pragma once
/// @file log.hpp
/// The one-line messages `leader` writes to stderr, filtered by -v / --quiet.

#include <cstdio>
#include <optional>
#include <string>

#include "leader/uri.hpp"

namespace leader::cli {

/// The store URI whose secrets no message of leader may show; set once it has been parsed.
inline std::optional<Uri>& store_uri_for_messages() {
  static std::optional<Uri> uri;
  return uri;
}

/// `message` with every secret of the store URI replaced by "***" (a last line of defence for
/// errors that client libraries word themselves).
inline std::string without_secrets(const std::string& message) {
  const auto& uri = store_uri_for_messages();
  return uri ? uri->scrub(message) : message;
}

/// How much leader says: -1 quiet, 0 normal, 1 verbose.
class Log {
 public:
  explicit Log(int verbosity = 0) : verbosity_(verbosity) {}
  /// Details shown with -v only.
  void info(const std::string& message) const {
    if (verbosity_ > 0) write(message);
  }
  /// Normal messages (e.g. "lock held elsewhere"), silenced by --quiet.
  void notice(const std::string& message) const {
    if (verbosity_ >= 0) write(message);
  }
  /// Errors and lease loss: always shown.
  void error(const std::string& message) const { write(message); }

 private:
  static void write(const std::string& message) {
    std::fprintf(stderr, "leader: %s\n", without_secrets(message).c_str());
    std::fflush(stderr);
  }
  int verbosity_;
};

}  // namespace leader::cli
