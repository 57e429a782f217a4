/* Healing through the manager in one process (a lighthouse and a store
 * embedded, two replica groups of one rank on two threads): the source
 * lends its registered buffers without a copy and its round ends when the
 * healer released them; with a lending bound shorter than the transfer it
 * copies its state instead; a state behind callbacks is saved and served
 * as a copy; either way the healer ends bit-identical. A state with
 * nothing registered heals too (metadata only). A healer that adopts
 * takes the source's layout as it comes. A replica restored from a
 * checkpoint is the one a fresh replica heals from. A state registered
 * lazily, by a prepare function, is prepared only in the rounds that read
 * it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/manager/manager.h"
#include "manager_kit.h"
#include "testkit.h"

#define NW ((size_t)3 << 20) /* floats in "w": 12 MiB, three chunks */
#define NM 1000              /* doubles in "m" */
#define STATE_BYTES (NW * sizeof(float) + NM * sizeof(double))

typedef struct group group;

/* A buffer of a group registered through callbacks. */
typedef struct cb_buf {
    group *g;
    void *p;
} cb_buf;

struct group {
    ftc_manager *m;
    float *w;
    double mom[NM];
    int steps; /* to run */
    int rc;
    char why[256];    /* the failure's message */
    pthread_t thread; /* its training thread */
    cb_buf cbs[2];
    int saves, loads;          /* callbacks run */
    bool saved_off, loaded_on; /* all off / on the training thread */
    /* Adopting (ftc_manager_set_adopt): calls, how many of the first to
     * fail, no-votes to tolerate, and what the last success received. */
    int adopts, adopt_failures, no_votes;
    bool adopted_on;
    size_t adopted_n;
    char adopted_names[2][8];
    int adopted_dtypes[2];
    int64_t adopted_dims[2];
    float *adopted_w;
    double adopted_m[NM];
    /* Preparing (ftc_manager_set_prepare): calls, how many of the first
     * to fail, whether all ran off the training thread, and the codes of
     * the manager calls it made. With hold, the first call waits until
     * the test checked the calls of other threads (released). */
    int prepares, prepare_failures, prepare_rc, set_prepare_rc;
    bool prepared_off, hold;
    atomic_bool preparing, released;
};

static int adopt(void *user, const ftc_manager_buffer_view *v, size_t n)
{
    group *g = user;
    g->adopted_on = g->adopted_on && pthread_equal(pthread_self(), g->thread);
    if (g->adopts++ < g->adopt_failures) {
        return 5;
    }
    g->adopted_n = n;
    for (size_t i = 0; i < n && i < 2; i++) {
        snprintf(g->adopted_names[i], sizeof(g->adopted_names[i]), "%s",
                 v[i].name);
        g->adopted_dtypes[i] = v[i].dtype;
        g->adopted_dims[i] = v[i].ndim == 1 ? v[i].shape[0] : -1;
    }
    if (n == 2 && v[0].nbytes == NW * sizeof(float) &&
        v[1].nbytes == sizeof(g->adopted_m)) {
        memcpy(g->adopted_w, v[0].data, v[0].nbytes);
        memcpy(g->adopted_m, v[1].data, v[1].nbytes);
    }
    return 0;
}

static int save(void *user, void *dst, size_t bytes)
{
    cb_buf *b = user;
    b->g->saves++;
    b->g->saved_off =
        b->g->saved_off && !pthread_equal(pthread_self(), b->g->thread);
    memcpy(dst, b->p, bytes);
    return 0;
}

static int load(void *user, const void *src, size_t bytes)
{
    cb_buf *b = user;
    b->g->loads++;
    b->g->loaded_on =
        b->g->loaded_on && pthread_equal(pthread_self(), b->g->thread);
    memcpy(b->p, src, bytes);
    return 0;
}

/* Registers the group's two buffers anew, as a state_dict would be. */
static int prepare(void *user)
{
    group *g = user;
    g->prepared_off =
        g->prepared_off && !pthread_equal(pthread_self(), g->thread);
    g->set_prepare_rc = ftc_manager_set_prepare(g->m, prepare, g);
    if (g->hold && g->prepares == 0) {
        atomic_store(&g->preparing, true);
        int64_t end = tk_now_ms() + tk_ms(20000);
        while (!atomic_load(&g->released) && tk_now_ms() < end) {
            tk_pause_ms(1);
        }
    }
    if (g->prepares++ < g->prepare_failures) {
        return -1;
    }
    int64_t sw[] = {(int64_t)NW}, sm[] = {NM};
    int rc = ftc_manager_clear_state(g->m);
    rc = rc != 0 ? rc
                 : ftc_manager_register(g->m, "w", FTC_DTYPE_F32, sw, 1, g->w);
    rc = rc != 0
             ? rc
             : ftc_manager_register(g->m, "m", FTC_DTYPE_F64, sm, 1, g->mom);
    g->prepare_rc = rc != 0 ? rc : g->prepare_rc;
    return rc;
}

typedef struct env {
    mf_env *job;
    group g[2];
} env;

static void group_state(group *g, float seed)
{
    for (size_t i = 0; i < NW; i++) {
        g->w[i] = seed + (float)(i % 977);
    }
    for (int i = 0; i < NM; i++) {
        g->mom[i] = (double)seed * 0.5 - i;
    }
}

/* How both groups register their state (PREPARED: by their prepare
 * function, and without init_sync, so that no round heals until a
 * replica is ahead). */
typedef enum how { BORROWED, CALLBACKS, NOTHING, PREPARED } how;

/* Two groups, registering their buffers as `reg` says. */
static env *env_new(int64_t lend_ms, how reg)
{
    bool cb = reg == CALLBACKS;
    env *e = calloc(1, sizeof(*e));
    e->job = mf_env_new();
    for (int k = 0; k < 2; k++) {
        group *g = &e->g[k];
        g->w = calloc(NW, sizeof(float));
        group_state(g, k == 0 ? 1.0f : -7.0f);
        char id[16];
        snprintf(id, sizeof(id), "replica_%d", k);
        ftc_manager_opts o = mf_opts(e->job, id);
        o.heal_lend_ms = lend_ms;
        o.skip_init_sync = reg == PREPARED;
        TK_OK(ftc_manager_create(&o, &g->m));
        int64_t sw[] = {(int64_t)NW}, sm[] = {NM};
        g->saved_off = g->loaded_on = true;
        g->cbs[0] = (cb_buf){g, g->w};
        g->cbs[1] = (cb_buf){g, g->mom};
        ftc_manager_state_cb cw = {save, load, &g->cbs[0]};
        ftc_manager_state_cb cm = {save, load, &g->cbs[1]};
        if (reg == PREPARED) {
            g->prepared_off = true;
            TK_OK(ftc_manager_set_prepare(g->m, prepare, g));
        }
        if (reg == NOTHING || reg == PREPARED) {
            continue;
        }
        TK_OK(cb ? ftc_manager_register_cb(g->m, "w", FTC_DTYPE_F32, sw, 1, &cw)
                 : ftc_manager_register(g->m, "w", FTC_DTYPE_F32, sw, 1, g->w));
        TK_OK(
            cb ? ftc_manager_register_cb(g->m, "m", FTC_DTYPE_F64, sm, 1, &cm)
               : ftc_manager_register(g->m, "m", FTC_DTYPE_F64, sm, 1, g->mom));
    }
    return e;
}

static void env_free(env *e)
{
    for (int k = 0; k < 2; k++) {
        ftc_manager_destroy(e->g[k].m);
        free(e->g[k].w);
    }
    mf_env_free(e->job);
    free(e);
}

/* Steps of a group: quorum (healing in place), the vote. */
static void *run_group(void *arg)
{
    group *g = arg;
    g->thread = pthread_self();
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    qo.heal_in_place = true;
    for (int s = 0; g->rc == 0 && s < g->steps; s++) {
        int commit = 0;
        g->rc = ftc_manager_start_quorum(g->m, &qo);
        g->rc = g->rc != 0 ? g->rc
                           : ftc_manager_wait_quorum(g->m, FTC_TIMEOUT_DEFAULT);
        g->rc = g->rc != 0 ? g->rc
                           : ftc_manager_should_commit(g->m, &commit,
                                                       FTC_TIMEOUT_DEFAULT);
        if (g->rc == 0 && !commit && g->no_votes > 0) {
            g->no_votes--;
            s--; /* the step again */
            continue;
        }
        g->rc = g->rc != 0 ? g->rc : (commit ? 0 : FTC_EPEER);
    }
    if (g->rc != 0) {
        snprintf(g->why, sizeof(g->why), "%s", ftc_last_error());
    }
    return NULL;
}

/* Both groups start their steps (min_replicas 2, so the first quorum
 * has both) on threads t. */
static void start_both(env *e, pthread_t *t)
{
    TK_OK(ftc_lighthouse_configure_job(e->job->lh, "default:min_replicas=2"));
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pthread_create(&t[k], NULL, run_group, &e->g[k]), 0);
    }
}

/* Waits for the steps start_both started; each must have succeeded. */
static void join_both(env *e, pthread_t *t)
{
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        if (e->g[k].rc != 0) {
            fail_msg("group %d: %s", k, e->g[k].why);
        }
    }
}

/* Both groups run their steps. */
static void run_both(env *e)
{
    pthread_t t[2];
    start_both(e, t);
    join_both(e, t);
}

/* Both groups run 2 steps: in the first, group 1 heals from group 0, the
 * primary (init_sync), receiving `bytes`. */
static void heal_one(env *e, uint64_t bytes)
{
    e->g[0].steps = e->g[1].steps = 2;
    run_both(e);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ftc_manager_current_step(e->g[k].m), 2);
    }
    if (bytes > 0) { /* else nothing registered: nothing to compare */
        assert_memory_equal(e->g[0].w, e->g[1].w, NW * sizeof(float));
        assert_memory_equal(e->g[0].mom, e->g[1].mom, sizeof(e->g[0].mom));
    }
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(e->g[1].m, &st));
    assert_int_equal(st.heals, 1);
    assert_int_equal(st.heal_bytes, bytes);
    assert_int_equal(st.last_heal_step, 0);
}

static void source_lends_without_a_copy(void **state)
{
    (void)state;
    env *e = env_new(tk_ms(20000), BORROWED);
    heal_one(e, STATE_BYTES);
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(e->g[0].m, &st));
    assert_int_equal(st.lends, 1);
    assert_int_equal(st.snapshots, 0);
    assert_true(st.last_lend_ms > 0);
    /* Every answer from the lent buffers had ended when the lending did:
     * none was cut (a reference held elsewhere would look like one). */
    ftc__heal_server_stats hs;
    ftc__heal_server_stats_get(e->g[0].m->heal_srv, &hs);
    assert_int_equal(hs.releases, 1);
    assert_int_equal(hs.cuts, 0);
    env_free(e);
}

/* A 1 ms lending cannot cover a 12 MiB transfer and its release: the
 * source copies its state and serves the copy; the heal still succeeds. */
static void lend_bound_falls_back_to_a_copy(void **state)
{
    (void)state;
    env *e = env_new(1, BORROWED);
    heal_one(e, STATE_BYTES);
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(e->g[0].m, &st));
    assert_int_equal(st.lends, 1);
    assert_int_equal(st.snapshots, 1);
    env_free(e);
}

/* With both buffers behind callbacks, the source saves them on its
 * quorum thread and publishes a copy (nothing is lent); the healer loads
 * them on its training thread, once each. */
static void callbacks_serve_a_copy(void **state)
{
    (void)state;
    env *e = env_new(tk_ms(20000), CALLBACKS);
    heal_one(e, STATE_BYTES);
    group *src = &e->g[0], *dst = &e->g[1];
    assert_int_equal(src->saves, 2);
    assert_true(src->saved_off);
    assert_int_equal(src->loads, 0);
    assert_int_equal(dst->loads, 2);
    assert_true(dst->loaded_on);
    assert_int_equal(dst->saves, 0);
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(src->m, &st));
    assert_int_equal(st.lends, 0);
    assert_int_equal(st.snapshots, 1);
    env_free(e);
}

/* Nothing registered: the healer still heals (the step, nothing else),
 * with nothing lent, saved or loaded. */
static void nothing_registered_heals(void **state)
{
    (void)state;
    env *e = env_new(tk_ms(20000), NOTHING);
    heal_one(e, 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(e->g[k].saves + e->g[k].loads, 0);
    }
    env_free(e);
}

/* The healer registered another layout (one int32 buffer) and adopts:
 * it receives the source's two buffers with their names, dtypes, shapes
 * and bytes on its training thread, and its own buffer is not written.
 * An adopt that fails first makes the step vote no and heals again. */
static void healer_adopts_the_source_layout(void **state)
{
    (void)state;
    for (int failures = 0; failures < 2; failures++) {
        env *e = env_new(tk_ms(20000), BORROWED);
        group *dst = &e->g[1];
        int32_t own[3] = {7, 8, 9};
        int64_t s3[] = {3};
        TK_OK(ftc_manager_clear_state(dst->m));
        TK_OK(ftc_manager_register(dst->m, "own", FTC_DTYPE_I32, s3, 1, own));
        TK_OK(ftc_manager_set_adopt(dst->m, adopt, dst));
        dst->adopted_w = calloc(NW, sizeof(float));
        dst->adopted_on = true;
        dst->adopt_failures = failures;
        dst->no_votes = failures;
        e->g[0].steps = 2 + failures;
        dst->steps = 2;
        run_both(e);
        assert_int_equal(dst->adopts, 1 + failures);
        assert_true(dst->adopted_on);
        assert_int_equal(dst->adopted_n, 2);
        assert_string_equal(dst->adopted_names[0], "w");
        assert_string_equal(dst->adopted_names[1], "m");
        assert_int_equal(dst->adopted_dtypes[0], FTC_DTYPE_F32);
        assert_int_equal(dst->adopted_dtypes[1], FTC_DTYPE_F64);
        assert_int_equal(dst->adopted_dims[0], (int64_t)NW);
        assert_int_equal(dst->adopted_dims[1], NM);
        assert_memory_equal(dst->adopted_w, e->g[0].w, NW * sizeof(float));
        assert_memory_equal(dst->adopted_m, e->g[0].mom,
                            sizeof(dst->adopted_m));
        assert_int_equal(own[0] + own[1] + own[2], 24);
        assert_true(dst->w[0] == -7.0f); /* no longer registered */
        ftc_manager_stats st;
        TK_OK(ftc_manager_stats_get(dst->m, &st));
        assert_int_equal(st.heals, 1);
        assert_int_equal(st.heal_bytes, STATE_BYTES);
        free(dst->adopted_w);
        env_free(e);
    }
}

/* A replica restored from a checkpoint (ftc_manager_set_step) is ahead
 * of a fresh one: the fresh one heals from it, whatever their order,
 * and both go on from the restored step and batches. */
static void restored_replica_is_the_source(void **state)
{
    (void)state;
    env *e = env_new(tk_ms(20000), BORROWED);
    group *restored = &e->g[1], *fresh = &e->g[0];
    TK_OK(ftc_manager_set_step(restored->m, 5, 40));
    assert_int_equal(ftc_manager_current_step(restored->m), 5);
    assert_int_equal(ftc_manager_batches_committed(restored->m), 40);
    fresh->steps = restored->steps = 2;
    run_both(e);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(ftc_manager_current_step(e->g[k].m), 7);
        /* the healing replica does not count in its first step */
        assert_int_equal(ftc_manager_batches_committed(e->g[k].m), 40 + 1 + 2);
    }
    assert_true(fresh->w[0] == -7.0f); /* the restored replica's state */
    assert_memory_equal(fresh->w, restored->w, NW * sizeof(float));
    assert_memory_equal(fresh->mom, restored->mom, sizeof(fresh->mom));
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(fresh->m, &st));
    assert_int_equal(st.heals, 1);
    assert_int_equal(st.last_heal_step, 5);
    TK_OK(ftc_manager_stats_get(restored->m, &st));
    assert_int_equal(st.heals, 0);
    env_free(e);
}

/* Not while a round is in flight or taken over and not voted on, not
 * negative; after the vote it holds for the next round. */
static void set_step_is_checked(void **state)
{
    (void)state;
    assert_int_equal(ftc_manager_set_step(NULL, 1, 1), FTC_EMISUSE);
    env *e = env_new(tk_ms(20000), NOTHING);
    ftc_manager *m = e->g[0].m;
    assert_int_equal(ftc_manager_set_step(m, -1, 0), FTC_EINVAL);
    assert_int_equal(ftc_manager_set_step(m, 0, -1), FTC_EINVAL);
    assert_int_equal(ftc_manager_current_step(m), 0);
    TK_OK(ftc_lighthouse_configure_job(e->job->lh, "default:min_replicas=1"));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    /* in flight (or finished and not taken over) */
    assert_int_equal(ftc_manager_set_step(m, 9, 9), FTC_EMISUSE);
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    /* taken over, not voted on */
    assert_int_equal(ftc_manager_set_step(m, 9, 9), FTC_EMISUSE);
    int commit = 0;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_true(commit);
    assert_int_equal(ftc_manager_current_step(m), 1);
    TK_OK(ftc_manager_set_step(m, 9, 90));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_true(commit);
    assert_int_equal(ftc_manager_current_step(m), 10);
    assert_int_equal(ftc_manager_batches_committed(m), 91);
    env_free(e);
}

/* Between steps only, and only on a manager. */
static void adopt_and_clear_are_checked(void **state)
{
    (void)state;
    assert_int_equal(ftc_manager_clear_state(NULL), FTC_EMISUSE);
    assert_int_equal(ftc_manager_set_adopt(NULL, adopt, NULL), FTC_EMISUSE);
    assert_int_equal(ftc_manager_set_prepare(NULL, prepare, NULL), FTC_EMISUSE);
    env *e = env_new(tk_ms(20000), BORROWED);
    TK_OK(ftc_manager_clear_state(e->g[0].m));
    /* the names are free again */
    int64_t sw[] = {(int64_t)NW};
    TK_OK(
        ftc_manager_register(e->g[0].m, "w", FTC_DTYPE_F32, sw, 1, e->g[0].w));
    TK_OK(ftc_manager_set_adopt(e->g[0].m, NULL, NULL));
    env_free(e);
}

/* Both groups register nothing up front, only a prepare function. They
 * run 3 steps in step: no round reads their state, so it is never
 * prepared. Then one is restored ahead and the other heals from it: the
 * source prepares its state once, on its quorum thread, and the healer
 * (healing into its registered buffers) prepares its own once; the
 * healer ends bit-identical. While the source's prepare function runs,
 * another thread still may not register, and nobody may set the prepare
 * function. A prepare that fails first refuses the healer, whose step
 * votes no; the next round heals. */
static void prepared_state_heals(void **state)
{
    (void)state;
    for (int failures = 0; failures < 2; failures++) {
        env *e = env_new(tk_ms(20000), PREPARED);
        group *src = &e->g[0], *dst = &e->g[1];
        src->steps = dst->steps = 3;
        run_both(e);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(e->g[k].prepares, 0);
            assert_int_equal(ftc_manager_current_step(e->g[k].m), 3);
        }

        TK_OK(ftc_manager_set_step(src->m, 10, 10));
        src->prepare_failures = failures;
        src->hold = failures == 0;
        src->steps = 2 + failures;
        dst->steps = 2;
        dst->no_votes = failures;
        pthread_t t[2];
        start_both(e, t);
        if (src->hold) {
            TK_WAIT_UNTIL(atomic_load(&src->preparing), 20000);
            int64_t s1[] = {1};
            TK_EXPECT(
                ftc_manager_register(src->m, "x", FTC_DTYPE_F32, s1, 1, src->w),
                FTC_EMISUSE);
            TK_EXPECT(ftc_manager_clear_state(src->m), FTC_EMISUSE);
            TK_EXPECT(ftc_manager_set_prepare(src->m, NULL, NULL), FTC_EMISUSE);
            atomic_store(&src->released, true);
        }
        join_both(e, t);
        assert_int_equal(src->prepares, 1 + failures);
        assert_int_equal(dst->prepares, 1 + failures);
        for (int k = 0; k < 2; k++) {
            assert_true(e->g[k].prepared_off);
            assert_int_equal(e->g[k].prepare_rc, 0);
            assert_int_equal(e->g[k].set_prepare_rc, FTC_EMISUSE);
            assert_int_equal(ftc_manager_current_step(e->g[k].m),
                             12 + failures);
        }
        assert_true(dst->w[0] == 1.0f); /* the source's state */
        assert_memory_equal(dst->w, src->w, NW * sizeof(float));
        assert_memory_equal(dst->mom, src->mom, sizeof(dst->mom));
        ftc_manager_stats st;
        TK_OK(ftc_manager_stats_get(dst->m, &st));
        assert_int_equal(st.heals, 1);
        assert_int_equal(st.heal_bytes, STATE_BYTES);
        env_free(e);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(source_lends_without_a_copy),
        cmocka_unit_test(lend_bound_falls_back_to_a_copy),
        cmocka_unit_test(callbacks_serve_a_copy),
        cmocka_unit_test(nothing_registered_heals),
        cmocka_unit_test(healer_adopts_the_source_layout),
        cmocka_unit_test(adopt_and_clear_are_checked),
        cmocka_unit_test(restored_replica_is_the_source),
        cmocka_unit_test(set_step_is_checked),
        cmocka_unit_test(prepared_state_heals),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
