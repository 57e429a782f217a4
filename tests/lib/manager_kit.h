/* One process's job for the manager's tests: an embedded lighthouse and
 * store, and manager options that name them. */
#ifndef FTC_TEST_MANAGER_FIXTURE_H
#define FTC_TEST_MANAGER_FIXTURE_H

#include "ftc/ftc.h"

typedef struct mf_env {
    ftc_lighthouse *lh;
    ftc_store_server *store;
    char lh_addr[64], store_addr[64];
} mf_env;

/* Starts both on 127.0.0.1 (ephemeral ports); fails the test on error. */
mf_env *mf_env_new(void);
void mf_env_free(mf_env *e);
/* Defaults for replica id, the env's lighthouse and store, and 10 s
 * (scaled) quorum and call timeouts. */
ftc_manager_opts mf_opts(const mf_env *e, const char *id);
/* The leader (rank 0) of group "pair", two ranks under store prefix
 * "pair/0"; in *conn a connection to the env's store and in *view its
 * view with that prefix, through which a test writes rank 1's records by
 * hand (close the view, then the connection). */
ftc_manager *mf_pair_leader(const mf_env *e, ftc_store_client **conn,
                            ftc_store_client **view);

#endif
