#pragma once
/// @file scheduler.hpp
/// Scheduler: leader-gated periodic and cron tasks (Spring's `@Scheduled` + ShedLock, Ktor's
/// `leaderScheduled`). Every replica runs a Scheduler with the same tasks; each firing runs on one
/// replica (or on N with a group elector).
///
/// What is guaranteed (the argument is in docs/scheduler.md): a firing of a cron or fixed-rate
/// task runs at most once across all replicas whose wall clocks differ by at most
/// `max_clock_skew`, as long as the task's lease is not lost (the elector's guarantee) and no
/// firing is cut short by `stop()` past its bound. The task's lock (its name) is held from the
/// firing until the winner's wall clock reads `instant + window + max_clock_skew`, where `window`
/// (the time after its instant in which a replica may still start a firing) is
/// `min(misfire_threshold, gap to the next instant - 2 * max_clock_skew - latency_allowance)`; a
/// replica whose lease arrives after the window releases it without running. A task never
/// overlaps its previous firing, on this replica or anywhere (the lock is held while it runs).
/// Fixed-delay tasks have no shared instants: a run starts at least `delay - latency_allowance`
/// after the previous run ended anywhere.
///
/// With `MisfirePolicy::run_once`, a replica that could not start a firing in its window runs
/// one catch-up of it while its clock reads less than `instant + catch-up window` (the gap to the
/// next instant - 2 * max_clock_skew - latency_allowance), under the same lock and rules, and
/// every run of such a task holds the lock until that window has closed everywhere: a catch-up
/// never repeats a firing that ran, on time or as another replica's catch-up.
///
/// What is NOT guaranteed: that a firing runs at all (every replica may be down, busy or late:
/// a misfire; a catch-up comes only inside its catch-up window).
///
/// Threads: one timer thread and `max_concurrent` worker threads per Scheduler, started by
/// `start()`. Tasks and listeners run on the workers; listener exceptions are caught and counted.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leader/cron.hpp"
#include "leader/elector.hpp"
#include "leader/group.hpp"
#include "leader/strategic.hpp"

namespace leader {

/// Source of wall-clock time (cron instants), injected so that tests are deterministic.
class WallClock {
 public:
  virtual ~WallClock() = default;
  /// The current wall-clock time.
  [[nodiscard]] virtual WallTime now() const = 0;
  /// std::chrono::system_clock.
  static std::shared_ptr<WallClock> system();
  /// Reads `origin` now and advances with `steady` (a FakeClock in tests).
  static std::shared_ptr<WallClock> following(std::shared_ptr<Clock> steady, WallTime origin);
};

/// When a task fires: a cron expression, a fixed rate, or a fixed delay.
class Trigger {
 public:
  enum class Kind { cron, fixed_rate, fixed_delay };
  /// A cron expression in UTC or an IANA time zone (see cron.hpp).
  static Trigger cron(std::string_view expression, std::string_view time_zone = "UTC");
  /// Every `period`, at the multiples of `period` since the Unix epoch (UTC), so that replicas
  /// agree on the instants (a 1 h rate fires at the top of each hour).
  static Trigger fixed_rate(Duration period);
  /// `delay` after the end of the previous run (on any replica).
  static Trigger fixed_delay(Duration delay);

  /// Which kind this is.
  [[nodiscard]] Kind kind() const { return kind_; }
  /// The first instant strictly after `after` (cron and fixed_rate); nullopt for fixed_delay.
  [[nodiscard]] std::optional<WallTime> next_after(WallTime after) const;
  /// The period or delay (fixed_rate, fixed_delay).
  [[nodiscard]] Duration period() const { return period_; }
  /// E.g. "cron '*/5 * * * *' (UTC)", "every 10s", "10s after each run".
  [[nodiscard]] std::string describe() const;

 private:
  Kind kind_ = Kind::fixed_rate;
  Duration period_{};
  std::shared_ptr<const CronSchedule> cron_;
};

/// What a replica does with a firing it could not start in time.
enum class MisfirePolicy {
  skip,      ///< drop it (the default): the next instant runs as usual
  run_once,  ///< run one catch-up firing within the catch-up window, at most once (see above)
};

/// A task: its name (also its lock name), trigger and per-task timing.
struct TaskOptions {
  std::string name;  ///< the lock name (validated like every lock name)
  Trigger trigger = Trigger::fixed_rate(std::chrono::minutes(1));
  /// The first firing on this replica is not before start() + initial_delay.
  Duration initial_delay{};
  /// Each firing is delayed on this replica by a random time in [0, jitter); must fit the window.
  Duration jitter{};
  MisfirePolicy misfire = MisfirePolicy::skip;
};

/// One firing as this replica saw it.
struct FiringRecord {
  std::string task{};
  std::optional<WallTime> instant;  ///< the scheduled instant; empty for fixed_delay
  WallTime started{};               ///< wall time the attempt began
  WallTime finished{};              ///< wall time the task returned (or the attempt ended)
  FiringOutcome outcome = FiringOutcome::ran;
  std::uint64_t fencing_token = 0;  ///< when ran or failed
  int slot = 0;                     ///< when ran or failed (group electors)
  bool catch_up = false;            ///< a run_once catch-up firing
  std::string detail{};             ///< the exception text, the holder, or why it was skipped
};

/// What a task function may know about the firing it runs.
struct FiringInfo {
  std::string task{};
  std::optional<WallTime> instant{};  ///< the scheduled instant; empty for fixed_delay
  bool catch_up = false;              ///< a run_once catch-up firing
};

/// A snapshot of one task.
struct TaskStatus {
  std::string name{};
  std::string trigger{};                 ///< Trigger::describe()
  std::optional<WallTime> next_firing;   ///< wall time of the next attempt on this replica
  std::optional<FiringRecord> last;      ///< the last firing this replica saw
  std::uint64_t last_fencing_token = 0;  ///< of the last firing this replica ran
  std::uint64_t runs = 0, failures = 0, skips = 0;
  bool running = false;
};

/// Receives every firing record; runs on a worker thread and must not block long.
class SchedulerListener {
 public:
  virtual ~SchedulerListener() = default;
  /// A firing ended on this replica (ran, failed or skipped).
  virtual void on_firing(const FiringRecord& /*record*/) {}
};

/// Options of a Scheduler.
struct SchedulerOptions {
  /// The largest difference between the wall clocks of any two replicas.
  Duration max_clock_skew = std::chrono::seconds(2);
  /// Slack for store round trips and timer latency at the edges of a window.
  Duration latency_allowance = std::chrono::milliseconds(250);
  /// Upper bound of a firing's window (how late a replica may still start it).
  Duration misfire_threshold = std::chrono::seconds(5);
  /// How long stop() (and the destructor) wait for running tasks and lock holds.
  Duration stop_timeout = std::chrono::seconds(10);
  /// Worker threads (tasks of one scheduler running at once).
  int max_concurrent = 4;
  std::shared_ptr<Clock> clock{};           ///< steady time; default Clock::system()
  std::shared_ptr<WallClock> wall_clock{};  ///< default WallClock::system()
  std::shared_ptr<SchedulerListener> listener{};
  std::uint64_t seed = 0;  ///< jitter seed; 0 = random

  /// Throws InvalidArgument when a rule is broken.
  void validate() const;
};

/// The election options scheduled tasks use by default: wait_time 0, auto_extend on.
ElectionOptions scheduled_election_options();

namespace detail {
class SchedulerCore;
}

/// Runs tasks on their triggers, each firing under the task's lock.
class Scheduler {
 public:
  /// The task function: `fn(ctx)`; ctx.stop_token() fires when the lease is lost or stop() runs.
  using Task = std::function<void(LeaderContext&)>;
  /// A task function that also receives its firing (e.g. to key its work by the instant).
  using FiringTask = std::function<void(LeaderContext&, const FiringInfo&)>;

  /// A scheduler over `store` with a single-leader elector of scheduled_election_options().
  explicit Scheduler(std::shared_ptr<LeaseStore> store, const SchedulerOptions& options = {});
  /// Single-leader firings. The elector must have auto_extend on (InvalidArgument otherwise).
  explicit Scheduler(LeaderElector elector, SchedulerOptions options = {});
  /// N replicas run each firing, one per slot (ctx.slot() partitions the work).
  explicit Scheduler(LeaderGroupElector elector, SchedulerOptions options = {});
  /// The strategy's pick runs each firing; its election options need auto_extend on.
  explicit Scheduler(std::shared_ptr<StrategicElector> elector, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Adds a task (before or after start()). Throws InvalidArgument for a bad name, a duplicate,
  /// a trigger whose instants are too close for max_clock_skew, or a jitter that cannot fit.
  void schedule(TaskOptions options, Task task);
  /// The same, for a function that receives its FiringInfo.
  void schedule(TaskOptions options, FiringTask task);
  /// Starts the timer and the workers.
  void start();
  /// No new firings; requests stop of running tasks; waits up to stop_timeout for them and for
  /// lock holds; releases every lease. Idempotent. A task that ignores its stop_token keeps its
  /// lease until it returns (the destructor waits for it).
  void stop();
  /// Every task's state.
  [[nodiscard]] std::vector<TaskStatus> tasks() const;
  /// One task's state (nullopt when unknown).
  [[nodiscard]] std::optional<TaskStatus> task(std::string_view name) const;
  /// Listener exceptions caught so far.
  [[nodiscard]] std::uint64_t listener_errors() const;

 private:
  std::shared_ptr<detail::SchedulerCore> core_;
};

}  // namespace leader
