/* The C interface (leader.h) from C11: every call once, on the store whose URI is argv[1]
 * (memory:, sqlite:///path, or a server's). Compiled with -std=c11 -Wall -Wextra -Werror
 * -pedantic. Exits 0 when every check held; prints the failed check otherwise. */
#include <leader/leader.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, leader_last_error());                                           \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

struct seen {
  uint64_t token;
  int slot;
  char lock[64];
  int calls;
};

static int record(leader_context *ctx, void *user) {
  struct seen *s = user;
  s->token = leader_context_fencing_token(ctx);
  s->slot = leader_context_slot(ctx);
  snprintf(s->lock, sizeof s->lock, "%s", leader_context_lock(ctx));
  s->calls++;
  return leader_context_stopped(ctx) ? 9 : 0;
}

static int fail_with_7(leader_context *ctx, void *user) {
  (void)ctx;
  (void)user;
  return 7;
}

/* Runs while another elector holds the lock: never called. */
static int never(leader_context *ctx, void *user) {
  (void)ctx;
  ++*(int *)user;
  return 0;
}

static leader_elector *elector_on(leader_store *store, int64_t wait_ms, bool renew, int leaders) {
  leader_options o;
  leader_options_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = 3000;
  o.auto_extend = renew;
  o.max_leaders = leaders;
  o.node_id = "capi-unit";
  leader_elector *e = NULL;
  CHECK(leader_elector_new(store, &o, &e) == LEADER_OK && e != NULL);
  return e;
}

static void errors(void) {
  leader_store *store = (leader_store *)1;
  CHECK(leader_store_open("nosuch://x", &store) == LEADER_INVALID_ARGUMENT);
  CHECK(store == NULL);
  CHECK(strstr(leader_last_error(), "nosuch") != NULL);
  CHECK(leader_store_open(NULL, &store) == LEADER_INVALID_ARGUMENT);
  CHECK(strcmp(leader_status_name(LEADER_NOT_ELECTED), "not_elected") == 0);
  CHECK(strcmp(leader_status_name(LEADER_DEADLINE_EXCEEDED), "deadline_exceeded") == 0);
  CHECK(strlen(leader_version()) > 0);
  leader_options o;
  leader_options_init(&o);
  CHECK(o.struct_size == sizeof o && o.wait_ms == 5000 && o.lease_ms == 60000 && o.fair);
  o.struct_size = 1;
  leader_elector *e = NULL;
  CHECK(leader_elector_new((leader_store *)1, &o, &e) == LEADER_INVALID_ARGUMENT);
  CHECK(strstr(leader_last_error(), "leader_options_init") != NULL);
}

static void run_once(leader_store *store) {
  leader_elector *e = elector_on(store, 0, false, 0);
  struct seen s = {0};
  leader_outcome out;
  CHECK(leader_run_if_leader(e, "capi-run", record, &s, NULL, &out) == LEADER_OK);
  CHECK(s.calls == 1 && s.token > 0 && out.fencing_token == s.token && out.action_code == 0);
  CHECK(strcmp(s.lock, "capi-run") == 0);
  struct seen again = {0};
  CHECK(leader_run_if_leader(e, "capi-run", record, &again, NULL, NULL) == LEADER_OK);
  CHECK(again.token > s.token);
  CHECK(leader_run_if_leader(e, "capi-run", fail_with_7, NULL, NULL, &out) == LEADER_ACTION_FAILED);
  CHECK(out.action_code == 7 && out.fencing_token > again.token);
  CHECK(strstr(leader_last_error(), "returned 7") != NULL);
  CHECK(leader_run_if_leader(e, "bad name!", record, &s, NULL, NULL) == LEADER_INVALID_ARGUMENT);
  leader_elector_free(e);
}

static void contention_and_lease(leader_store *store) {
  leader_elector *holder = elector_on(store, 0, false, 0);
  leader_elector *other = elector_on(store, 0, false, 0);
  leader_lease *lease = NULL;
  CHECK(leader_acquire(holder, "capi-held", NULL, &lease) == LEADER_OK && lease != NULL);
  leader_context *ctx = leader_lease_context(lease);
  CHECK(leader_context_fencing_token(ctx) > 0);
  CHECK(!leader_context_stopped(ctx));
  CHECK(leader_context_remaining_ms(ctx) > 1000);
  CHECK(strcmp(leader_context_node_id(ctx), "capi-unit") == 0);
  int calls = 0;
  leader_outcome out;
  CHECK(leader_run_if_leader(other, "capi-held", never, &calls, NULL, &out) == LEADER_NOT_ELECTED);
  CHECK(calls == 0 && out.fencing_token == 0);
  leader_lease *none = (leader_lease *)1;
  CHECK(leader_acquire(other, "capi-held", NULL, &none) == LEADER_NOT_ELECTED && none == NULL);
  CHECK(leader_context_extend(ctx, 4000) == LEADER_OK);
  CHECK(leader_lease_release(lease, false) == LEADER_OK);
  CHECK(leader_acquire(other, "capi-held", NULL, &lease) == LEADER_OK);
  CHECK(leader_lease_release(lease, true) == LEADER_OK);
  CHECK(leader_lease_release(NULL, false) == LEADER_OK);
  leader_elector_free(holder);
  leader_elector_free(other);
}

static void cancellation(leader_store *store) {
  /* A cancelled source: a wait ends at once, and a held lease's stop signal fires. */
  leader_elector *holder = elector_on(store, 0, false, 0);
  leader_elector *waiter = elector_on(store, 10000, false, 0);
  leader_lease *lease = NULL;
  CHECK(leader_acquire(holder, "capi-cancel", NULL, &lease) == LEADER_OK);
  leader_cancel *cancel = leader_cancel_new();
  CHECK(cancel != NULL && !leader_cancel_requested(cancel));
  leader_cancel_request(cancel);
  CHECK(leader_cancel_requested(cancel));
  int calls = 0;
  CHECK(leader_run_if_leader(waiter, "capi-cancel", never, &calls, cancel, NULL) == LEADER_CANCELLED);
  CHECK(calls == 0);
  CHECK(leader_lease_release(lease, false) == LEADER_OK);
  leader_cancel_free(cancel);

  cancel = leader_cancel_new();
  CHECK(leader_acquire(holder, "capi-cancel", cancel, &lease) == LEADER_OK);
  leader_context *ctx = leader_lease_context(lease);
  int fd = leader_context_stop_fd(ctx);
  CHECK(fd >= 0 && leader_context_stop_fd(ctx) == fd);
  struct pollfd p = {fd, POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0);
  leader_cancel_request(cancel);
  CHECK(poll(&p, 1, 2000) == 1 && (p.revents & POLLIN));
  CHECK(leader_context_stopped(ctx));
  CHECK(leader_lease_release(lease, false) == LEADER_OK);
  leader_cancel_free(cancel);
  leader_elector_free(holder);
  leader_elector_free(waiter);
}

static void group(leader_store *store) {
  leader_elector *e = elector_on(store, 0, false, 2);
  leader_lease *a = NULL, *b = NULL, *c = NULL;
  CHECK(leader_acquire(e, "capi-group", NULL, &a) == LEADER_OK);
  CHECK(leader_acquire(e, "capi-group", NULL, &b) == LEADER_OK);
  CHECK(leader_acquire(e, "capi-group", NULL, &c) == LEADER_NOT_ELECTED);
  if (a != NULL && b != NULL)
    CHECK(leader_context_slot(leader_lease_context(a)) != leader_context_slot(leader_lease_context(b)));
  leader_lease_release(a, false);
  leader_lease_release(b, false);
  leader_elector_free(e);
  leader_options o;
  leader_options_init(&o);
  o.max_leaders = -1;
  CHECK(leader_elector_new(store, &o, &e) == LEADER_INVALID_ARGUMENT);
}

struct async_result {
  atomic_int done;
  leader_status status;
  leader_lease *lease;
  char message[256];
};

static void acquired(leader_status status, leader_lease *lease, const char *message, void *user) {
  struct async_result *r = user;
  r->status = status;
  r->lease = lease;
  snprintf(r->message, sizeof r->message, "%s", message);
  atomic_store(&r->done, 1);
}

static void wait_done(struct async_result *r) {
  for (int i = 0; i < 500 && !atomic_load(&r->done); ++i) sleep_ms(10);
}

static void asynchronous(leader_store *store) {
  leader_elector *e = elector_on(store, 0, false, 0);
  struct async_result first = {0};
  CHECK(leader_acquire_async(e, "capi-async", NULL, acquired, &first) == LEADER_OK);
  wait_done(&first);
  CHECK(atomic_load(&first.done) && first.status == LEADER_OK && first.lease != NULL);
  struct async_result second = {0};
  CHECK(leader_acquire_async(e, "capi-async", NULL, acquired, &second) == LEADER_OK);
  wait_done(&second);
  CHECK(second.status == LEADER_NOT_ELECTED && second.lease == NULL);
  CHECK(strstr(second.message, "capi-async") != NULL);
  CHECK(leader_lease_release(first.lease, false) == LEADER_OK);
  /* A wait that is cancelled ends with LEADER_CANCELLED, the lock being held meanwhile. */
  leader_elector *waiter = elector_on(store, 10000, false, 0);
  leader_lease *held = NULL;
  CHECK(leader_acquire(e, "capi-async", NULL, &held) == LEADER_OK);
  leader_cancel *cancel = leader_cancel_new();
  struct async_result third = {0};
  CHECK(leader_acquire_async(waiter, "capi-async", cancel, acquired, &third) == LEADER_OK);
  sleep_ms(50);
  leader_cancel_request(cancel);
  wait_done(&third);
  CHECK(third.status == LEADER_CANCELLED && third.lease == NULL);
  leader_cancel_free(cancel);
  CHECK(leader_lease_release(held, false) == LEADER_OK);
  CHECK(leader_acquire_async(e, "capi-async", NULL, NULL, NULL) == LEADER_INVALID_ARGUMENT);
  leader_elector_free(waiter);
  leader_elector_free(e);
}

struct term {
  int started, stopped, changes;
  uint64_t token;
};

static void started(leader_context *ctx, void *user) {
  struct term *t = user;
  t->token = leader_context_fencing_token(ctx);
  t->started++;
}
static void stopped(void *user) { ((struct term *)user)->stopped++; }
static void changed(const leader_holder *holders, size_t count, void *user) {
  (void)holders;
  (void)count;
  ((struct term *)user)->changes++;
}

static void campaign(leader_store *store) {
  leader_elector *plain = elector_on(store, 0, false, 0);
  leader_campaign *c = NULL;
  CHECK(leader_campaign_start(plain, "capi-campaign", NULL, NULL, &c) == LEADER_INVALID_ARGUMENT);
  CHECK(strstr(leader_last_error(), "auto_extend") != NULL);
  leader_elector_free(plain);

  leader_elector *e = elector_on(store, 0, true, 0);
  struct term t = {0};
  leader_campaign_callbacks cb = {sizeof cb, started, stopped, changed, NULL, &t};
  leader_campaign_options co;
  leader_campaign_options_init(&co);
  co.retry_ms = 50;
  co.resign_hold_off_ms = 200;
  CHECK(leader_campaign_start(e, "capi-campaign", &cb, &co, &c) == LEADER_OK);
  for (int i = 0; i < 200 && !leader_campaign_is_leader(c); ++i) sleep_ms(10);
  CHECK(leader_campaign_is_leader(c) && t.started == 1 && t.token > 0);
  CHECK(leader_campaign_resign(c));
  for (int i = 0; i < 300 && t.started < 2; ++i) sleep_ms(10);
  CHECK(t.started == 2 && t.stopped >= 1);
  CHECK(leader_campaign_stop(c) == LEADER_OK);
  CHECK(t.stopped == 2 && t.changes >= 1);
  leader_elector_free(e);
}

int main(int argc, char **argv) {
  const char *uri = argc > 1 ? argv[1] : "memory:";
  errors();
  leader_store *store = NULL;
  if (leader_store_open(uri, &store) != LEADER_OK) {
    fprintf(stderr, "cannot open %s: %s\n", uri, leader_last_error());
    return 1;
  }
  run_once(store);
  contention_and_lease(store);
  cancellation(store);
  asynchronous(store);
  group(store);
  campaign(store);
  leader_store_close(store);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("capi_unit: every check held on %s\n", uri);
  return 0;
}
