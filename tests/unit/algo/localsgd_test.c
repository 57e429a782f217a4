/* LocalSGD over the simulated comm: periodic exact parameter averages,
 * failed synchronisations that keep local values, configuration errors. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "algo_kit.h"
#include "testkit.h"

#define REPLICAS 3
#define N 5
#define STEPS 7
#define SYNC_EVERY 3
#define TIMEOUT_MS 10000

/* Each replica: STEPS inner steps p -= 0.1 (rank+1) (i+1), then
 * ftc_localsgd_step; parameters recorded before and after each call. */
typedef struct sgd_run {
    sim *s;
    float before[REPLICAS][STEPS][N];
    float after[REPLICAS][STEPS][N];
    int outcome[REPLICAS][STEPS];
    int64_t final_step[REPLICAS];
    int rc[REPLICAS];
} sgd_run;

static void sgd_replica(int rank, void *arg)
{
    sgd_run *run = arg;
    ftc_algo_comm comm = sim_comm(run->s, rank);
    float p[N];
    for (int i = 0; i < N; i++) {
        p[i] = 2.0f - 0.3f * (float)i;
    }
    ftc_localsgd_opts opts;
    ftc_localsgd_opts_init(&opts);
    opts.sync_every = SYNC_EVERY;
    opts.bucket_elems = 2;
    ftc_localsgd *sgd = NULL;
    int rc = ftc_localsgd_create(&comm, p, N, &opts, &sgd);
    for (int t = 0; t < STEPS && rc == 0; t++) {
        for (int i = 0; i < N; i++) {
            p[i] = p[i] - 0.1f * (float)(rank + 1) * (float)(i + 1);
        }
        memcpy(run->before[rank][t], p, sizeof(p));
        rc = ftc_localsgd_step(sgd, &run->outcome[rank][t], tk_ms(TIMEOUT_MS));
        memcpy(run->after[rank][t], p, sizeof(p));
    }
    run->rc[rank] = rc;
    run->final_step[rank] = comm.current_step(comm.ctx);
    ftc_localsgd_destroy(sgd);
}

static sgd_run *run_replicas(int64_t fail_step)
{
    sgd_run *run = calloc(1, sizeof(*run));
    assert_non_null(run);
    run->s = sim_create(REPLICAS);
    if (fail_step >= 0) {
        sim_fail_allreduce_at(run->s, fail_step);
    }
    sim_run(run->s, sgd_replica, run);
    assert_null(sim_error(run->s));
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->rc[r], 0);
    }
    return run;
}

static void free_run(sgd_run *run)
{
    sim_destroy(run->s);
    free(run);
}

/* The exact average of the replicas' values before step t's call. */
static void expected_average(const sgd_run *run, int t, float *avg)
{
    for (int i = 0; i < N; i++) {
        float acc = 0.0f;
        for (int r = 0; r < REPLICAS; r++) {
            acc += run->before[r][t][i];
        }
        avg[i] = acc / (float)REPLICAS;
    }
}

static void syncs_average_every_sync_every_steps(void **state)
{
    (void)state;
    sgd_run *run = run_replicas(-1);
    static const int want[STEPS] = {0, 0, 1, 0, 0, 1, 0};
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->final_step[r], 2);
        for (int t = 0; t < STEPS; t++) {
            assert_int_equal(run->outcome[r][t], want[t]);
            if (want[t] == FTC_ALGO_LOCAL) {
                assert_memory_equal(run->after[r][t], run->before[r][t],
                                    sizeof(run->after[r][t]));
                continue;
            }
            float avg[N];
            expected_average(run, t, avg);
            assert_memory_equal(run->after[r][t], avg, sizeof(avg));
        }
    }
    /* Local steps differ per rank, so replicas differ again afterwards,
     * but every synchronisation leaves them bit-identical. */
    assert_memory_not_equal(run->before[0][1], run->before[1][1],
                            sizeof(run->before[0][1]));
    free_run(run);
}

static void failed_sync_keeps_local_parameters(void **state)
{
    (void)state;
    sgd_run *run = run_replicas(0);
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->outcome[r][2], FTC_ALGO_DISCARDED);
        assert_memory_equal(run->after[r][2], run->before[r][2],
                            sizeof(run->after[r][2]));
        assert_int_equal(run->outcome[r][5], FTC_ALGO_COMMITTED);
        float avg[N];
        expected_average(run, 5, avg);
        assert_memory_equal(run->after[r][5], avg, sizeof(avg));
        assert_int_equal(run->final_step[r], 1);
    }
    free_run(run);
}

/* A quorum error is returned and the next call tries the sync again; a
 * commit error is returned with the parameters left local. */
static void comm_errors_are_returned(void **state)
{
    (void)state;
    sim *s = sim_create(1);
    ftc_algo_comm comm = sim_comm(s, 0);
    float p[2] = {1, 2};
    ftc_localsgd_opts opts;
    ftc_localsgd_opts_init(&opts);
    opts.sync_every = 1;
    ftc_localsgd *sgd = NULL;
    TK_OK(ftc_localsgd_create(&comm, p, 2, &opts, &sgd));
    int outcome = -1;
    sim_fail_next_quorum(s, 0, FTC_ETIMEDOUT);
    TK_EXPECT(ftc_localsgd_step(sgd, &outcome, 1000), FTC_ETIMEDOUT);
    assert_non_null(strstr(ftc_last_error(), "start_quorum"));
    assert_int_equal(outcome, FTC_ALGO_LOCAL);
    TK_OK(ftc_localsgd_step(sgd, &outcome, 1000));
    assert_int_equal(outcome, FTC_ALGO_COMMITTED);
    sim_fail_next_commit(s, 0, FTC_EPEER);
    TK_EXPECT(ftc_localsgd_step(sgd, &outcome, 1000), FTC_EPEER);
    assert_int_equal(outcome, FTC_ALGO_DISCARDED);
    assert_int_equal(comm.current_step(comm.ctx), 1);
    assert_true(p[0] == 1.0f && p[1] == 2.0f);
    ftc_localsgd_destroy(sgd);
    sim_destroy(s);
}

static void bad_configuration_is_rejected(void **state)
{
    (void)state;
    sim *s = sim_create(1);
    ftc_algo_comm comm = sim_comm(s, 0);
    float p[3] = {0};
    ftc_localsgd *sgd = NULL;
    ftc_localsgd_opts opts;
    ftc_localsgd_opts_init(&opts);
    assert_int_equal(opts.sync_every, FTC_ALGO_DEFAULT_SYNC_EVERY);
    opts.sync_every = -1;
    TK_EXPECT(ftc_localsgd_create(&comm, p, 3, &opts, &sgd), FTC_EINVAL);
    assert_string_equal(ftc_last_error(), "sync_every -1 must be >= 1");
    assert_null(sgd);
    TK_EXPECT(ftc_localsgd_create(&comm, NULL, 3, NULL, &sgd), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "params"));
    TK_EXPECT(ftc_localsgd_create(&comm, p, 0, NULL, &sgd), FTC_EINVAL);
    comm.current_step = NULL;
    TK_EXPECT(ftc_localsgd_create(&comm, p, 3, NULL, &sgd), FTC_EINVAL);
    assert_string_equal(ftc_last_error(), "comm->current_step is NULL");
    comm = sim_comm(s, 0);
    for (long k = 0; k < 2; k++) {
        ftc__alloc_fail_after(k);
        TK_EXPECT(ftc_localsgd_create(&comm, p, 3, NULL, &sgd), FTC_ENOMEM);
        ftc__alloc_fail_after(-1);
        assert_null(sgd);
    }

    /* NULL opts: the default period of 100 steps. */
    TK_OK(ftc_localsgd_create(&comm, p, 3, NULL, &sgd));
    int outcome = -1;
    for (int t = 1; t < FTC_ALGO_DEFAULT_SYNC_EVERY; t++) {
        TK_OK(ftc_localsgd_step(sgd, &outcome, 1000));
        assert_int_equal(outcome, FTC_ALGO_LOCAL);
    }
    TK_OK(ftc_localsgd_step(sgd, &outcome, 1000));
    assert_int_equal(outcome, FTC_ALGO_COMMITTED);
    TK_EXPECT(ftc_localsgd_step(sgd, NULL, 1000), FTC_EINVAL);
    ftc_localsgd_destroy(sgd);
    ftc_localsgd_destroy(NULL);
    TK_EXPECT(ftc_localsgd_step(NULL, &outcome, 1000), FTC_EMISUSE);
    sim_destroy(s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(syncs_average_every_sync_every_steps),
        cmocka_unit_test(failed_sync_keeps_local_parameters),
        cmocka_unit_test(comm_errors_are_returned),
        cmocka_unit_test(bad_configuration_is_rejected),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
