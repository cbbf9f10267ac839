package leader.sidecar;

/** What a task sees of its lease: the fencing token to pass on, and whether it must stop. */
public final class LockContext {
  private final Lease lease;
  private volatile boolean stopped;

  LockContext(Lease lease) { this.lease = lease; }

  /** Strictly increasing per lock: pass it to what the task writes, so stale writers are refused. */
  public long fencingToken() { return lease.fencingToken(); }

  public String lock() { return lease.lock(); }

  /**
   * True once the task must stop: a renewal failed and the lease's deadline passed, or the lease
   * was lost. The task's thread is also interrupted then.
   */
  public boolean isStopped() { return stopped; }

  void stop() { stopped = true; }
}
