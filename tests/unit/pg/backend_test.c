/* Backend plugins (ftc/plugin/backend.h): the loop backend, built as a
 * module from the public headers only, runs real collectives between 2
 * and 3 members and gives the results pgt_check computes (as tcp does);
 * subgroups inherit it; and the loader's refusals: another ABI major, a
 * too small table, no entry symbol, no library, an unsupported dtype or
 * collective refused at the call. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/plugin/backend.h"
#include "pg_kit.h"

typedef struct member {
    int rank, n, rc;
    const char *name;
    pthread_t t;
} member;

static ftc_pg_opts loop_opts(void)
{
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = "loop";
    o.connect_timeout_ms = 30000;
    o.timeout_ms = 30000;
    return o;
}

static int collectives(ftc_pg *pg, int seed)
{
    int rc = pgt_check(pg, PGT_ALLREDUCE, FTC_DTYPE_F32, FTC_OP_SUM, 1000,
                       FTC_ALGO_AUTO, 0, seed);
    rc = rc ? rc
            : pgt_check(pg, PGT_ALLREDUCE, FTC_DTYPE_I64, FTC_OP_MAX, 77,
                        FTC_ALGO_AUTO, 0, seed + 1);
    rc = rc ? rc
            : pgt_check(pg, PGT_BROADCAST, FTC_DTYPE_F64, FTC_OP_SUM, 300,
                        FTC_ALGO_AUTO, ftc_pg_size(pg) - 1, seed + 2);
    rc = rc ? rc
            : pgt_check(pg, PGT_ALLGATHER, FTC_DTYPE_I32, FTC_OP_SUM, 50,
                        FTC_ALGO_AUTO, 0, seed + 3);
    rc = rc ? rc
            : pgt_check(pg, PGT_BARRIER, FTC_DTYPE_U8, FTC_OP_SUM, 0,
                        FTC_ALGO_AUTO, 0, seed);
    return rc;
}

static void *member_main(void *arg)
{
    member *m = arg;
    ftc_pg_opts o = loop_opts();
    ftc_pg *pg = NULL, *sub = NULL;
    m->rc = pgt_create(pgt_store(), m->name, m->rank, m->n, &o, &pg);
    if (m->rc == 0) {
        m->rc = collectives(pg, 11);
    }
    if (m->rc == 0 && m->n == 3) {
        /* Ranks {0, 1} and {2} of a tcp parent, on the loop backend named
         * by the split's opts: they meet over the parent (the first
         * member sends the id by the parent's send/recv). */
        ftc_pg *parent = NULL;
        ftc_pg_opts t = loop_opts();
        t.backend = "tcp";
        char name[64];
        snprintf(name, sizeof(name), "%s-tcp", m->name);
        m->rc = pgt_create(pgt_store(), name, m->rank, m->n, &t, &parent);
        if (m->rc == 0) {
            m->rc = ftc_pg_split(parent, m->rank / 2, m->rank, &o, &sub);
        }
        if (m->rc == 0) {
            m->rc = collectives(sub, 21);
        }
        ftc_pg_destroy(sub);
        ftc_pg_destroy(parent);
    }
    if (m->rc != 0) {
        print_message("rank %d: %s\n", m->rank, ftc_last_error());
    }
    ftc_pg_destroy(pg);
    return NULL;
}

static void run_members(int n, const char *name)
{
    member ms[3];
    for (int i = 0; i < n; i++) {
        ms[i] = (member){.rank = i, .n = n, .name = name};
        assert_int_equal(pthread_create(&ms[i].t, NULL, member_main, &ms[i]),
                         0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(ms[i].t, NULL);
        assert_int_equal(ms[i].rc, 0);
    }
}

static void loop_two_members(void **state)
{
    (void)state;
    run_members(2, "loop2");
}

static void loop_three_members_and_split(void **state)
{
    (void)state;
    run_members(3, "loop3");
}

/* A group of one on the loop backend. */
static ftc_pg *loop_single(const char *name)
{
    ftc_pg_opts o = loop_opts();
    ftc_pg *pg = NULL;
    assert_int_equal(pgt_create(pgt_store(), name, 0, 1, &o, &pg), 0);
    return pg;
}

static void unsupported_refused_at_the_call(void **state)
{
    (void)state;
    ftc_pg *pg = loop_single("loop-unsup");
    uint16_t h[4] = {0};
    ftc_tensor t = ftc_tensor_cpu(h, 4, FTC_DTYPE_F16);
    ftc_work *w = (ftc_work *)pg;
    assert_int_equal(ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w),
                     FTC_ENOTSUP);
    assert_null(w);
    const char *msg = ftc_last_error();
    assert_non_null(strstr(msg, "'loop'"));
    assert_non_null(strstr(msg, "allreduce"));
    assert_non_null(strstr(msg, "f16"));
    assert_non_null(strstr(msg, "sum"));
    float f[4] = {0};
    ftc_tensor ft = ftc_tensor_cpu(f, 4, FTC_DTYPE_F32);
    assert_int_equal(ftc_pg_allreduce(pg, &ft, &ft, FTC_OP_PROD, NULL, &w),
                     FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "prod"));
    assert_int_equal(ftc_pg_reduce_scatter(pg, &ft, &ft, FTC_OP_SUM, NULL, &w),
                     FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "reduce_scatter"));
    /* The group is still fine: refusals start nothing. */
    assert_int_equal(ftc_pg_status(pg), 0);
    assert_int_equal(ftc_pg_allreduce(pg, &ft, &ft, FTC_OP_SUM, NULL, &w), 0);
    assert_int_equal(pgt_wait(w), 0);
    ftc_pg_destroy(pg);
}

static void abort_fails_later_calls(void **state)
{
    (void)state;
    ftc_pg *pg = loop_single("loop-abort");
    ftc_pg_abort(pg);
    ftc_work *w = NULL;
    assert_int_equal(ftc_pg_barrier(pg, NULL, &w), FTC_ECANCELED);
    assert_int_equal(ftc_pg_status(pg), FTC_ECANCELED);
    /* The loop table has no failed_peers slot: it blames nobody. */
    int ranks[2] = {-1, -1};
    assert_int_equal(ftc_pg_failed_peers(pg, ranks, 2), 0);
    assert_int_equal(ranks[0], -1);
    ftc_pg_destroy(pg);
}

/* ftc_pg_create on backend name fails with FTC_ENOTSUP, nothing
 * published; the message holds every string in want. */
static void refused(const char *name, const char *const *want)
{
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = name;
    ftc_store_client *c = NULL;
    assert_int_equal(ftc_store_client_connect(pgt_store(), NULL, &c), 0);
    ftc_pg *pg = (ftc_pg *)c;
    assert_int_equal(ftc_pg_create(c, name, 0, 2, &o, &pg), FTC_ENOTSUP);
    assert_null(pg);
    const char *msg = ftc_last_error();
    for (int i = 0; want[i] != NULL; i++) {
        if (strstr(msg, want[i]) == NULL) {
            fail_msg("'%s' lacks '%s'", msg, want[i]);
        }
    }
    pgt_assert_unpublished(c, name);
    ftc_store_client_close(c);
}

static void refusals(void **state)
{
    (void)state;
    refused("loopmajor",
            (const char *const[]){"loopmajor", "ftc_pg_backend_entry",
                                  "ABI version 2.0", "needs ABI 1.x", NULL});
    refused("loopsmall", (const char *const[]){"struct_size 8",
                                               "libftc_pg_loopsmall", NULL});
    refused("loopnoentry", (const char *const[]){"ftc_pg_backend_entry",
                                                 "does not export it", NULL});
    refused("nosuch", (const char *const[]){"libftc_pg_nosuch.so",
                                            "ftc_pg_backend_entry", NULL});
}

int main(void)
{
    pgt_store(); /* first, from the main thread */
    setenv("FTC_PG_LOOP_STORE", pgt_store(), 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loop_two_members),
        cmocka_unit_test(loop_three_members_and_split),
        cmocka_unit_test(unsupported_refused_at_the_call),
        cmocka_unit_test(abort_fails_later_calls),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
