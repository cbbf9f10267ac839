package leader.sidecar;

import java.time.Duration;

/**
 * Checks of LockingTaskExecutor against a running sidecar (tests/integration/java):
 *   ExecutorCheck SIDECAR_URL SIDECAR_PID
 * Exits 0 when every check held. The last check pauses the sidecar (SIGSTOP) while a task runs:
 * renewals fail, and the task must be stopped (interrupted, isStopped) by the lease's deadline.
 */
public final class ExecutorCheck {
  private static int failures = 0;

  private static void check(boolean ok, String what) {
    if (!ok) {
      System.err.println("check failed: " + what);
      ++failures;
    }
  }

  public static void main(String[] args) throws Exception {
    SidecarClient client = new SidecarClient(args[0]);
    String lock = "java-check-" + ProcessHandle.current().pid();
    try (LockingTaskExecutor a = new LockingTaskExecutor(client, "java-a");
        LockingTaskExecutor b = new LockingTaskExecutor(client, "java-b")) {
      // Runs when free, with a token; a later run has a greater one.
      TaskResult<Long> first = a.executeWithLock(ctx -> ctx.fencingToken(),
          new LockConfiguration(lock, Duration.ofSeconds(5)));
      check(first.executed() && first.result() > 0, "a free lock runs the task with a token");
      TaskResult<Long> second = a.executeWithLock(ctx -> ctx.fencingToken(),
          new LockConfiguration(lock, Duration.ofSeconds(5)));
      check(second.fencingToken() > first.fencingToken(), "tokens increase");
      // Skipped while another replica runs.
      TaskResult<Boolean> inner = a.executeWithLock(ctx -> b.executeWithLock(x -> true,
          new LockConfiguration(lock, Duration.ofSeconds(5))).executed(),
          new LockConfiguration(lock, Duration.ofSeconds(5)));
      check(inner.executed() && !inner.result(), "a held lock skips the other replica's task");
      // lockAtLeastFor keeps the lock held after a short task.
      a.executeWithLock(() -> {}, new LockConfiguration(lock, Duration.ofSeconds(5), Duration.ofMillis(800)));
      check(!b.executeWithLock(x -> true, new LockConfiguration(lock, Duration.ofSeconds(5))).executed(),
          "lockAtLeastFor holds the lock after the task returned");
      Thread.sleep(1500);
      check(b.executeWithLock(x -> true, new LockConfiguration(lock, Duration.ofSeconds(5))).executed(),
          "the lock is free after lockAtLeastFor");
      // The sidecar pauses: no renewal succeeds, the task is stopped by the deadline.
      long pid = Long.parseLong(args[1]);
      long[] stoppedAfterMs = {-1};
      TaskResult<Void> r = a.executeWithLock(ctx -> {
        long start = System.nanoTime();
        new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor();
        try {
          Thread.sleep(10_000);
        } catch (InterruptedException e) {
          stoppedAfterMs[0] = (System.nanoTime() - start) / 1_000_000;
        }
        check(ctx.isStopped(), "isStopped after the interrupt");
        new ProcessBuilder("kill", "-CONT", Long.toString(pid)).start().waitFor();
        return null;
      }, new LockConfiguration(lock + "-pause", Duration.ofMillis(1500)));
      check(r.executed(), "the paused case ran");
      check(stoppedAfterMs[0] >= 0 && stoppedAfterMs[0] <= 1500,
          "stopped within the 1.5 s lease while the sidecar was paused (after " + stoppedAfterMs[0] + " ms)");
    }
    if (failures > 0) System.exit(1);
    System.out.println("ExecutorCheck: every check held");
  }
}
