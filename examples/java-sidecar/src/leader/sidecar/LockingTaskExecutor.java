package leader.sidecar;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * ShedLock's LockingTaskExecutor over {@code leader serve}: the task runs on the calling thread
 * when this replica gets the lock, and is skipped when another replica holds it. Unlike ShedLock,
 * the task gets a fencing token, and a stop signal (LockContext.isStopped, an interrupt) at the
 * lease's deadline when renewals fail, before another replica can be given the lock.
 */
public final class LockingTaskExecutor implements AutoCloseable {
  /** A task that sees its lease. */
  @FunctionalInterface
  public interface FencedTask<T> {
    T call(LockContext ctx) throws Exception;
  }

  private final SidecarClient client;
  private final String nodeId;
  // Two threads: a renewal waiting for a paused sidecar never holds up the deadline's watchdog.
  private final ScheduledExecutorService keeper = Executors.newScheduledThreadPool(2, r -> {
    Thread t = new Thread(r, "leader-lease-keeper");
    t.setDaemon(true);
    return t;
  });

  public LockingTaskExecutor(SidecarClient client, String nodeId) {
    this.client = client;
    this.nodeId = nodeId;
  }

  /** ShedLock's shape: runs {@code task} if this replica gets the lock. */
  public void executeWithLock(Runnable task, LockConfiguration cfg) throws Exception {
    executeWithLock(ctx -> {
      task.run();
      return null;
    }, cfg);
  }

  /** Runs {@code task} under the lock, or returns notExecuted when another replica holds it. */
  public <T> TaskResult<T> executeWithLock(FencedTask<T> task, LockConfiguration cfg) throws Exception {
    long sent = System.nanoTime();
    Optional<Lease> got = client.acquire(cfg.name(), cfg.lockAtMostFor(), Duration.ZERO, nodeId);
    if (got.isEmpty()) return TaskResult.notExecuted();
    Lease lease = got.get();
    LockContext ctx = new LockContext(lease);
    Keeper k = new Keeper(lease, ctx, cfg.lockAtMostFor(), Thread.currentThread(),
        sent + TimeUnit.MILLISECONDS.toNanos(lease.expiresInMs()));
    T result;
    try {
      result = task.call(ctx);
    } finally {
      k.stop();
      Thread.interrupted(); // an interrupt of the keeper's is for the task only
      long holdUntil = sent + cfg.lockAtLeastFor().toNanos();
      long left = holdUntil - System.nanoTime();
      if (left <= 0 || ctx.isStopped()) {
        release(lease);
      } else {
        keeper.schedule(() -> release(lease), left, TimeUnit.NANOSECONDS);
      }
    }
    return new TaskResult<>(true, result, lease.fencingToken());
  }

  private void release(Lease lease) {
    try {
      client.release(lease);
    } catch (SidecarException e) { // it then expires on the store after its ttl
    }
  }

  /** Renews at a third of the ttl; stops the task at the deadline when no renewal succeeded. */
  private final class Keeper {
    private final Lease lease;
    private final LockContext ctx;
    private final Duration ttl;
    private final Thread task;
    private volatile long deadline; // System.nanoTime() after which the lease must be assumed lost
    private final ScheduledFuture<?> renewals;
    private volatile ScheduledFuture<?> watchdog;
    private boolean ended; // guarded by this: after stop(), the task's thread is never interrupted

    Keeper(Lease lease, LockContext ctx, Duration ttl, Thread task, long deadline) {
      this.lease = lease;
      this.ctx = ctx;
      this.ttl = ttl;
      this.task = task;
      this.deadline = deadline;
      long every = Math.max(1, ttl.toMillis() / 3);
      renewals = keeper.scheduleAtFixedRate(this::renew, every, every, TimeUnit.MILLISECONDS);
      arm();
    }

    private void arm() {
      watchdog = keeper.schedule(this::check, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    private void renew() {
      long sent = System.nanoTime();
      try {
        Duration left = Duration.ofNanos(Math.max(deadline - sent, 1_000_000));
        Optional<Long> expires = client.renew(lease, ttl, left);
        if (expires.isEmpty()) {
          stopTask();
          return;
        }
        deadline = sent + TimeUnit.MILLISECONDS.toNanos(expires.get());
      } catch (SidecarException e) { // the watchdog stops the task at the deadline
      }
    }

    private void check() {
      if (System.nanoTime() >= deadline) {
        stopTask();
      } else {
        arm();
      }
    }

    private synchronized void stopTask() {
      if (ended || ctx.isStopped()) return;
      ctx.stop();
      renewals.cancel(false);
      task.interrupt();
    }

    synchronized void stop() {
      ended = true;
      renewals.cancel(false);
      ScheduledFuture<?> w = watchdog;
      if (w != null) w.cancel(false);
    }
  }

  @Override
  public void close() {
    keeper.shutdown();
  }
}
