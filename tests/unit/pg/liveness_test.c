/* What a rank learns about its peers' liveness: a rank that is alive but
 * idle (not yet in the collective) answers the liveness probe, so a
 * timeout does not call it hung, and it hears its peer's failure without
 * calling into the group; a stopped rank is named as not answering. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "pg_kit.h"

static ftc_pg_op_opts op_timeout(int64_t ms)
{
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = ms;
    return o;
}

/* ---------------------------------------------------- idle but alive */

typedef struct idle_state {
    atomic_int timed_out; /* rank 0's allreduce has failed */
    char rank0_msg[512];
    char rank1_msg[512];
    int rank1_status;
} idle_state;

static int idle_case(ftc_pg *pg, void *arg)
{
    idle_state *s = arg;
    if (ftc_pg_rank(pg) == 1) {
        /* Calls nothing on the group until rank 0's collective failed,
         * then only asks for its status. */
        int64_t end = tk_now_ms() + tk_ms(20000);
        while (atomic_load(&s->timed_out) == 0 && tk_now_ms() < end) {
            tk_pause_ms(2);
        }
        while ((s->rank1_status = ftc_pg_status(pg)) == 0 &&
               tk_now_ms() < end) {
            tk_pause_ms(2);
        }
        snprintf(s->rank1_msg, sizeof(s->rank1_msg), "%s", ftc_last_error());
        return 0;
    }
    float x[4] = {1, 2, 3, 4};
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    ftc_pg_op_opts o = op_timeout(tk_ms(400));
    ftc_work *w;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, &o, &w);
    rc = rc == 0 ? ftc_work_wait(w, tk_ms(20000)) : rc;
    snprintf(s->rank0_msg, sizeof(s->rank0_msg), "%s", ftc_last_error());
    ftc_work_release(w);
    atomic_store(&s->timed_out, 1);
    return rc == FTC_ETIMEDOUT
               ? 0
               : ftc__seterr(FTC_EPROTO, "rank 0 got %s", ftc_err_name(rc));
}

static void idle_rank_answers_probes_and_hears_the_failure(void **state)
{
    (void)state;
    idle_state s = {0};
    pgt_run_threads(2, NULL, idle_case, &s);
    /* Rank 0 waited for rank 1, which answered the probe: alive, just
     * not there yet. */
    assert_non_null(strstr(s.rank0_msg, "timed out"));
    assert_non_null(strstr(s.rank0_msg, "waiting for rank 1"));
    assert_null(strstr(s.rank0_msg, "no answer"));
    /* Rank 1 heard rank 0's failure while idle. */
    assert_int_equal(s.rank1_status, FTC_ETIMEDOUT);
    assert_non_null(strstr(s.rank1_msg, "rank 0"));
}

/* ------------------------------------------------------------- stopped */

/* argv: the role, the store's address. Joins as rank 1, then stops
 * itself. */
static int stopped_member(int argc, char **argv)
{
    if (argc < 2) {
        return 2;
    }
    ftc_pg *pg;
    if (pgt_create(argv[1], "liveness/stopped", 1, 2, NULL, &pg) != 0) {
        return 1;
    }
    raise(SIGSTOP);
    ftc_pg_destroy(pg);
    return 0;
}

static void stopped_rank_is_named_by_the_probe(void **state)
{
    (void)state;
    const char *store = pgt_store();
    tk_child kid;
    char *args[] = {(char *)store, NULL};
    tk_spawn(&kid, "stopped", args, NULL);
    ftc_pg *pg;
    TK_OK(pgt_create(store, "liveness/stopped", 0, 2, NULL, &pg));
    float x[4] = {1, 2, 3, 4};
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    ftc_pg_op_opts o = op_timeout(tk_ms(400));
    ftc_work *w;
    TK_OK(ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, &o, &w));
    assert_int_equal(ftc_work_wait(w, tk_ms(20000)), FTC_ETIMEDOUT);
    const char *msg = ftc_last_error();
    assert_non_null(strstr(msg, "waiting for rank 1"));
    assert_non_null(
        strstr(msg, "no answer to a liveness probe (stopped or hung?) from "
                    "rank 1"));
    ftc_work_release(w);
    ftc_pg_destroy(pg);
    tk_signal(&kid, SIGKILL);
    tk_reap(&kid, 1, 5000);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"stopped", stopped_member}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_rank_answers_probes_and_hears_the_failure),
        cmocka_unit_test(stopped_rank_is_named_by_the_probe),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
