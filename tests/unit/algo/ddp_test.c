/* FT-DDP over the simulated comm: exact averages, bucket boundaries,
 * failed and partial steps, identical replicas, misuse. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "algo_kit.h"
#include "testkit.h"

#define REPLICAS 3
#define MAX_N 1000
#define TIMEOUT_MS 10000

/* One FT-DDP run: every replica does `steps` steps of
 *   begin; grads = f(rank, step); sync_grads; commit; if commit: SGD. */
typedef struct ddp_run {
    sim *s;
    size_t n;
    size_t bucket_elems;
    int steps;
    float params[REPLICAS][MAX_N];
    float grads[REPLICAS][MAX_N]; /* the last step's averaged gradients */
    int commits[REPLICAS][8];
    int64_t final_step[REPLICAS];
    int rc[REPLICAS]; /* first failing call's code */
} ddp_run;

static float grad_value(int rank, int step, size_t i)
{
    return (float)(rank + 1) * 0.37f * (float)(i + 1) + 0.01f * (float)step;
}

static void ddp_replica(int rank, void *arg)
{
    ddp_run *run = arg;
    ftc_algo_comm comm = sim_comm(run->s, rank);
    ftc_ddp_opts opts;
    ftc_ddp_opts_init(&opts);
    opts.bucket_elems = run->bucket_elems;
    ftc_ddp *ddp = NULL;
    int rc = ftc_ddp_create(&comm, &opts, &ddp);
    float *p = run->params[rank];
    float *g = run->grads[rank];
    for (int step = 0; step < run->steps && rc == 0; step++) {
        rc = ftc_ddp_begin_step(ddp, tk_ms(TIMEOUT_MS));
        for (size_t i = 0; i < run->n; i++) {
            g[i] = grad_value(rank, step, i);
        }
        if (rc == 0) {
            rc = ftc_ddp_sync_grads(ddp, g, run->n, tk_ms(TIMEOUT_MS));
        }
        int commit = 0;
        if (rc == 0) {
            rc = ftc_ddp_commit(ddp, &commit, tk_ms(TIMEOUT_MS));
        }
        run->commits[rank][step] = commit;
        for (size_t i = 0; commit && i < run->n; i++) {
            p[i] = p[i] - 0.5f * g[i];
        }
    }
    run->rc[rank] = rc;
    run->final_step[rank] = comm.current_step(comm.ctx);
    ftc_ddp_destroy(ddp);
}

static ddp_run *new_run(size_t n, size_t bucket_elems, int steps)
{
    ddp_run *run = calloc(1, sizeof(*run));
    assert_non_null(run);
    run->s = sim_create(REPLICAS);
    assert_non_null(run->s);
    run->n = n;
    run->bucket_elems = bucket_elems;
    run->steps = steps;
    for (int r = 0; r < REPLICAS; r++) {
        for (size_t i = 0; i < n; i++) {
            run->params[r][i] = 1.0f + 0.25f * (float)i;
        }
    }
    return run;
}

static void free_run(ddp_run *run)
{
    assert_null(sim_error(run->s));
    sim_destroy(run->s);
    free(run);
}

static void assert_all_ok(const ddp_run *run)
{
    for (int r = 0; r < REPLICAS; r++) {
        if (run->rc[r] != 0) {
            fail_msg("replica %d failed with %s", r, ftc_err_name(run->rc[r]));
        }
    }
}

/* The average the manager would compute: summed in rank order over the
 * participants, divided by their number. */
static float expected_avg(int step, size_t i, int skip_rank)
{
    float acc = 0.0f;
    int participants = 0;
    for (int r = 0; r < REPLICAS; r++) {
        if (r != skip_rank) {
            acc += grad_value(r, step, i);
            participants++;
        }
    }
    return acc / (float)participants;
}

static void averages_are_exact_and_identical(void **state)
{
    (void)state;
    ddp_run *run = new_run(10, 4, 1);
    sim_run(run->s, ddp_replica, run);
    assert_all_ok(run);
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->commits[r][0], 1);
        assert_int_equal(run->final_step[r], 1);
        for (size_t i = 0; i < run->n; i++) {
            float want = expected_avg(0, i, -1);
            if (memcmp(&run->grads[r][i], &want, sizeof(float)) != 0) {
                fail_msg("replica %d grad %zu: %.9g, want %.9g", r, i,
                         (double)run->grads[r][i], (double)want);
            }
        }
        assert_memory_equal(run->params[r], run->params[0],
                            run->n * sizeof(float));
    }
    free_run(run);
}

/* Bucket layouts: each case's sizes must be what replica 0 issued. */
static void buckets_split_at_the_right_places(void **state)
{
    (void)state;
    static const struct {
        size_t n, bucket, nbuckets, first, last;
    } cases[] = {
        {10, 4, 3, 4, 2},     /* not a multiple: a short last bucket */
        {10, 5, 2, 5, 5},     /* exact multiple */
        {10, 16, 1, 10, 10},  /* bucket larger than the vector */
        {10, 10, 1, 10, 10},  /* bucket equal to the vector */
        {5, 1, 5, 1, 1},      /* one float per bucket */
        {0, 4, 0, 0, 0},      /* nothing to average */
        {1000, 7, 143, 7, 6}, /* more buckets than may be in flight */
        /* the default, 25 MiB */
        {MAX_N, FTC_ALGO_DEFAULT_BUCKET_ELEMS, 1, MAX_N, MAX_N},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ddp_run *run = new_run(cases[c].n, cases[c].bucket, 1);
        sim_run(run->s, ddp_replica, run);
        assert_all_ok(run);
        size_t sizes[200];
        size_t count = sim_issued(run->s, 0, sizes, 200);
        assert_int_equal(count, cases[c].nbuckets);
        if (count > 0) {
            assert_int_equal(sizes[0], cases[c].first);
            assert_int_equal(sizes[count - 1], cases[c].last);
        }
        size_t total = 0;
        for (size_t b = 0; b < count; b++) {
            total += sizes[b];
        }
        assert_int_equal(total, cases[c].n);
        for (int r = 0; r < REPLICAS; r++) {
            assert_int_equal(run->commits[r][0], 1);
            for (size_t i = 0; i < run->n; i++) {
                float want = expected_avg(0, i, -1);
                assert_memory_equal(&run->grads[r][i], &want, sizeof(float));
            }
        }
        free_run(run);
    }
}

/* Step 2's averages fail on every replica: nobody commits it, so the
 * parameters after it equal those before it, and the run continues. */
static void failed_step_leaves_parameters_unchanged(void **state)
{
    (void)state;
    ddp_run *ref = new_run(9, 4, 2);
    sim_run(ref->s, ddp_replica, ref); /* two good steps, for comparison */
    assert_all_ok(ref);

    ddp_run *run = new_run(9, 4, 3);
    sim_fail_allreduce_at(run->s, 2);
    sim_run(run->s, ddp_replica, run);
    assert_all_ok(run);
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->commits[r][0], 1);
        assert_int_equal(run->commits[r][1], 1);
        assert_int_equal(run->commits[r][2], 0);
        assert_int_equal(run->final_step[r], 2);
        assert_memory_equal(run->params[r], ref->params[r],
                            run->n * sizeof(float));
        assert_memory_equal(run->params[r], run->params[0],
                            run->n * sizeof(float));
    }
    free_run(ref);
    free_run(run);
}

/* A healing replica contributes zeros; the average is over the two
 * participants, and the healing replica receives it too. */
static void nonparticipant_contributes_zeros(void **state)
{
    (void)state;
    ddp_run *run = new_run(6, 4, 1);
    sim_nonparticipant_at(run->s, 2, 0);
    sim_run(run->s, ddp_replica, run);
    assert_all_ok(run);
    for (int r = 0; r < REPLICAS; r++) {
        assert_int_equal(run->commits[r][0], 1);
        for (size_t i = 0; i < run->n; i++) {
            float want = expected_avg(0, i, 2);
            assert_memory_equal(&run->grads[r][i], &want, sizeof(float));
        }
    }
    free_run(run);
}

static void misuse_is_reported(void **state)
{
    (void)state;
    sim *s = sim_create(1);
    ftc_algo_comm comm = sim_comm(s, 0);
    ftc_ddp *ddp = NULL;
    TK_OK(ftc_ddp_create(&comm, NULL, &ddp));
    float g[2] = {1, 2};
    int commit = 7;
    TK_EXPECT(ftc_ddp_sync_grads(ddp, g, 2, 1000), FTC_EMISUSE);
    TK_EXPECT(ftc_ddp_commit(ddp, &commit, 1000), FTC_EMISUSE);
    assert_int_equal(commit, 0);
    TK_OK(ftc_ddp_begin_step(ddp, 1000));
    TK_EXPECT(ftc_ddp_begin_step(ddp, 1000), FTC_EMISUSE);
    assert_non_null(strstr(ftc_last_error(), "already open"));
    TK_EXPECT(ftc_ddp_sync_grads(ddp, NULL, 2, 1000), FTC_EINVAL);
    TK_OK(ftc_ddp_sync_grads(ddp, NULL, 0, 1000));
    TK_EXPECT(ftc_ddp_commit(ddp, NULL, 1000), FTC_EINVAL);
    TK_OK(ftc_ddp_commit(ddp, &commit, 1000));
    assert_int_equal(commit, 1);
    ftc_ddp_destroy(ddp);
    ftc_ddp_destroy(NULL);
    TK_EXPECT(ftc_ddp_begin_step(NULL, 1000), FTC_EMISUSE);

    comm.wait = NULL;
    TK_EXPECT(ftc_ddp_create(&comm, NULL, &ddp), FTC_EINVAL);
    assert_null(ddp);
    assert_string_equal(ftc_last_error(), "comm->wait is NULL");
    TK_EXPECT(ftc_ddp_create(NULL, NULL, &ddp), FTC_EINVAL);
    TK_EXPECT(ftc_ddp_create(&comm, NULL, NULL), FTC_EINVAL);

    comm = sim_comm(s, 0);
    ftc_ddp_opts o;
    ftc_ddp_opts_init(&o);
    o.bucket_elems = 0; /* 0 is no longer the default */
    TK_EXPECT(ftc_ddp_create(&comm, &o, &ddp), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "bucket_elems 0"));
    ftc__alloc_fail_after(0);
    TK_EXPECT(ftc_ddp_create(&comm, NULL, &ddp), FTC_ENOMEM);
    ftc__alloc_fail_after(-1);
    assert_null(ddp);
    sim_destroy(s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(averages_are_exact_and_identical),
        cmocka_unit_test(buckets_split_at_the_right_places),
        cmocka_unit_test(failed_step_leaves_parameters_unchanged),
        cmocka_unit_test(nonparticipant_contributes_zeros),
        cmocka_unit_test(misuse_is_reported),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
