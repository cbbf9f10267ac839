#pragma once
/// @file log.hpp
/// The one-line messages `leader` writes to stderr, filtered by -v / --quiet.

#include <cstdio>
#include <string>

namespace leader::cli {

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
    std::fprintf(stderr, "leader: %s\n", message.c_str());
    std::fflush(stderr);
  }
  int verbosity_;
};

}  // namespace leader::cli
