/* One replica of a judged election through the C interface (capi_judge.cpp starts three):
 *   capi_replica URI LOCK TERMS HOLD_MS NODE LOG
 * Leads TERMS terms of LOCK (each holds HOLD_MS, or until the stop signal fires) and writes one
 * line per term to LOG: "<fencing token> <start ns> <end ns> <stopped 0|1>", times on
 * CLOCK_MONOTONIC (the judge's clock too). Exits 0 after TERMS terms, 2 on a store error, 3 when
 * 60 s passed first. */
#include <leader/leader.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

struct term {
  int hold_ms;
  long long start, end;
  int stopped;
};

/* Holds the lease for hold_ms, waking early when the stop signal's descriptor becomes readable. */
static int hold(leader_context *ctx, void *user) {
  struct term *t = user;
  t->start = now_ns();
  const int fd = leader_context_stop_fd(ctx);
  if (fd < 0) return 1;
  struct pollfd p = {fd, POLLIN, 0};
  t->stopped = poll(&p, 1, t->hold_ms) > 0 || leader_context_stopped(ctx);
  t->end = now_ns();
  return t->stopped ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: capi_replica URI LOCK TERMS HOLD_MS NODE LOG\n");
    return 64;
  }
  const int terms = atoi(argv[3]);
  struct term t = {atoi(argv[4]), 0, 0, 0};
  leader_store *store = NULL;
  if (leader_store_open(argv[1], &store) != LEADER_OK) {
    fprintf(stderr, "capi_replica: %s\n", leader_last_error());
    return 2;
  }
  leader_options o;
  leader_options_init(&o);
  o.wait_ms = 3000;
  o.lease_ms = 2000;
  o.auto_extend = true;
  o.node_id = argv[5];
  leader_elector *e = NULL;
  if (leader_elector_new(store, &o, &e) != LEADER_OK) {
    fprintf(stderr, "capi_replica: %s\n", leader_last_error());
    return 2;
  }
  FILE *log = fopen(argv[6], "w");
  if (log == NULL) return 2;
  const long long give_up = now_ns() + 60LL * 1000000000LL;
  int led = 0;
  while (led < terms && now_ns() < give_up) {
    leader_outcome out;
    const leader_status s = leader_run_if_leader(e, argv[2], hold, &t, NULL, &out);
    if (s == LEADER_OK || s == LEADER_ACTION_FAILED) {
      fprintf(log, "%llu %lld %lld %d\n", (unsigned long long)out.fencing_token, t.start, t.end,
              t.stopped);
      fflush(log);
      ++led;
      struct timespec pause = {0, 30 * 1000000L}; /* let the others in */
      nanosleep(&pause, NULL);
    } else if (s != LEADER_NOT_ELECTED) {
      fprintf(stderr, "capi_replica %s: %s: %s\n", argv[5], leader_status_name(s),
              leader_last_error());
      fclose(log);
      return 2;
    }
  }
  fclose(log);
  leader_elector_free(e);
  leader_store_close(store);
  return led == terms ? 0 : 3;
}
