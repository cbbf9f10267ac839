#include "crontab.hpp"

#include <cctype>
#include <set>
#include <sstream>

#include "exit_codes.hpp"
#include "leader/cron.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::cli {
namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Takes the next whitespace-separated word of `rest` (advancing it); "" at the end.
std::string next_word(std::string& rest) {
  rest = trim(rest);
  std::size_t end = 0;
  while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end]))) ++end;
  std::string word = rest.substr(0, end);
  rest = rest.substr(end);
  return word;
}

// The schedule at the start of `rest`: a quoted string, a macro, or five words.
std::string take_schedule(std::string& rest, const std::string& where) {
  rest = trim(rest);
  if (!rest.empty() && rest[0] == '"') {
    std::size_t close = rest.find('"', 1);
    if (close == std::string::npos) throw UsageError(where + "the quoted schedule is not closed");
    std::string schedule = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    return schedule;
  }
  if (!rest.empty() && rest[0] == '@') return next_word(rest);
  std::string schedule;
  for (int i = 0; i < 5; ++i) {
    std::string word = next_word(rest);
    if (word.empty())
      throw UsageError(where +
                       "expected 5 schedule fields, a macro such as @hourly, or a quoted "
                       "6-field schedule, then a lock name and a command");
    schedule += (i ? " " : "") + word;
  }
  return schedule;
}

}  // namespace

std::vector<CrontabJob> parse_crontab(const std::string& text, const std::string& file) {
  std::vector<CrontabJob> jobs;
  std::set<std::string> locks;
  std::string zone = "UTC";
  std::istringstream in(text);
  std::string raw;
  for (int number = 1; std::getline(in, raw); ++number) {
    std::string line = trim(raw);
    std::string where = file + ":" + std::to_string(number) + ": ";
    if (line.empty() || line[0] == '#') continue;
    for (const char* key : {"CRON_TZ=", "TZ="}) {
      if (line.rfind(key, 0) == 0) {
        zone = trim(line.substr(std::string(key).size()));
        try {
          (void)CronSchedule::parse("@daily", zone);
        } catch (const InvalidArgument& e) {
          throw UsageError(where + e.what());
        }
        line.clear();
        break;
      }
    }
    if (line.empty()) continue;
    CrontabJob job{.line = number, .time_zone = zone};
    std::string rest = line;
    job.schedule = take_schedule(rest, where);
    try {
      (void)CronSchedule::parse(job.schedule, zone);
    } catch (const InvalidArgument& e) {
      throw UsageError(where + e.what());
    }
    job.lock = next_word(rest);
    job.command = trim(rest);
    if (job.lock.empty() || job.command.empty())
      throw UsageError(where + "expected a lock name and a command after the schedule");
    try {
      validate_lock_name(job.lock);
    } catch (const InvalidArgument& e) {
      throw UsageError(where + "lock: " + e.what());
    }
    if (!locks.insert(job.lock).second)
      throw UsageError(where + "lock '" + job.lock + "' is used by an earlier line");
    jobs.push_back(std::move(job));
  }
  if (jobs.empty()) throw UsageError(file + ": no jobs");
  return jobs;
}

}  // namespace leader::cli
