package leader.sidecar;

/** What executeWithLock did: whether the task ran (false: another replica holds the lock). */
public record TaskResult<T>(boolean executed, T result, long fencingToken) {
  static <T> TaskResult<T> notExecuted() { return new TaskResult<>(false, null, 0); }
}
