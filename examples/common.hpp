#pragma once
// The scaffold every scenario example shares: command-line parsing driven by the usage line,
// line-buffered stdout (the test drivers read the output while the program runs), and one place
// that turns an exception into "<program> <replica>: <message>" and exit status 1.
//
//   int main(int argc, char** argv) {
//     return example::run(argc, argv, "<store-uri> <replica> [--lock NAME] [--reset]",
//                         [](const example::Args& args) {
//       auto lock = args.get("--lock", "default-lock");
//       long ms = args.number("--work-ms", 300);
//       ...
//       return 0;
//     });
//   }
//
// The usage line is the specification: `<name>` is a required positional argument, `--opt WORD`
// an option with a value, `--flag]` (no value) a switch. Anything else on the command line is a
// usage error (exit 2, the usage printed). Not part of the library: copy what you need.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

class Args {
 public:
  Args(int argc, char** argv, const std::string& usage) {
    std::istringstream words(usage);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    std::size_t positionals = 0;
    for (std::string t : tokens) {
      if (t.front() == '<') ++positionals;
      while (!t.empty() && (t.front() == '[' || t.front() == '(')) t.erase(0, 1);
      if (t.rfind("--", 0) != 0) continue;
      const bool ends = t.back() == ']';
      while (!t.empty() && (t.back() == ']' || t.back() == ')')) t.pop_back();
      (ends ? switches_ : valued_).insert(t);
    }
    if (argc < 1 + static_cast<int>(positionals)) throw Usage{};
    for (std::size_t i = 1; i <= positionals; ++i) positional_.emplace_back(argv[i]);
    for (int i = 1 + static_cast<int>(positionals); i < argc; ++i) {
      const std::string a = argv[i];
      if (switches_.count(a)) {
        values_[a] = "1";
      } else if (valued_.count(a) && i + 1 < argc) {
        values_[a] = argv[++i];
      } else {
        std::fprintf(stderr, "unknown or incomplete argument: %s\n", a.c_str());
        throw Usage{};
      }
    }
  }

  /// The i-th positional argument (0-based).
  [[nodiscard]] const std::string& at(std::size_t i) const { return positional_.at(i); }
  /// The option's value, or `fallback` when absent.
  [[nodiscard]] std::string get(const std::string& option, const std::string& fallback = "") const {
    auto it = values_.find(option);
    return it == values_.end() ? fallback : it->second;
  }
  /// The option as an integer; a value that is not one is a usage error.
  [[nodiscard]] long number(const std::string& option, long fallback) const {
    auto it = values_.find(option);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    const long v = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0') {
      throw std::invalid_argument(option + " wants an integer, got '" + it->second + "'");
    }
    return v;
  }
  /// True when the switch (or option) was given.
  [[nodiscard]] bool has(const std::string& option) const { return values_.count(option) != 0; }

  struct Usage {};

 private:
  std::vector<std::string> positional_;
  std::set<std::string> valued_, switches_;
  std::map<std::string, std::string> values_;
};

/// Parses the command line against `usage`, runs `body`, and maps failures to exit codes:
/// 2 for a usage error, 1 for an exception (its message on stderr after the program's name and
/// its second argument, the replica in most examples).
inline int run(int argc, char** argv, const std::string& usage,
               const std::function<int(const Args&)>& body) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    const Args args(argc, argv, usage);
    try {
      return body(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s %s: %s\n", argv[0], argc > 2 ? argv[2] : "", e.what());
      return 1;
    }
  } catch (const Args::Usage&) {
    std::fprintf(stderr, "usage: %s %s\n", argv[0], usage.c_str());
    return 2;
  }
}

}  // namespace example
