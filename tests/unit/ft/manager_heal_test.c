/* Healing through the manager in one process (a lighthouse and a store
 * embedded, two replica groups of one rank on two threads): the source
 * lends its registered buffers without a copy and its round ends when the
 * healer released them; with a lending bound shorter than the transfer it
 * copies its state instead; a state behind callbacks is saved and served
 * as a copy; either way the healer ends bit-identical. A state with
 * nothing registered heals too (metadata only). */
#include <pthread.h>
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
};

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

/* How both groups register their state. */
typedef enum how { BORROWED, CALLBACKS, NOTHING } how;

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
        TK_OK(ftc_manager_create(&o, &g->m));
        int64_t sw[] = {(int64_t)NW}, sm[] = {NM};
        g->saved_off = g->loaded_on = true;
        g->cbs[0] = (cb_buf){g, g->w};
        g->cbs[1] = (cb_buf){g, g->mom};
        ftc_manager_state_cb cw = {save, load, &g->cbs[0]};
        ftc_manager_state_cb cm = {save, load, &g->cbs[1]};
        if (reg == NOTHING) {
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
        g->rc = g->rc != 0 ? g->rc : (commit ? 0 : FTC_EPEER);
    }
    if (g->rc != 0) {
        snprintf(g->why, sizeof(g->why), "%s", ftc_last_error());
    }
    return NULL;
}

/* Both groups run 2 steps (min_replicas 2, so the first quorum has both):
 * in the first, group 1 heals from group 0, the primary (init_sync),
 * receiving `bytes`. */
static void heal_one(env *e, uint64_t bytes)
{
    TK_OK(ftc_lighthouse_configure_job(e->job->lh, "default:min_replicas=2"));
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        e->g[k].steps = 2;
        assert_int_equal(pthread_create(&t[k], NULL, run_group, &e->g[k]), 0);
    }
    for (int k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        if (e->g[k].rc != 0) {
            fail_msg("group %d: %s", k, e->g[k].why);
        }
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(source_lends_without_a_copy),
        cmocka_unit_test(lend_bound_falls_back_to_a_copy),
        cmocka_unit_test(callbacks_serve_a_copy),
        cmocka_unit_test(nothing_registered_heals),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
