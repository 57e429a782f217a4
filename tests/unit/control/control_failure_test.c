/* Control collectives when ranks are missing, late, restarted or busy with
 * other collectives: failures name the missing ranks within the timeout,
 * late arrivals get an error at once, and nothing leaks between groups. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ftc/ftc.h"
#include "control_kit.h"
#include "testkit.h"

typedef struct member {
    ftc_store_client *base;
    ftc_store_client *store;
    ftc_control *group;
    int rank;
    const char *key;
    int64_t timeout_ms;
    int rc;
    char err[512];
    int64_t took_ms;
} member;

static void join(member *m, const char *prefix, int rank, int world)
{
    memset(m, 0, sizeof(*m));
    m->rank = rank;
    TK_OK(ftc_store_client_connect(control_kit_addr(), NULL, &m->base));
    TK_OK(ftc_store_client_prefix(m->base, prefix, &m->store));
    ftc_control_opts o;
    ftc_control_opts_init(&o);
    o.generation = 0;
    TK_OK(ftc_control_create(m->store, rank, world, &o, &m->group, 5000));
}

static void *barrier_thread(void *arg)
{
    member *m = arg;
    int64_t t0 = tk_now_ms();
    m->rc = ftc_control_barrier(m->group, m->key, m->timeout_ms);
    m->took_ms = tk_now_ms() - t0;
    snprintf(m->err, sizeof(m->err), "%s", ftc_last_error());
    return NULL;
}

static void leave(member *m)
{
    ftc_control_destroy(m->group);
    ftc_store_client_close(m->store);
    ftc_store_client_close(m->base);
}

/* Ranks 0..2 of 4 enter a barrier; rank 3 never comes. Every one of them
 * fails within its timeout plus a margin, naming rank 3. */
static void missing_rank_fails_everyone_in_bound(void **state)
{
    (void)state;
    member m[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        join(&m[i], "missing", i, 4);
        m[i].key = "b";
        m[i].timeout_ms = 300;
        pthread_create(&t[i], NULL, barrier_thread, &m[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 3; i++) {
        if ((m[i].rc != FTC_ETIMEDOUT && m[i].rc != FTC_ECANCELED) ||
            strstr(m[i].err, "missing ranks 3") == NULL) {
            fail_msg("rank %d: %s %s", i, ftc_err_name(m[i].rc), m[i].err);
        }
        /* A rank that timed out waited its whole timeout; one woken by an
         * earlier rank's abandonment returns sooner. None waits long past
         * the timeout. */
        if (m[i].rc == FTC_ETIMEDOUT) {
            assert_true(m[i].took_ms >= 290);
        }
        assert_true(m[i].took_ms < 300 + tk_ms(1500));
        leave(&m[i]);
    }
}

/* Rank 3 arrives after the others gave up: it gets an error at once, not a
 * wait of its own timeout, and the error says who gave up. */
static void late_arrival_gets_error_not_hang(void **state)
{
    (void)state;
    member m[4];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        join(&m[i], "late", i, 4);
        m[i].key = "b";
        m[i].timeout_ms = 100;
        pthread_create(&t[i], NULL, barrier_thread, &m[i]);
    }
    /* The first to time out marks the barrier abandoned, which ends the
     * others' waits at once with that rank's reason. */
    int timed_out = 0;
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        timed_out += m[i].rc == FTC_ETIMEDOUT;
        if ((m[i].rc != FTC_ETIMEDOUT && m[i].rc != FTC_ECANCELED) ||
            strstr(m[i].err, "missing ranks 3") == NULL) {
            fail_msg("rank %d: %s %s", i, ftc_err_name(m[i].rc), m[i].err);
        }
    }
    assert_true(timed_out >= 1);
    join(&m[3], "late", 3, 4);
    m[3].key = "b";
    m[3].timeout_ms = tk_ms(10000);
    barrier_thread(&m[3]);
    if (m[3].rc != FTC_ECANCELED || strstr(m[3].err, "abandoned") == NULL ||
        strstr(m[3].err, "gave up") == NULL) {
        fail_msg("late rank: %s %s", ftc_err_name(m[3].rc), m[3].err);
    }
    assert_true(m[3].took_ms < tk_ms(2000));
    for (int i = 0; i < 4; i++) {
        leave(&m[i]);
    }
}

/* A barrier whose last rank arrives while the first has just timed out
 * ends the same way for everyone: the compare_set on last_members decides
 * once, so no rank succeeds while another is told it was abandoned
 * without a timeout of its own. Repeated to cover interleavings. */
static void outcome_is_decided_once(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "once%d", round);
        member m[2];
        pthread_t t[2];
        join(&m[0], prefix, 0, 2);
        join(&m[1], prefix, 1, 2);
        m[0].key = m[1].key = "b";
        m[0].timeout_ms = 20;
        m[1].timeout_ms = tk_ms(5000);
        pthread_create(&t[0], NULL, barrier_thread, &m[0]);
        /* Rank 1 starts somewhere around rank 0's timeout. */
        tk_pause_ms(round % 40);
        pthread_create(&t[1], NULL, barrier_thread, &m[1]);
        pthread_join(t[0], NULL);
        pthread_join(t[1], NULL);
        if (m[0].rc == 0) {
            assert_int_equal(m[1].rc, 0);
        } else {
            assert_int_equal(m[0].rc, FTC_ETIMEDOUT);
            assert_int_equal(m[1].rc, FTC_ECANCELED);
        }
        leave(&m[0]);
        leave(&m[1]);
    }
}

typedef struct getter {
    ftc_store_client *store;
    atomic_int started; /* set just before the get is sent */
    int rc;
    int64_t took_ms;
} getter;

static void *get_later_key(void *arg)
{
    getter *g = arg;
    void *v = NULL;
    size_t len = 0;
    int64_t t0 = tk_now_ms();
    atomic_store(&g->started, 1);
    g->rc =
        ftc_store_client_get(g->store, "later", &v, &len, FTC_TIMEOUT_DEFAULT);
    g->took_ms = tk_now_ms() - t0;
    ftc_free(v);
    return NULL;
}

/* A call's timeout is that call's alone: after a control call with a 30 ms
 * timeout, a default-timeout get on the same store still waits longer than
 * 30 ms (c10d's StoreTimeoutGuard would have left 30 ms behind). */
static void call_timeout_does_not_change_store_timeout(void **state)
{
    (void)state;
    member m;
    join(&m, "tmo", 0, 2);
    m.key = "b";
    m.timeout_ms = 30;
    barrier_thread(&m);
    assert_int_equal(m.rc, FTC_ETIMEDOUT);
    getter g = {.store = m.store};
    pthread_t t;
    pthread_create(&t, NULL, get_later_key, &g);
    /* The stimulus: the key appears well after 30 ms from the get's start
     * (waiting for the start keeps a slow thread start on a loaded host
     * from making the get find the key at once). */
    TK_WAIT_UNTIL(atomic_load(&g.started), 10000);
    tk_pause_ms(150);
    ftc_store_client *other = NULL;
    TK_OK(ftc_store_client_connect(control_kit_addr(), NULL, &other));
    TK_OK(ftc_store_client_set(other, "tmo/later", "v", 1, 1000));
    pthread_join(t, NULL);
    assert_int_equal(g.rc, 0);
    assert_true(g.took_ms >= 100);
    ftc_store_client_close(other);
    leave(&m);
}

typedef struct auto_rank {
    int rank;
    int world;
    int rc;
    char err[256];
    int64_t generation;
    int64_t sums[3];
} auto_rank;

/* Creates the group with an agreed generation (the default), then runs
 * three collectives with automatic keys. */
static void *auto_keys_rank(void *arg)
{
    auto_rank *a = arg;
    ftc_store_client *c = NULL;
    ftc_control *g = NULL;
    a->rc = ftc_store_client_connect(control_kit_addr(), NULL, &c);
    if (a->rc == 0) {
        a->rc = ftc_control_create(c, a->rank, a->world, NULL, &g, 5000);
    }
    if (a->rc == 0) {
        a->generation = ftc_control_generation(g);
        a->rc = ftc_control_barrier(g, NULL, 5000);
    }
    for (int i = 0; a->rc == 0 && i < 3; i++) {
        a->rc = ftc_control_all_sum(g, NULL, (a->rank + 1) * (i + 1),
                                    &a->sums[i], 5000);
    }
    snprintf(a->err, sizeof(a->err), "%s", ftc_last_error());
    ftc_control_destroy(g);
    ftc_store_client_close(c);
    return NULL;
}

static void run_auto_round(auto_rank *a, int world)
{
    pthread_t t[8];
    for (int i = 0; i < world; i++) {
        memset(&a[i], 0, sizeof(a[i]));
        a[i].rank = i;
        a[i].world = world;
        pthread_create(&t[i], NULL, auto_keys_rank, &a[i]);
    }
    for (int i = 0; i < world; i++) {
        pthread_join(t[i], NULL);
    }
}

/* Two successive instances of a group (say, before and after a restart of
 * the whole job) agree on generations 0 and 1 without anyone choosing keys,
 * and each instance's automatic keys are its own. */
static void automatic_keys_follow_generations(void **state)
{
    (void)state;
    auto_rank a[4];
    for (int gen = 0; gen < 2; gen++) {
        run_auto_round(a, 4);
        for (int i = 0; i < 4; i++) {
            if (a[i].rc != 0) {
                fail_msg("gen %d rank %d: %s", gen, i, a[i].err);
            }
            assert_int_equal(a[i].generation, gen);
            for (int k = 0; k < 3; k++) {
                assert_int_equal(a[i].sums[k], (1 + 2 + 3 + 4) * (k + 1));
            }
        }
    }
}

/* A member that restarts and tries to rejoin the generation it already
 * joined is refused, so it cannot consume the old instance's keys. */
static void restarted_member_cannot_rejoin_generation(void **state)
{
    (void)state;
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(control_kit_addr(), NULL, &c));
    ftc_control_opts o;
    ftc_control_opts_init(&o);
    o.auto_prefix = "rejoin";
    o.generation = 7;
    ftc_control *g1 = NULL, *g2 = NULL;
    TK_OK(ftc_control_create(c, 1, 2, &o, &g1, 5000));
    TK_EXPECT(ftc_control_create(c, 1, 2, &o, &g2, 5000), FTC_ESTALE);
    assert_null(g2);
    assert_non_null(strstr(ftc_last_error(), "already joined generation 7"));
    o.generation = 8;
    TK_OK(ftc_control_create(c, 1, 2, &o, &g2, 5000));
    ftc_control_destroy(g1);
    ftc_control_destroy(g2);
    ftc_store_client_close(c);
}

typedef struct stream {
    int rank;
    const char *prefix; /* the group */
    int64_t base;       /* what this group's values start from */
    int rc;
    char err[256];
} stream;

/* One rank's collectives on one group: 20 all_sums, each checked. */
static void *group_stream(void *arg)
{
    stream *x = arg;
    ftc_store_client *c = NULL, *v = NULL;
    ftc_control *g = NULL;
    x->rc = ftc_store_client_connect(control_kit_addr(), NULL, &c);
    if (x->rc == 0) {
        x->rc = ftc_store_client_prefix(c, x->prefix, &v);
    }
    if (x->rc == 0) {
        x->rc = ftc_control_create(v, x->rank, 3, NULL, &g, 5000);
    }
    for (int i = 0; x->rc == 0 && i < 20; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        int64_t sum = 0;
        x->rc = ftc_control_all_sum(g, key, x->base + i + x->rank, &sum, 5000);
        if (x->rc == 0 && sum != 3 * (x->base + i) + 3) {
            snprintf(x->err, sizeof(x->err), "round %d sum %lld", i,
                     (long long)sum);
            x->rc = -1000;
        }
    }
    if (x->rc != 0 && x->rc != -1000) {
        snprintf(x->err, sizeof(x->err), "%s", ftc_last_error());
    }
    ftc_control_destroy(g);
    ftc_store_client_close(v);
    ftc_store_client_close(c);
    return NULL;
}

/* Three ranks each run two groups' collectives at once, on two threads,
 * against one store with overlapping key names: every sum is its own
 * group's. */
static void groups_interleave_on_one_store(void **state)
{
    (void)state;
    stream x[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        memset(&x[i], 0, sizeof(x[i]));
        x[i].rank = i / 2;
        x[i].prefix = i % 2 ? "groupB" : "groupA";
        x[i].base = i % 2 ? 1000 : 0;
        pthread_create(&t[i], NULL, group_stream, &x[i]);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 6; i++) {
        if (x[i].rc != 0) {
            fail_msg("rank %d %s: %s", x[i].rank, x[i].prefix, x[i].err);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_rank_fails_everyone_in_bound),
        cmocka_unit_test(late_arrival_gets_error_not_hang),
        cmocka_unit_test(outcome_is_decided_once),
        cmocka_unit_test(call_timeout_does_not_change_store_timeout),
        cmocka_unit_test(automatic_keys_follow_generations),
        cmocka_unit_test(restarted_member_cannot_rejoin_generation),
        cmocka_unit_test(groups_interleave_on_one_store),
    };
    return tk_run_group(tests, control_kit_setup, control_kit_teardown);
}
