/* A C11 consumer of the installed C interface: run once on the SQLite file argv[1], print the
 * fencing token. Built by scripts/ci-package.sh with CMake (find_package(leader COMPONENTS c))
 * and with pkg-config leader-c, both with -std=c11 -Wall -Wextra -Werror -pedantic. */
#include <leader/leader.h>
#include <stdio.h>
#include <string.h>

static int work(leader_context *ctx, void *user) {
  *(unsigned long long *)user = (unsigned long long)leader_context_fencing_token(ctx);
  return 0;
}

int main(int argc, char **argv) {
  char uri[512];
  snprintf(uri, sizeof uri, "sqlite://%s", argc > 1 ? argv[1] : "/tmp/leader-c-consumer.db");
  leader_store *store = NULL;
  leader_elector *elector = NULL;
  unsigned long long token = 0;
  if (leader_store_open(uri, &store) != LEADER_OK ||
      leader_elector_new(store, NULL, &elector) != LEADER_OK ||
      leader_run_if_leader(elector, "c-consumer", work, &token, NULL, NULL) != LEADER_OK) {
    fprintf(stderr, "c consumer: %s\n", leader_last_error());
    return 1;
  }
  printf("leader %s: ran with fencing token %llu\n", leader_version(), token);
  leader_elector_free(elector);
  leader_store_close(store);
  return token > 0 ? 0 : 1;
}
