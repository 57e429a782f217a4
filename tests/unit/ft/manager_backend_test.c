/* The manager's cross-replica process group is built on the backend its
 * pg_opts name, at the first quorum and at every rebuild after a quorum
 * change, even after the caller's string is gone (the manager copies it).
 * Two replica groups of one rank on threads of one process, the "loop"
 * test backend (tests/unit/pg/loop), an embedded lighthouse and store. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/manager/manager.h"
#include "lighthouse_kit.h"
#include "manager_kit.h"
#include "pg/pg_int.h"
#include "testkit.h"

typedef struct replica {
    ftc_manager *m;
    int rc;
    int64_t world;
    char backend[FTC__PG_BACKEND_NAME_MAX];
} replica;

/* One quorum round; records the world size and the group's backend. */
static void *round_main(void *arg)
{
    replica *r = arg;
    r->rc = ftc_manager_start_quorum(r->m, NULL);
    if (r->rc == 0) {
        r->rc = ftc_manager_wait_quorum(r->m, FTC_TIMEOUT_DEFAULT);
    }
    int commit = 0;
    if (r->rc == 0) {
        r->rc = ftc_manager_should_commit(r->m, &commit, FTC_TIMEOUT_DEFAULT);
    }
    if (r->rc != 0) {
        fprintf(stderr, "round: %d: %s\n", r->rc, ftc_last_error());
        return NULL;
    }
    r->world = ftc_manager_replica_world_size(r->m);
    pthread_mutex_lock(&r->m->pg_mu);
    snprintf(r->backend, sizeof(r->backend), "%s",
             r->m->pg != NULL ? r->m->pg->backend : "(none)");
    pthread_mutex_unlock(&r->m->pg_mu);
    return NULL;
}

/* One round of rs[0..n-1]; the last one starts first and the others once
 * the lighthouse has it waiting: the previous members alone would
 * otherwise form a fast quorum without it. */
static void run(const mf_env *env, replica *rs, int n)
{
    pthread_t t[2];
    char id[256];
    TK_OK(ftc_manager_replica_id(rs[n - 1].m, id, sizeof(id)));
    assert_int_equal(pthread_create(&t[n - 1], NULL, round_main, &rs[n - 1]),
                     0);
    if (n > 1) {
        TK_WAIT_UNTIL(lt_is_participant(env->lh_addr, "default", id), 10000);
    }
    for (int i = 0; i < n - 1; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, round_main, &rs[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(rs[i].rc, 0);
        assert_string_equal(rs[i].backend, "loop");
    }
}

/* A manager whose pg_opts name "loop" in a string that changes after. */
static void make(const mf_env *env, replica *r, int i)
{
    char name[16] = "loop", id[16];
    snprintf(id, sizeof(id), "replica_%d", i);
    ftc_pg_opts po;
    ftc_pg_opts_init(&po);
    po.backend = name;
    ftc_manager_opts o = mf_opts(env, id);
    o.min_replica_size = 1;
    o.pg_opts = &po;
    TK_OK(ftc_manager_create(&o, &r->m));
    /* The caller's string changes: the manager must hold a copy. */
    memset(name, 'x', sizeof(name) - 1);
}

static void rebuilt_on_the_named_backend(void **state)
{
    (void)state;
    mf_env *env = mf_env_new();
    setenv("FTC_PG_LOOP_STORE", env->store_addr, 1);
    replica rs[2];
    memset(rs, 0, sizeof(rs));
    /* Replica 0 alone, then both: the quorum changes and the group is
     * rebuilt on "loop" each time. */
    make(env, &rs[0], 0);
    run(env, rs, 1);
    assert_int_equal(rs[0].world, 1);
    make(env, &rs[1], 1);
    run(env, rs, 2);
    assert_int_equal(rs[0].world, 2);
    assert_int_equal(rs[1].world, 2);
    for (int i = 0; i < 2; i++) {
        ftc_manager_destroy(rs[i].m);
    }
    mf_env_free(env);
}

/* A name longer than any backend's is refused at create. */
static void long_name_refused(void **state)
{
    (void)state;
    mf_env *env = mf_env_new();
    ftc_pg_opts po;
    ftc_pg_opts_init(&po);
    po.backend = "a_backend_name_of_forty_characters_long_";
    ftc_manager_opts o = mf_opts(env, "replica_long");
    o.pg_opts = &po;
    ftc_manager *m = NULL;
    assert_int_equal(ftc_manager_create(&o, &m), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "pg_opts.backend"));
    mf_env_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebuilt_on_the_named_backend),
        cmocka_unit_test(long_name_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
