/* What an allreduce through the manager computes, with three replica
 * groups of one rank on three threads of one process (a lighthouse and a
 * store embedded): AVG divides by the participants, not by the replicas
 * in the process group; a replica that does not participate (a spare, or
 * one healing in this round) contributes zeros whatever its buffer holds,
 * and receives the result like the others. Values are exact: sums and
 * halves of small binary fractions. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lighthouse_kit.h"
#include "manager_kit.h"
#include "testkit.h"

#define N 4
#define GROUPS 3

/* What group k puts in: a spare's or a healer's 100s must never show. */
static const float in[GROUPS][N] = {
    {1.0f, 2.0f, -1.0f, 0.5f},
    {2.0f, 4.0f, -2.0f, 1.0f},
    {100.0f, 100.0f, 100.0f, 100.0f},
};
static const double in64[GROUPS][N] = {
    {0.25, -8.0, 3.0, 1e10},
    {0.75, -4.0, 5.0, 3e10},
    {100.0, 100.0, 100.0, 100.0},
};

typedef struct group {
    ftc_manager *m;
    float state[N]; /* registered: what a healer pulls */
    int steps;      /* rounds to run */
    int rc;
    char why[256];
    /* The last round's results and what the manager said of it. */
    float avg[N], sum[N];
    double avg64[N];
    bool participating, healing;
    int64_t participants, world, rank;
} group;

/* One allreduce of a copy of src (N elements of dtype) into out; the
 * first failure is kept in g->rc. */
static void reduce(group *g, const void *src, void *out, int dtype, int op)
{
    size_t bytes = N * (dtype == FTC_DTYPE_F32 ? sizeof(float) : 8);
    memcpy(out, src, bytes);
    ftc_tensor t = ftc_tensor_cpu(out, N, dtype);
    ftc_manager_work *w;
    int rc = ftc_manager_allreduce(g->m, &t, op, &w, FTC_TIMEOUT_DEFAULT);
    if (rc == 0) {
        rc = ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT);
        ftc_manager_work_release(w);
    }
    g->rc = g->rc != 0 ? g->rc : rc;
}

typedef struct job {
    mf_env *env;
    group g[GROUPS];
} job;

typedef struct ctx {
    group *g;
    int k;
} ctx;

/* Steps of group c->k: quorum, three allreduces of its inputs, vote. */
static void *train(void *arg)
{
    ctx *c = arg;
    group *g = c->g;
    for (int s = 0; g->rc == 0 && s < g->steps; s++) {
        int commit = 0;
        g->rc = ftc_manager_start_quorum(g->m, NULL);
        g->rc = g->rc != 0 ? g->rc
                           : ftc_manager_wait_quorum(g->m, FTC_TIMEOUT_DEFAULT);
        if (g->rc != 0) {
            break;
        }
        g->participating = ftc_manager_is_participating(g->m);
        g->healing = ftc_manager_is_healing(g->m);
        g->participants = ftc_manager_num_participants(g->m);
        g->world = ftc_manager_replica_world_size(g->m);
        g->rank = ftc_manager_replica_rank(g->m);
        reduce(g, in[c->k], g->avg, FTC_DTYPE_F32, FTC_OP_AVG);
        reduce(g, in[c->k], g->sum, FTC_DTYPE_F32, FTC_OP_SUM);
        reduce(g, in64[c->k], g->avg64, FTC_DTYPE_F64, FTC_OP_AVG);
        int rc = ftc_manager_should_commit(g->m, &commit, FTC_TIMEOUT_DEFAULT);
        g->rc = g->rc != 0 ? g->rc : rc != 0 ? rc : commit ? 0 : FTC_EPEER;
    }
    if (g->rc != 0) {
        snprintf(g->why, sizeof(g->why), "%s", ftc_last_error());
    }
    return NULL;
}

static job *job_new(bool spares)
{
    job *j = calloc(1, sizeof(*j));
    j->env = mf_env_new();
    for (int k = 0; k < GROUPS; k++) {
        group *g = &j->g[k];
        char id[16];
        snprintf(id, sizeof(id), "replica_%d", k);
        ftc_manager_opts o = mf_opts(j->env, id);
        if (spares) {
            o.world_size_mode = FTC_WORLD_FIXED_WITH_SPARES;
            o.min_replica_size = 2;
        }
        TK_OK(ftc_manager_create(&o, &g->m));
        for (int i = 0; i < N; i++) {
            g->state[i] = (float)(k * 10 + i);
        }
        int64_t shape[1] = {N};
        TK_OK(ftc_manager_register(g->m, "state", FTC_DTYPE_F32, shape, 1,
                                   g->state));
    }
    return j;
}

static void job_free(job *j)
{
    for (int k = 0; k < GROUPS; k++) {
        ftc_manager_destroy(j->g[k].m);
    }
    mf_env_free(j->env);
    free(j);
}

static void start(job *j, ctx *c, pthread_t *t, int k, int steps)
{
    j->g[k].steps = steps;
    c[k] = (ctx){&j->g[k], k};
    assert_int_equal(pthread_create(&t[k], NULL, train, &c[k]), 0);
}

/* Runs `steps` rounds on the groups [first, last] together. With lead >=
 * 0, that group starts first and the others once the lighthouse has it
 * waiting for the next quorum: the previous members alone would
 * otherwise form a fast quorum without it. */
static void run_groups(job *j, int first, int last, int steps, int lead)
{
    pthread_t t[GROUPS];
    ctx c[GROUPS];
    if (lead >= 0) {
        char id[256];
        TK_OK(ftc_manager_replica_id(j->g[lead].m, id, sizeof(id)));
        start(j, c, t, lead, steps);
        TK_WAIT_UNTIL(lt_is_participant(j->env->lh_addr, "default", id), 10000);
    }
    for (int k = first; k <= last; k++) {
        if (k != lead) {
            start(j, c, t, k, steps);
        }
    }
    for (int k = first; k <= last; k++) {
        pthread_join(t[k], NULL);
        if (j->g[k].rc != 0) {
            fail_msg("group %d: %s", k, j->g[k].why);
        }
    }
}

/* Every group received the participants' (groups 0 and 1) average and
 * sum: zeros from group 2, divided by 2 of the 3 in the process group. */
static void assert_results(const job *j)
{
    static const float avg[N] = {1.5f, 3.0f, -1.5f, 0.75f};
    static const float sum[N] = {3.0f, 6.0f, -3.0f, 1.5f};
    static const double avg64[N] = {0.5, -6.0, 4.0, 2e10};
    for (int k = 0; k < GROUPS; k++) {
        const group *g = &j->g[k];
        assert_memory_equal(g->avg, avg, sizeof(avg));
        assert_memory_equal(g->sum, sum, sizeof(sum));
        assert_memory_equal(g->avg64, avg64, sizeof(avg64));
        assert_int_equal(g->participants, 2);
        assert_int_equal(g->participating, k != 2);
    }
}

/* Fixed world size 2 with three up-to-date replicas: the third by
 * replica rank is a spare. */
static void avg_divides_by_participants_with_a_spare(void **state)
{
    (void)state;
    job *j = job_new(true);
    TK_OK(ftc_lighthouse_configure_job(j->env->lh, "default:min_replicas=3"));
    run_groups(j, 0, 2, 2, -1);
    assert_results(j);
    for (int k = 0; k < GROUPS; k++) {
        assert_int_equal(j->g[k].rank, k);
        assert_false(j->g[k].healing);
        assert_int_equal(ftc_manager_current_step(j->g[k].m), 2);
    }
    job_free(j);
}

/* Groups 0 and 1 train two steps alone; group 2 then joins at step 0: in
 * that round it heals (to step 2) and does not participate. */
static void healing_replica_contributes_zeros(void **state)
{
    (void)state;
    job *j = job_new(false);
    TK_OK(ftc_lighthouse_configure_job(j->env->lh, "default:min_replicas=2"));
    run_groups(j, 0, 1, 2, -1);
    TK_OK(ftc_lighthouse_configure_job(j->env->lh, "default:min_replicas=3"));
    run_groups(j, 0, 2, 1, 2);
    assert_results(j);
    assert_true(j->g[2].healing);
    assert_false(j->g[0].healing);
    for (int k = 0; k < GROUPS; k++) {
        assert_int_equal(j->g[k].world, 3);
        assert_int_equal(ftc_manager_current_step(j->g[k].m), 3);
    }
    /* It healed the registered state from the others. */
    assert_memory_equal(j->g[2].state, j->g[0].state, sizeof(j->g[0].state));
    job_free(j);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(avg_divides_by_participants_with_a_spare),
        cmocka_unit_test(healing_replica_contributes_zeros),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
