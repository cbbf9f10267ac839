package leader.sidecar;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One replica of a judged election through a sidecar (replica.sh starts its sidecar, the judge,
 * tests/integration/capi/capi_judge.cpp, starts three replicas):
 *   Replica SIDECAR_URL LOCK TERMS HOLD_MS NODE LOG
 * Leads TERMS terms, each holding HOLD_MS (or until stopped), and writes one line per term to LOG:
 * "token start_ns end_ns stopped" on System.nanoTime() (CLOCK_MONOTONIC, the judge's clock).
 */
public final class Replica {
  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: Replica SIDECAR_URL LOCK TERMS HOLD_MS NODE LOG");
      System.exit(64);
    }
    int terms = Integer.parseInt(args[2]);
    long holdMs = Long.parseLong(args[3]);
    long giveUp = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    try (LockingTaskExecutor executor = new LockingTaskExecutor(new SidecarClient(args[0]), args[4]);
        PrintWriter log = new PrintWriter(Files.newBufferedWriter(Path.of(args[5])))) {
      LockConfiguration cfg = new LockConfiguration(args[1], Duration.ofSeconds(2));
      int led = 0;
      while (led < terms) {
        if (System.nanoTime() > giveUp) System.exit(3);
        long[] term = new long[3];
        TaskResult<Void> r = executor.executeWithLock(ctx -> {
          term[0] = System.nanoTime();
          try {
            Thread.sleep(holdMs);
          } catch (InterruptedException e) {
            term[2] = 1;
          }
          if (ctx.isStopped()) term[2] = 1;
          term[1] = System.nanoTime();
          return null;
        }, cfg);
        if (!r.executed()) {
          Thread.sleep(20);
          continue;
        }
        log.printf("%d %d %d %d%n", r.fencingToken(), term[0], term[1], term[2]);
        log.flush();
        ++led;
        Thread.sleep(30); // let the others in
      }
    } catch (SidecarException e) {
      System.err.println("Replica " + args[4] + ": " + e.getMessage());
      System.exit(2);
    }
  }
}
