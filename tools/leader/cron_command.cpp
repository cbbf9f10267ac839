// `leader cron`: one job per process (a Scheduler with one task whose firings run COMMAND under
// `leader run`'s supervision), or, with --crontab, one child process per job of the file.

#include "cron_command.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "command_options.hpp"
#include "crontab.hpp"
#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/scheduler.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "process_group.hpp"
#include "run_options.hpp"
#include "service_notify.hpp"
#include "store_location.hpp"
#include "supervise.hpp"

namespace leader::cli {
namespace {

std::string iso(WallTime t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&secs));
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

// One log line per firing: ran here / ran elsewhere (with -v only: every replica but one says it at
// every firing) / skipped / failed (log lines carry the time).
class FiringLog : public SchedulerListener, public ElectionListener {
 public:
  FiringLog(const Log& log, std::string node) : log_(log), node_(std::move(node)) {}
  void on_firing(const FiringRecord& r) override {
    std::string what;
    bool routine = false;
    switch (r.outcome) {
      case FiringOutcome::ran:
        what = "ran here (fencing token " + std::to_string(r.fencing_token) + ", exit 0)";
        break;
      case FiringOutcome::failed:
        what = "ran here and failed (fencing token " + std::to_string(r.fencing_token) + ", " +
               r.detail + ")";
        break;
      case FiringOutcome::ran_elsewhere:
        what = "ran elsewhere" + (r.detail.empty() ? "" : " (" + r.detail + ")");
        routine = true;
        break;
      case FiringOutcome::cancelled:
        what = "cancelled (stopping)";
        break;
      default:
        what = "skipped: " + std::string(to_string(r.outcome)) +
               (r.detail.empty() ? "" : " (" + r.detail + ")");
    }
    std::string line = "'" + r.task + "' firing " +
                       (r.instant ? iso(*r.instant) : std::string("-")) +
                       (r.catch_up ? " (catch-up)" : "") + ": " + what;
    LogFields fields{r.task, node_, r.fencing_token, std::string(to_string(r.outcome))};
    if (routine)
      log_.info(line, fields);
    else
      log_.notice(line, fields);
  }
  void on_lost(const LeaseInfo&, const std::string& reason) override {
    std::lock_guard lock(mu_);
    reason_ = reason;
  }
  std::string lost_reason() const {
    std::lock_guard lock(mu_);
    return reason_;
  }

 private:
  const Log& log_;
  std::string node_;
  mutable std::mutex mu_;
  std::string reason_;
};

std::vector<std::string> environment(LeaderContext& ctx, const FiringInfo& firing) {
  return environment_with({{"LEADER_LOCK", ctx.lock_name()},
                           {"LEADER_FENCING_TOKEN", std::to_string(ctx.fencing_token())},
                           {"LEADER_NODE_ID", ctx.node_id()},
                           {"LEADER_SCHEDULED_AT", firing.instant ? iso(*firing.instant) : ""}});
}

// Runs one firing's command under supervision; throws when it did not exit 0 (a failed firing).
void run_firing(LeaderContext& ctx, const FiringInfo& firing, const std::string& path,
                const std::vector<int>& inherited, const RunOptions& run, const FiringLog& flog,
                const std::stop_token& shutdown, const Log& log) {
  CommandSpec spec{path,      run.command,    environment(ctx, firing),
                   inherited, ctx.deadline(), run.grace};
  CommandGroup group = CommandGroup::start(spec);
  log.info("'" + ctx.lock_name() + "': running " + run.command.front() + " as process group " +
           std::to_string(group.pgid()) + " (fencing token " + std::to_string(ctx.fencing_token()) +
           ")");
  LeaseWatch watch{ctx.stop_token(), ctx.lock_name(), [&flog] { return flog.lost_reason(); },
                   [&ctx] { return ctx.deadline(); }, shutdown};
  int code = supervise(group, nullptr, watch, run, log);
  if (code != 0) throw std::runtime_error("exit " + std::to_string(code));
}

// Waits for SIGTERM or SIGINT (SIGHUP is ignored, SIGCHLD drained); returns the signal.
int wait_for_stop(SignalChannel& signals, const Log& log) {
  for (;;) {
    pollfd fd{signals.fd(), POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) return SIGTERM;
    for (int sig : signals.drain()) {
      if (sig == SIGTERM || sig == SIGINT) return sig;
      if (sig == SIGHUP) log.info("SIGHUP ignored");
    }
  }
}

void validate(const CronOptions& o) {
  check_lock_option(o.lock, "--lock");
  if (o.command.empty()) throw UsageError("no COMMAND given after --");
  (void)safety_margin_for(o.ttl, o.grace);
}

int cron_job(const CronOptions& o) {
  std::vector<int> inherited = open_descriptors();
  SignalChannel signals;
  Log log(o.verbosity);
  validate(o);
  int error = 0;
  auto path = resolve_executable(o.command.front(), error);
  if (!path) {
    log.error("cannot execute '" + o.command.front() + "': " + std::strerror(error));
    return error == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  ElectionOptions e = scheduled_election_options();
  e.lease_time = o.ttl;
  e.safety_margin = safety_margin_for(o.ttl, o.grace);
  if (!o.node_id.empty()) e.node_id = o.node_id;
  auto flog = std::make_shared<FiringLog>(log, e.node_id);
  std::optional<Scheduler> scheduler;
  TaskOptions task{.name = o.lock,
                   .misfire = o.run_once ? MisfirePolicy::run_once : MisfirePolicy::skip};
  try {
    task.trigger = Trigger::cron(o.schedule, o.time_zone);
    auto store = open_store(o.store, log);
    scheduler.emplace(
        LeaderElector(store, e, {.listener = flog}),
        SchedulerOptions{
            .max_clock_skew = o.max_clock_skew, .max_concurrent = 2, .listener = flog});
  } catch (const InvalidArgument& err) {
    throw UsageError(err.what());
  }
  RunOptions run;
  run.grace = o.grace;
  run.command = o.command;
  run.verbosity = o.verbosity;
  std::stop_source shutdown;
  try {
    scheduler->schedule(task, [&](LeaderContext& ctx, const FiringInfo& firing) {
      run_firing(ctx, firing, *path, inherited, run, *flog, shutdown.get_token(), log);
    });
  } catch (const InvalidArgument& err) {
    throw UsageError(err.what());
  }
  scheduler->start();
  notify_ready("'" + o.lock + "': " + task.trigger.describe());
  auto status = scheduler->task(o.lock);
  log.notice("'" + o.lock + "': " + task.trigger.describe() + " as " + e.node_id +
             "; next firing " +
             (status && status->next_firing ? iso(*status->next_firing) : "none"));
  int sig = wait_for_stop(signals, log);
  notify_stopping("stopping (signal " + std::to_string(sig) + "): releasing every lease");
  shutdown.request_stop();
  scheduler->stop();
  log.notice("'" + o.lock + "': stopped (signal " + std::to_string(sig) +
             "); every lease released");
  return 0;
}

// The argv of the child process that runs one crontab job.
std::vector<std::string> job_argv(const CronOptions& o, const CrontabJob& job) {
  std::vector<std::string> a = {"leader",
                                "cron",
                                "--schedule",
                                job.schedule,
                                "--time-zone",
                                job.time_zone,
                                "--lock",
                                job.lock,
                                "--ttl",
                                format_duration(o.ttl),
                                "--grace",
                                format_duration(o.grace),
                                "--max-clock-skew",
                                format_duration(o.max_clock_skew)};
  if (o.run_once) a.insert(a.end(), {"--misfire", "run-once"});
  if (!o.node_id.empty()) a.insert(a.end(), {"--node-id", o.node_id});
  if (o.verbosity > 0) a.emplace_back("-v");
  if (o.verbosity < 0) a.emplace_back("-q");
  if (log_format() == LogFormat::json) a.insert(a.end(), {"--log-format", "json"});
  a.insert(a.end(), {"--", "/bin/sh", "-c", job.command});
  return a;
}

pid_t start_job(const std::vector<std::string>& args, const std::string& store) {
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::string store_var = "LEADER_STORE=" + store;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(kExitOsError);
    if (!store.empty()) ::putenv(store_var.data());  // the URI never shows in ps
    ::unsetenv("NOTIFY_SOCKET");                     // the parent speaks to systemd
    ::execv("/proc/self/exe", argv.data());
    ::_exit(kExitOsError);
  }
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  return pid;
}

int cron_table(const CronOptions& o) {
  SignalChannel signals;
  Log log(o.verbosity);
  std::ifstream in(o.crontab);
  if (!in) throw UsageError("--crontab " + o.crontab + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  auto jobs = parse_crontab(text.str(), o.crontab);
  std::string store = o.store.empty() ? choose_store("").uri : o.store;
  std::map<pid_t, const CrontabJob*> running;
  for (const auto& job : jobs) running[start_job(job_argv(o, job), store)] = &job;
  log.notice(std::to_string(jobs.size()) + " job(s) from " + o.crontab);
  notify_ready(std::to_string(jobs.size()) + " job(s) from " + o.crontab);
  int code = 0;
  bool stopping = false;
  while (!running.empty()) {
    pollfd fd{signals.fd(), POLLIN, 0};
    if (::poll(&fd, 1, 1000) < 0 && errno != EINTR) break;
    for (int sig : signals.drain()) {
      if (sig == SIGCHLD || sig == SIGHUP) continue;
      if (!stopping) notify_stopping("stopping (signal " + std::to_string(sig) + ")");
      stopping = true;
      for (const auto& [pid, job] : running) ::kill(pid, sig);
    }
    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
      auto it = running.find(pid);
      if (it == running.end()) continue;
      int exit = WIFEXITED(status) ? WEXITSTATUS(status) : kExitSignalBase + WTERMSIG(status);
      if (!stopping || exit != 0) {
        log.error("job '" + it->second->lock + "' (line " + std::to_string(it->second->line) +
                  ") exited with code " + std::to_string(exit) +
                  (stopping ? "" : "; stopping the other jobs"));
        if (code == 0) code = exit;
      }
      running.erase(it);
      if (!stopping) {
        stopping = true;
        for (const auto& [p, job] : running) ::kill(p, SIGTERM);
      }
    }
  }
  return code;
}

}  // namespace

int cron(const CronOptions& options) {
  if (!options.crontab.empty()) {
    if (!options.schedule.empty() || !options.lock.empty() || !options.command.empty())
      throw UsageError("--crontab excludes --schedule, --lock and COMMAND");
    return cron_table(options);
  }
  if (options.schedule.empty()) throw UsageError("give --schedule (with --lock) or --crontab");
  return cron_job(options);
}

}  // namespace leader::cli
