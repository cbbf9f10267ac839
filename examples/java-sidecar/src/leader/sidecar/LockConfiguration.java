package leader.sidecar;

import java.time.Duration;

/**
 * ShedLock's LockConfiguration: the lock's name, the lease time ({@code lockAtMostFor}: renewed
 * while the task runs, so a task may run longer; a crashed process frees the lock after it) and
 * the shortest hold ({@code lockAtLeastFor}: the lock stays held that long after it was taken,
 * so replicas whose clocks differ a little do not run the task twice).
 */
public record LockConfiguration(String name, Duration lockAtMostFor, Duration lockAtLeastFor) {
  public LockConfiguration {
    if (lockAtMostFor.isNegative() || lockAtMostFor.isZero())
      throw new IllegalArgumentException("lockAtMostFor must be > 0");
    if (lockAtLeastFor.compareTo(lockAtMostFor) > 0)
      throw new IllegalArgumentException("lockAtLeastFor must be <= lockAtMostFor");
  }

  public LockConfiguration(String name, Duration lockAtMostFor) {
    this(name, lockAtMostFor, Duration.ZERO);
  }
}
