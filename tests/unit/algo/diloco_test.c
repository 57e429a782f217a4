/* DiLoCo's contract beyond the regression fixtures: configuration errors,
 * fragment layout, healing buffers, comm errors and timeouts. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "algo_kit.h"
#include "testkit.h"

#define N 8

static void fill(float *p, size_t n, float base)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = base + 0.5f * (float)i;
    }
}

/* A one-replica simulation and its comm, for single-threaded tests. */
typedef struct solo {
    sim *s;
    ftc_algo_comm comm;
    float p[N];
} solo;

static solo solo_new(void)
{
    solo so;
    so.s = sim_create(1);
    assert_non_null(so.s);
    so.comm = sim_comm(so.s, 0);
    fill(so.p, N, 1.0f);
    return so;
}

static void solo_free(solo *so)
{
    assert_null(sim_error(so->s));
    sim_destroy(so->s);
}

/* Creation with opts must fail with FTC_EINVAL and this exact message. */
static void expect_rejected(solo *so, const ftc_diloco_opts *o, size_t n,
                            const char *message)
{
    ftc_diloco *dl = (ftc_diloco *)1;
    TK_EXPECT(ftc_diloco_create(&so->comm, so->p, n, o, &dl), FTC_EINVAL);
    assert_null(dl);
    assert_string_equal(ftc_last_error(), message);
}

static ftc_diloco_opts opts_with(int sync_every, size_t nfrag, int delay)
{
    ftc_diloco_opts o;
    ftc_diloco_opts_init(&o);
    o.sync_every = sync_every;
    o.n_fragments = nfrag;
    o.fragment_sync_delay = delay;
    return o;
}

static void schedule_constraints_are_enforced(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_diloco_opts o = opts_with(5, 2, 0);
    expect_rejected(&so, &o, N,
                    "sync_every 5 must be a multiple of the number of "
                    "fragments 2 (each fragment syncs once per sync_every "
                    "steps, one at a time)");
    o = opts_with(1, 2, 0);
    expect_rejected(&so, &o, N,
                    "sync_every 1 must be a multiple of the number of "
                    "fragments 2 (each fragment syncs once per sync_every "
                    "steps, one at a time)");
    o = opts_with(-3, 1, 0);
    expect_rejected(&so, &o, N, "sync_every -3 must be >= 1");
    o = opts_with(6, 2, 3);
    expect_rejected(&so, &o, N,
                    "fragment_sync_delay 3 must be in [0, 3): the "
                    "per-fragment period sync_every / n_fragments is 3 and "
                    "an average must finish before the next one starts");
    o = opts_with(6, 2, -1);
    expect_rejected(&so, &o, N,
                    "fragment_sync_delay -1 must be in [0, 3): the "
                    "per-fragment period sync_every / n_fragments is 3 and "
                    "an average must finish before the next one starts");
    const double bad_alpha[] = {-0.1, 1.5, NAN};
    const char *alpha_msg[] = {
        "fragment_update_alpha -0.1 must be in [0, 1]",
        "fragment_update_alpha 1.5 must be in [0, 1]",
        "fragment_update_alpha nan must be in [0, 1]",
    };
    for (int i = 0; i < 3; i++) {
        o = opts_with(6, 2, 0);
        o.fragment_update_alpha = bad_alpha[i];
        expect_rejected(&so, &o, N, alpha_msg[i]);
    }
    o = opts_with(6, 2, 0);
    o.outer_lr = -1;
    expect_rejected(&so, &o, N, "outer_lr -1 must be > 0 and finite");
    o.outer_lr = INFINITY;
    expect_rejected(&so, &o, N, "outer_lr inf must be > 0 and finite");
    o.outer_lr = 0.7;
    o.outer_momentum = 1.0;
    expect_rejected(&so, &o, N,
                    "outer_momentum 1 must be in (0, 1) for Nesterov "
                    "momentum");
    o.outer_momentum = -0.5;
    expect_rejected(&so, &o, N,
                    "outer_momentum -0.5 must be in (0, 1) for Nesterov "
                    "momentum");

    /* The limits themselves are accepted. */
    ftc_diloco *dl = NULL;
    o = opts_with(6, 2, 2);
    o.fragment_update_alpha = 1.0;
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    ftc_diloco_destroy(dl);
    o = opts_with(2, 2, 0);
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    ftc_diloco_destroy(dl);
    solo_free(&so);
}

static void fragment_ranges_are_checked(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_diloco_opts o = opts_with(4, 2, 0);
    ftc_algo_range outside[] = {{0, 4}, {6, 4}};
    o.fragments = outside;
    expect_rejected(&so, &o, N,
                    "fragment 1 [6, +4) is outside the parameter vector of "
                    "8 floats");
    ftc_algo_range wraps[] = {{0, 4}, {SIZE_MAX, 2}};
    o.fragments = wraps;
    expect_rejected(&so, &o, N,
                    "fragment 1 [18446744073709551615, +2) is outside the "
                    "parameter vector of 8 floats");
    ftc_algo_range overlap[] = {{4, 4}, {0, 5}};
    o.fragments = overlap;
    expect_rejected(&so, &o, N, "fragments 1 [0, +5) and 0 [4, +4) overlap");
    ftc_algo_range same[] = {{2, 1}, {2, 1}};
    o.fragments = same;
    expect_rejected(&so, &o, N, "fragments 0 [2, +1) and 1 [2, +1) overlap");
    ftc_algo_range empty[] = {{0, 0}, {1, 2}};
    o.fragments = empty;
    expect_rejected(&so, &o, N, "fragment 0 is empty");
    o.fragments = NULL;
    expect_rejected(&so, &o, 1,
                    "1 floats cannot be split into 2 non-empty fragments");
    expect_rejected(&so, &o, 0,
                    "params must be a non-empty array (params "
                    "set, n 0)");
    ftc_diloco *dl = NULL;
    TK_EXPECT(ftc_diloco_create(&so.comm, NULL, N, &o, &dl), FTC_EINVAL);
    TK_EXPECT(ftc_diloco_create(NULL, so.p, N, &o, &dl), FTC_EINVAL);
    assert_string_equal(ftc_last_error(), "comm is NULL");
    TK_EXPECT(ftc_diloco_create(&so.comm, so.p, N, &o, NULL), FTC_EINVAL);
    solo_free(&so);
}

/* Syncs one fragment per step (period 1) and returns the sizes issued. */
static void sync_sizes(solo *so, const ftc_diloco_opts *o, size_t n,
                       size_t *sizes)
{
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&so->comm, so->p, n, o, &dl));
    for (size_t f = 0; f < o->n_fragments; f++) {
        int outcome = -1;
        TK_OK(ftc_diloco_step(dl, &outcome, 1000));
        assert_int_equal(outcome, FTC_ALGO_COMMITTED);
        assert_int_equal(sim_issued(so->s, 0, &sizes[f], 1), 1);
    }
    ftc_diloco_destroy(dl);
}

static void fragments_are_synced_in_committed_step_order(void **state)
{
    (void)state;
    solo so = solo_new();
    size_t sizes[3];
    ftc_diloco_opts o = opts_with(3, 3, 0);
    sync_sizes(&so, &o, 7, sizes); /* even split of 7: 3, 2, 2 */
    assert_int_equal(sizes[0], 3);
    assert_int_equal(sizes[1], 2);
    assert_int_equal(sizes[2], 2);
    ftc_algo_range given[] = {{6, 1}, {0, 4}, {4, 2}};
    o.fragments = given;
    sync_sizes(&so, &o, 7, sizes); /* step 3, 4, 5: fragments 0, 1, 2 */
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 4);
    assert_int_equal(sizes[2], 2);
    solo_free(&so);
}

/* Elements outside every fragment keep whatever the inner steps did. */
static void elements_outside_fragments_are_never_synced(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_algo_range frags[] = {{0, 2}, {5, 2}};
    ftc_diloco_opts o = opts_with(2, 2, 0);
    o.fragments = frags;
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    for (int t = 0; t < 6; t++) {
        for (int i = 0; i < N; i++) {
            so.p[i] -= 0.25f;
        }
        float before[N];
        memcpy(before, so.p, sizeof(before));
        int outcome = -1;
        TK_OK(ftc_diloco_step(dl, &outcome, 1000));
        assert_int_equal(outcome, FTC_ALGO_COMMITTED);
        for (int i = 2; i < 5; i++) {
            assert_true(so.p[i] == before[i]);
        }
        assert_true(so.p[7] == before[7]);
        size_t f = (size_t)t % 2;
        assert_true(so.p[frags[f].offset] != before[frags[f].offset]);
    }
    ftc_diloco_destroy(dl);
    solo_free(&so);
}

static void healing_buffers_are_listed(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_diloco_opts o = opts_with(4, 2, 1);
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    const ftc_algo_buffer *bufs = NULL;
    size_t count = 0;
    TK_OK(ftc_diloco_buffers(dl, &bufs, &count));
    assert_int_equal(count, 2);
    assert_string_equal(bufs[0].name, "diloco.global");
    assert_string_equal(bufs[1].name, "diloco.outer_momentum");
    assert_int_equal(bufs[0].count, N);
    assert_int_equal(bufs[1].count, N);
    assert_memory_equal(bufs[0].data, so.p, sizeof(so.p));
    for (int i = 0; i < N; i++) {
        assert_true(bufs[1].data[i] == 0.0f);
    }
    TK_EXPECT(ftc_diloco_buffers(dl, NULL, &count), FTC_EINVAL);
    TK_EXPECT(ftc_diloco_buffers(NULL, &bufs, &count), FTC_EMISUSE);
    ftc_diloco_destroy(dl);
    solo_free(&so);
}

/* Quorum and commit errors are returned and abandon the sync: the
 * fragment is back at its global value and the next period works. */
static void comm_errors_abandon_the_sync(void **state)
{
    (void)state;
    solo so = solo_new();
    float initial[N];
    memcpy(initial, so.p, sizeof(initial));
    ftc_diloco_opts o = opts_with(2, 1, 0);
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    int outcome = -1;
    so.p[0] += 1.0f;
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    assert_int_equal(outcome, FTC_ALGO_LOCAL);
    sim_fail_next_quorum(so.s, 0, FTC_ETIMEDOUT);
    TK_EXPECT(ftc_diloco_step(dl, &outcome, 1000), FTC_ETIMEDOUT);
    assert_string_equal(ftc_last_error(),
                        "diloco: start_quorum: injected quorum failure");
    assert_int_equal(outcome, FTC_ALGO_DISCARDED);
    assert_memory_equal(so.p, initial, sizeof(initial));

    so.p[0] += 1.0f;
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    sim_fail_next_commit(so.s, 0, FTC_EPEER);
    TK_EXPECT(ftc_diloco_step(dl, &outcome, 1000), FTC_EPEER);
    assert_int_equal(outcome, FTC_ALGO_DISCARDED);
    assert_memory_equal(so.p, initial, sizeof(initial));
    assert_int_equal(so.comm.current_step(so.comm.ctx), 0);

    /* A failed average is no error: the sync is discarded. */
    sim_fail_allreduce_at(so.s, 0);
    so.p[0] += 1.0f;
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    assert_int_equal(outcome, FTC_ALGO_DISCARDED);
    assert_memory_equal(so.p, initial, sizeof(initial));

    so.p[0] += 1.0f;
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    assert_int_equal(outcome, FTC_ALGO_COMMITTED);
    assert_true(so.p[0] > initial[0]);
    assert_int_equal(so.comm.current_step(so.comm.ctx), 1);

    TK_EXPECT(ftc_diloco_step(dl, NULL, 1000), FTC_EINVAL);
    ftc_diloco_destroy(dl);
    TK_EXPECT(ftc_diloco_step(NULL, &outcome, 1000), FTC_EMISUSE);
    solo_free(&so);
}

/* Destroying with an average in flight releases it (wait, timeout 0). */
static void destroy_releases_an_average_in_flight(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_diloco_opts o = opts_with(4, 1, 2);
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&so.comm, so.p, N, &o, &dl));
    int outcome = -1;
    TK_OK(ftc_diloco_step(dl, &outcome, 1000));
    TK_OK(ftc_diloco_step(dl, &outcome, 1000)); /* issues the average */
    assert_int_equal(sim_issued(so.s, 0, NULL, 0), 1);
    ftc_diloco_destroy(dl); /* ASan reports a leaked work item */
    solo_free(&so);
}

/* A comm that records the timeouts it receives. */
typedef struct recorder {
    ftc_algo_comm inner;
    int64_t quorum_ms, wait_ms, commit_ms;
} recorder;

static int rec_quorum(void *ctx, int64_t t)
{
    recorder *r = ctx;
    r->quorum_ms = t;
    return r->inner.start_quorum(r->inner.ctx, t);
}
static int rec_avg(void *ctx, float *buf, size_t n, ftc_algo_work **out)
{
    recorder *r = ctx;
    return r->inner.allreduce_avg(r->inner.ctx, buf, n, out);
}
static int rec_wait(void *ctx, ftc_algo_work *w, int64_t t)
{
    recorder *r = ctx;
    r->wait_ms = t;
    return r->inner.wait(r->inner.ctx, w, t);
}
static int rec_commit(void *ctx, int ok, int *commit, int64_t t)
{
    recorder *r = ctx;
    r->commit_ms = t;
    return r->inner.should_commit(r->inner.ctx, ok, commit, t);
}
static int64_t rec_step(void *ctx)
{
    recorder *r = ctx;
    return r->inner.current_step(r->inner.ctx);
}

static void timeouts_reach_the_comm(void **state)
{
    (void)state;
    solo so = solo_new();
    recorder rec = {.inner = so.comm};
    ftc_algo_comm comm = {&rec,     rec_quorum, rec_avg,
                          rec_wait, rec_commit, rec_step};
    ftc_diloco_opts o = opts_with(1, 1, 0);
    ftc_diloco *dl = NULL;
    TK_OK(ftc_diloco_create(&comm, so.p, N, &o, &dl));
    int outcome = -1;
    TK_OK(ftc_diloco_step(dl, &outcome, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(rec.quorum_ms, FTC_TIMEOUT_DEFAULT);
    assert_int_equal(rec.wait_ms, FTC_TIMEOUT_DEFAULT);
    assert_int_equal(rec.commit_ms, FTC_TIMEOUT_DEFAULT);
    TK_OK(ftc_diloco_step(dl, &outcome, FTC_TIMEOUT_INFINITE));
    assert_int_equal(rec.quorum_ms, FTC_TIMEOUT_INFINITE);
    assert_int_equal(rec.wait_ms, FTC_TIMEOUT_INFINITE);
    assert_int_equal(rec.commit_ms, FTC_TIMEOUT_INFINITE);
    TK_OK(ftc_diloco_step(dl, &outcome, 5000));
    assert_true(rec.quorum_ms > 0 && rec.quorum_ms <= 5000);
    assert_true(rec.wait_ms >= 0 && rec.wait_ms <= rec.quorum_ms);
    assert_true(rec.commit_ms >= 0 && rec.commit_ms <= rec.wait_ms);
    ftc_diloco_destroy(dl);
    solo_free(&so);
}

static void allocation_failures_leave_nothing(void **state)
{
    (void)state;
    solo so = solo_new();
    ftc_algo_range frags[] = {{4, 4}, {0, 4}};
    ftc_diloco_opts o = opts_with(4, 2, 1);
    o.fragments = frags;
    ftc_diloco *dl = NULL;
    long k = 0;
    for (;; k++) {
        ftc__alloc_fail_after(k);
        int rc = ftc_diloco_create(&so.comm, so.p, N, &o, &dl);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            break;
        }
        assert_int_equal(rc, FTC_ENOMEM);
        assert_null(dl);
    }
    assert_true(k >= 6); /* handle, sort, table and four buffers */
    ftc_diloco_destroy(dl);
    solo_free(&so);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schedule_constraints_are_enforced),
        cmocka_unit_test(fragment_ranges_are_checked),
        cmocka_unit_test(fragments_are_synced_in_committed_step_order),
        cmocka_unit_test(elements_outside_fragments_are_never_synced),
        cmocka_unit_test(healing_buffers_are_listed),
        cmocka_unit_test(comm_errors_abandon_the_sync),
        cmocka_unit_test(destroy_releases_an_average_in_flight),
        cmocka_unit_test(timeouts_reach_the_comm),
        cmocka_unit_test(allocation_failures_leave_nothing),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
