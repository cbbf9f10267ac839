#include "parse_errors.hpp"

#include <sstream>

namespace leader::cli {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string join(const std::vector<std::string>& words, const std::string& sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// The words after "not expected: " in an ExtrasError.
std::vector<std::string> extra_words(const std::string& message) {
  std::vector<std::string> out;
  auto at = message.find("expected: ");
  if (at == std::string::npos) return out;
  std::istringstream in(message.substr(at + 10));
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string help_of(const std::string& sub) {
  return "'leader " + (sub.empty() ? std::string() : sub + " ") + "--help'";
}

std::string explain_extras(const std::string& message, const std::string& sub,
                           const std::vector<std::string>& subcommands) {
  std::vector<std::string> extras = extra_words(message);
  if (extras.empty()) return message;
  if (sub.empty()) {
    const std::string& first = extras.front();
    if (starts_with(first, "-"))
      return "unknown option '" + first + "' before the command; type a command first: leader " +
             join(subcommands, "|") + " [OPTIONS]";
    return "unknown command '" + first + "'; the commands are " + join(subcommands, ", ") +
           " (e.g. leader run --lock NAME -- COMMAND)";
  }
  for (const auto& w : extras) {
    if (w == "--") continue;
    // NOLINTBEGIN(performance-inefficient-string-concatenation): once, the return ends the loop
    if (starts_with(w, "-"))
      return "unknown option '" + w + "' for 'leader " + sub + "'" +
             (sub == "run" || sub == "cron"
                  ? "; options of leader go before --, the command and its own options after it "
                    "(leader " +
                        sub + " --lock NAME -- COMMAND " + w + ")"
                  : "; " + help_of(sub) + " lists its options");
    // NOLINTEND(performance-inefficient-string-concatenation)
    break;
  }
  return "'leader " + sub + "' takes no arguments besides its options, but got '" +
         join(extras, " ") + "'; " + help_of(sub) + " lists its options";
}

std::string explain_required(const std::string& message, const std::string& sub,
                             const std::vector<std::string>& subcommands) {
  if (message == "A subcommand is required" || starts_with(message, "A subcommand"))
    return "a command is required: type leader " + join(subcommands, "|") +
           " [OPTIONS], e.g. leader run --lock nightly-report -- ./report.sh";
  if (starts_with(message, "--lock"))
    return "--lock NAME is required: the name of the lock, e.g. leader " +
           (sub.empty() ? std::string("run") : sub) + " --lock nightly-report" +
           (sub == "run" ? " -- ./report.sh" : "");
  if (starts_with(message, "command"))
    return "no COMMAND given: type it after --, e.g. leader " + sub +
           " --lock nightly-report -- ./report.sh --its-own-flag";
  auto is = message.find(" is required");
  if (is != std::string::npos)
    return message.substr(0, is) + " is required; " + help_of(sub) + " shows its form";
  return message;
}

}  // namespace

std::string explain_parse_error(const CLI::ParseError& error, const std::string& sub,
                                const std::vector<std::string>& subcommands) {
  std::string message = error.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr)
    return explain_extras(message, sub, subcommands);
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr)
    return explain_required(message, sub, subcommands);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    // "--ttl: 1 required DURATION missing"
    auto colon = message.find(':');
    auto required = message.find("required ");
    auto missing = message.rfind(" missing");
    if (colon != std::string::npos && required != std::string::npos &&
        missing != std::string::npos && missing > required + 9) {
      std::string flag = message.substr(0, colon);
      std::string type = message.substr(required + 9, missing - required - 9);
      return flag + " needs a value: type " + flag + " " + type + " (" + help_of(sub) +
             " shows an example)";
    }
    return message + "; " + help_of(sub) + " shows the form of each option";
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    // "--quiet excludes --verbose"
    auto at = message.find(" excludes ");
    if (at != std::string::npos)
      return message.substr(0, at) + " and " + message.substr(at + 10) +
             " cannot be given together; pick one";
    return message;
  }
  if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr ||
      dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "--slots: Value 0 not in range 1 to 1000", "--slots: Value x not in range ..."
    std::string out = message;
    auto value = out.find("Value ");
    if (value != std::string::npos) out.replace(value, 6, "value ");
    return out + " (" + help_of(sub) + " shows the allowed values)";
  }
  return message;
}

}  // namespace leader::cli
