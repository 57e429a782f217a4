/* Who a failed group holds responsible (ftc_pg_failed_peers), and who a
 * failed ftc_pg_create does (ftc_pg_create_failed_peers). Groups of 3:
 * ranks 0 and 1 are threads of this test, rank 2 a child that stops,
 * dies, aborts on purpose, or stays idle; creates that some rank never
 * joins; an ABORT whose list of blamed ranks is malformed (2 threads);
 * an ABORT that blames a peer the receiver's own probe heard from (3
 * threads). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <unistd.h>

#include "engine_hold.h"
#include "pg/tcp/tcp_int.h"
#include "pg_kit.h"

/* Every wait of this test is bounded by this much. */
#define BOUND_MS 20000

/* ------------------------------------------------------------- rank 2 */

/* Waits (bounded) until the store has key. */
static int await_key(ftc_store_client *c, const char *key)
{
    const char *keys[] = {key};
    return ftc_store_client_wait(c, keys, 1, tk_ms(BOUND_MS));
}

/* argv: the role, the store's address, the group's prefix, what to do:
 * "stop" (stop itself once in the group), "recv" (wait in a receive that
 * never comes, until killed), "abort" (ftc_pg_abort once <prefix>/go is
 * set), "idle" (call nothing on the group). Every mode but the first two
 * destroys the group once <prefix>/done is set. */
static int third_rank(int argc, char **argv)
{
    if (argc < 4) {
        return 2;
    }
    const char *store = argv[1], *prefix = argv[2], *mode = argv[3];
    ftc_store_client *c = NULL;
    ftc_pg *pg = NULL;
    if (ftc_store_client_connect(store, NULL, &c) != 0 ||
        ftc_pg_create(c, prefix, 2, 3, NULL, &pg) != 0) {
        ftc_store_client_close(c);
        return 3;
    }
    char go[256], done[256];
    snprintf(go, sizeof(go), "%s/go", prefix);
    snprintf(done, sizeof(done), "%s/done", prefix);
    int rc = 0;
    if (strcmp(mode, "stop") == 0) {
        raise(SIGSTOP);
    } else if (strcmp(mode, "recv") == 0) {
        uint8_t b[4];
        ftc_tensor t = ftc_tensor_cpu(b, sizeof(b), FTC_DTYPE_U8);
        ftc_pg_op_opts o;
        ftc_pg_op_opts_init(&o);
        o.timeout_ms = tk_ms(BOUND_MS);
        ftc_work *w = NULL;
        rc = ftc_pg_recv(pg, &t, 0, 7, &o, &w) == 0 ? pgt_wait(w) : 4;
    } else if (strcmp(mode, "abort") == 0) {
        rc = await_key(c, go);
        ftc_pg_abort(pg);
        rc = rc != 0 ? rc : await_key(c, done);
    } else {
        rc = await_key(c, done);
    }
    ftc_pg_destroy(pg);
    ftc_store_client_close(c);
    return rc == 0 ? 0 : 5;
}

/* Whether process pid is stopped (state T in /proc/<pid>/stat). */
static bool is_stopped(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    buf[n] = '\0';
    const char *end = strrchr(buf, ')');
    return end != NULL && end[1] == ' ' && end[2] == 'T';
}

static void set_key(const char *prefix, const char *name)
{
    ftc_store_client *c = NULL;
    char key[256];
    snprintf(key, sizeof(key), "%s/%s", prefix, name);
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    TK_OK(ftc_store_client_set(c, key, "1", 1, tk_ms(5000)));
    ftc_store_client_close(c);
}

/* --------------------------------------------------- ranks 0 and 1 */

typedef struct outcome {
    int create_rc;
    int rc;       /* the allreduce's */
    int n;        /* ftc_pg_failed_peers, cap 4 */
    int peers[4]; /* what it wrote; -1 beyond */
    int n_null;   /* ftc_pg_failed_peers(pg, NULL, 0) */
    char msg[512];
} outcome;

typedef struct duo {
    const char *prefix;
    int64_t timeout_ms;  /* of the allreduce */
    atomic_int created;  /* ranks whose create succeeded */
    atomic_int go;       /* the test lets them start the allreduce */
    atomic_int started;  /* ranks whose allreduce was submitted */
    atomic_int finished; /* ranks done (whatever happened) */
    outcome out[2];
} duo;

typedef struct duo_member {
    pthread_t t;
    duo *d;
    int rank;
} duo_member;

static void *duo_main(void *arg)
{
    duo_member *m = arg;
    duo *d = m->d;
    outcome *o = &d->out[m->rank];
    memset(o->peers, -1, sizeof(o->peers));
    ftc_pg *pg = NULL;
    o->create_rc = pgt_create(pgt_store(), d->prefix, m->rank, 3, NULL, &pg);
    if (o->create_rc != 0) {
        snprintf(o->msg, sizeof(o->msg), "%s", ftc_last_error());
        atomic_fetch_add(&d->finished, 1);
        return NULL;
    }
    atomic_fetch_add(&d->created, 1);
    int64_t end = tk_now_ms() + tk_ms(BOUND_MS);
    while (atomic_load(&d->go) == 0 && tk_now_ms() < end) {
        tk_pause_ms(2);
    }
    float x[4] = {1, 2, 3, 4};
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    ftc_pg_op_opts opts;
    ftc_pg_op_opts_init(&opts);
    opts.timeout_ms = d->timeout_ms;
    ftc_work *w = NULL;
    o->rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, &opts, &w);
    atomic_fetch_add(&d->started, 1);
    o->rc = o->rc != 0 ? o->rc : ftc_work_wait(w, tk_ms(BOUND_MS));
    snprintf(o->msg, sizeof(o->msg), "%s", ftc_last_error());
    ftc_work_release(w);
    o->n = ftc_pg_failed_peers(pg, o->peers, 4);
    o->n_null = ftc_pg_failed_peers(pg, NULL, 0);
    ftc_pg_destroy(pg);
    atomic_fetch_add(&d->finished, 1);
    return NULL;
}

/* Rank 2 in mode `mode` as a child, ranks 0 and 1 as threads. */
typedef struct trio {
    duo d;
    duo_member m[2];
    tk_child kid;
} trio;

static void trio_start(trio *s, const char *prefix, const char *mode,
                       int64_t timeout_ms)
{
    const char *store = pgt_store();
    s->d.prefix = prefix;
    s->d.timeout_ms = tk_ms(timeout_ms);
    char *args[] = {(char *)store, (char *)prefix, (char *)mode, NULL};
    tk_spawn(&s->kid, "third", args, NULL);
    for (int r = 0; r < 2; r++) {
        s->m[r] = (duo_member){.d = &s->d, .rank = r};
        assert_int_equal(pthread_create(&s->m[r].t, NULL, duo_main, &s->m[r]),
                         0);
    }
    TK_WAIT_UNTIL(atomic_load(&s->d.created) == 2 ||
                      atomic_load(&s->d.finished) > 0,
                  BOUND_MS);
}

static void trio_join(trio *s)
{
    for (int r = 0; r < 2; r++) {
        pthread_join(s->m[r].t, NULL);
    }
    for (int r = 0; r < 2; r++) {
        if (s->d.out[r].create_rc != 0) {
            fail_msg("rank %d: create: %s", r, s->d.out[r].msg);
        }
    }
}

/* Both ranks failed with want and blame exactly rank 2 (blamed) or
 * nobody. */
static void assert_blamed(const trio *s, int want, bool blamed)
{
    for (int r = 0; r < 2; r++) {
        const outcome *o = &s->d.out[r];
        if (o->rc != want) {
            fail_msg("rank %d: %s, expected %s: %s", r, ftc_err_name(o->rc),
                     ftc_err_name(want), o->msg);
        }
        assert_int_equal(o->n, blamed ? 1 : 0);
        assert_int_equal(o->n_null, o->n);
        assert_int_equal(o->peers[0], blamed ? 2 : -1);
        assert_int_equal(o->peers[1], -1);
    }
}

/* (a) Rank 2 stops: the probe gets no answer from it, and both ranks
 * blame it alone, whichever timed out first. */
static void stopped_rank_is_blamed(void **state)
{
    (void)state;
    trio s = {0};
    trio_start(&s, "blame/stopped", "stop", 400);
    TK_WAIT_UNTIL(is_stopped(s.kid.pid), BOUND_MS);
    atomic_store(&s.d.go, 1);
    trio_join(&s);
    assert_blamed(&s, FTC_ETIMEDOUT, true);
    assert_non_null(strstr(s.d.out[0].msg, "timed out"));
    tk_signal(&s.kid, SIGKILL);
    tk_reap(&s.kid, 1, 5000);
}

/* (b) Rank 2 is killed while it waits in a receive and ranks 0 and 1 in
 * an allreduce: its connections close without BYE. */
static void killed_rank_is_blamed(void **state)
{
    (void)state;
    trio s = {0};
    trio_start(&s, "blame/killed", "recv", 10000);
    atomic_store(&s.d.go, 1);
    TK_WAIT_UNTIL(atomic_load(&s.d.started) == 2, BOUND_MS);
    tk_signal(&s.kid, SIGKILL);
    trio_join(&s);
    assert_blamed(&s, FTC_EPEER, true);
    tk_reap(&s.kid, 1, 5000);
    assert_int_equal(tk_exit_code(&s.kid), 128 + SIGKILL);
}

/* (c) Rank 2 aborts on purpose while ranks 0 and 1 wait for it: they
 * fail, and nobody is to blame. */
static void abort_on_purpose_blames_nobody(void **state)
{
    (void)state;
    trio s = {0};
    trio_start(&s, "blame/abort", "abort", 10000);
    atomic_store(&s.d.go, 1);
    TK_WAIT_UNTIL(atomic_load(&s.d.started) == 2, BOUND_MS);
    set_key("blame/abort", "go");
    trio_join(&s);
    assert_blamed(&s, FTC_EPEER, false);
    assert_non_null(strstr(s.d.out[0].msg, "ftc_pg_abort"));
    set_key("blame/abort", "done");
    tk_reap(&s.kid, 1, 5000);
    assert_int_equal(tk_exit_code(&s.kid), 0);
}

/* (d) Rank 2 is alive but never calls the allreduce: ranks 0 and 1 time
 * out waiting for it, but it answers the probe: slow, not cut off. */
static void slow_rank_is_not_blamed(void **state)
{
    (void)state;
    trio s = {0};
    trio_start(&s, "blame/idle", "idle", 400);
    atomic_store(&s.d.go, 1);
    trio_join(&s);
    assert_blamed(&s, FTC_ETIMEDOUT, false);
    for (int r = 0; r < 2; r++) {
        assert_null(strstr(s.d.out[r].msg, "no answer"));
    }
    set_key("blame/idle", "done");
    tk_reap(&s.kid, 1, 5000);
    assert_int_equal(tk_exit_code(&s.kid), 0);
}

/* ------------------------------------------------------------ creates */

typedef struct creator {
    pthread_t t;
    int rank, size;
    const char *prefix;
    const char *again; /* then a create under this prefix (NULL: none) */
    int rc, again_rc;
    int n;        /* ftc_pg_create_failed_peers after the first create */
    int peers[4]; /* its ranks; -7 beyond */
    int n_null;   /* the same with NULL, 0 */
    int n_cap1;   /* cap 1: only peers1[0] may change */
    int peers1[2];
    int inval[2]; /* cap -1; NULL with cap 1 */
    int n_again;  /* after the second create */
    int healthy;  /* ftc_pg_failed_peers of the second group */
    char msg[512];
} creator;

static void *creator_main(void *arg)
{
    creator *c = arg;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.connect_timeout_ms = tk_ms(1000);
    ftc_pg *pg = NULL;
    if (c->prefix != NULL) {
        c->rc = pgt_create(pgt_store(), c->prefix, c->rank, c->size, &o, &pg);
        snprintf(c->msg, sizeof(c->msg), "%s", ftc_last_error());
        ftc_pg_destroy(pg);
        for (int i = 0; i < 4; i++) {
            c->peers[i] = -7;
        }
        c->peers1[0] = c->peers1[1] = -7;
        c->n = ftc_pg_create_failed_peers(c->peers, 4);
        c->n_null = ftc_pg_create_failed_peers(NULL, 0);
        c->n_cap1 = ftc_pg_create_failed_peers(c->peers1, 1);
        c->inval[0] = ftc_pg_create_failed_peers(c->peers1, -1);
        c->inval[1] = ftc_pg_create_failed_peers(NULL, 1);
    }
    if (c->again != NULL) {
        pg = NULL;
        c->again_rc = pgt_create(pgt_store(), c->again, c->rank, 3, NULL, &pg);
        c->n_again = ftc_pg_create_failed_peers(NULL, 0);
        int buf[4];
        c->healthy = pg != NULL ? ftc_pg_failed_peers(pg, buf, 4) : -1;
        ftc_pg_destroy(pg);
    }
    return NULL;
}

/* Runs creators[0..n) and joins them. */
static void run_creators(creator *cs, int n)
{
    pgt_store(); /* started here, before any thread asks for it */
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_create(&cs[i].t, NULL, creator_main, &cs[i]),
                         0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(cs[i].t, NULL);
    }
}

/* A failed create blamed exactly want[0..nwant). */
static void assert_create_blamed(const creator *c, const int *want, int nwant)
{
    if (c->rc != FTC_ETIMEDOUT) {
        fail_msg("rank %d: %s, expected FTC_ETIMEDOUT: %s", c->rank,
                 ftc_err_name(c->rc), c->msg);
    }
    assert_int_equal(c->n, nwant);
    assert_int_equal(c->n_null, nwant);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c->peers[i], i < nwant ? want[i] : -7);
    }
}

/* (e) Rank 2 never calls create: ranks 0 and 1 time out and blame it;
 * their next create, which every rank joins, blames nobody. */
static void create_blames_the_rank_that_never_came(void **state)
{
    (void)state;
    creator cs[3] = {
        {.rank = 0, .size = 3, .prefix = "blame/absent", .again = "blame/all"},
        {.rank = 1, .size = 3, .prefix = "blame/absent", .again = "blame/all"},
        {.rank = 2, .again = "blame/all"},
    };
    run_creators(cs, 3);
    static const int two[] = {2};
    for (int r = 0; r < 2; r++) {
        assert_create_blamed(&cs[r], two, 1);
        assert_non_null(strstr(cs[r].msg, "pg/rank/2"));
    }
    for (int r = 0; r < 3; r++) {
        TK_OK(cs[r].again_rc);
        assert_int_equal(cs[r].n_again, 0);
        assert_int_equal(cs[r].healthy, 0);
    }
}

/* Rank 0 never calls create: the others never get the group id it
 * publishes, and blame it. */
static void create_blames_a_missing_rank_0(void **state)
{
    (void)state;
    creator cs[2] = {
        {.rank = 1, .size = 3, .prefix = "blame/no0"},
        {.rank = 2, .size = 3, .prefix = "blame/no0"},
    };
    run_creators(cs, 2);
    static const int zero[] = {0};
    assert_create_blamed(&cs[0], zero, 1);
    assert_create_blamed(&cs[1], zero, 1);
}

/* Rank 2 published an address but never connects (it died right after):
 * ranks 0 and 1 wait for its connections and blame it. */
static void create_blames_a_rank_that_never_connected(void **state)
{
    (void)state;
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    static const char addr[] = "127.0.0.1:9|00000000000000aa";
    TK_OK(ftc_store_client_set(c, "blame/silent/pg/rank/2", addr,
                               sizeof(addr) - 1, tk_ms(5000)));
    ftc_store_client_close(c);
    creator cs[2] = {
        {.rank = 0, .size = 3, .prefix = "blame/silent"},
        {.rank = 1, .size = 3, .prefix = "blame/silent"},
    };
    run_creators(cs, 2);
    static const int two[] = {2};
    for (int r = 0; r < 2; r++) {
        assert_create_blamed(&cs[r], two, 1);
        assert_non_null(strstr(cs[r].msg, "did not connect"));
    }
}

/* (f) More blamed ranks than cap: the count, and only cap written; no
 * buffer with cap 0; bad arguments refused. */
static void cap_below_the_count(void **state)
{
    (void)state;
    creator cs[2] = {
        {.rank = 0, .size = 4, .prefix = "blame/two"},
        {.rank = 1, .size = 4, .prefix = "blame/two"},
    };
    run_creators(cs, 2);
    static const int both[] = {2, 3};
    for (int r = 0; r < 2; r++) {
        assert_create_blamed(&cs[r], both, 2);
        assert_int_equal(cs[r].n_cap1, 2);
        assert_int_equal(cs[r].peers1[0], 2);
        assert_int_equal(cs[r].peers1[1], -7);
        assert_int_equal(cs[r].inval[0], FTC_EINVAL);
        assert_int_equal(cs[r].inval[1], FTC_EINVAL);
    }
    int buf[2];
    TK_EXPECT(ftc_pg_failed_peers(NULL, buf, 2), FTC_EMISUSE);
}

/* ------------------------------------------------------- on the wire */

typedef struct forged {
    int status[2];
    int n[2];
    int peers[2][2];
    char msg[2][512];
} forged;

/* Rank 1 writes rank 0 an ABORT that blames rank 5 of a group of 2; each
 * rank then waits (bounded) for its group to fail, without calling it. */
static int forge_abort(ftc_pg *pg, void *arg)
{
    forged *f = arg;
    int r = ftc_pg_rank(pg);
    ftc__tcp *g = pg->impl;
    if (r == 1) {
        ftc__pgw_hdr h = {.kind = FTC__PGW_ABORT,
                          .flags = (uint8_t)-FTC_ETIMEDOUT,
                          .group = g->group_id,
                          .epoch = g->epoch,
                          .src = 1,
                          .tag = 1,
                          .len = 4 + 3};
        uint8_t frame[FTC__PGW_HDR + 7] = {0};
        ftc__pgw_encode(frame, &h);
        frame[FTC__PGW_HDR] = 5; /* rank 5 of 2 */
        memcpy(frame + FTC__PGW_HDR + 4, "bad", 3);
        if (write(g->side[0].fd, frame, sizeof(frame)) !=
            (ssize_t)sizeof(frame)) {
            return FTC_ESYS;
        }
    }
    int64_t end = tk_now_ms() + tk_ms(BOUND_MS);
    while ((f->status[r] = ftc_pg_status(pg)) == 0 && tk_now_ms() < end) {
        tk_pause_ms(2);
    }
    snprintf(f->msg[r], sizeof(f->msg[r]), "%s", ftc_last_error());
    f->peers[r][0] = f->peers[r][1] = -1;
    f->n[r] = ftc_pg_failed_peers(pg, f->peers[r], 2);
    return 0;
}

/* An ABORT whose list names a rank outside the group is refused: the
 * receiver fails with FTC_EPROTO blaming its sender, and tells it so;
 * the sender, blamed in that ABORT, does not blame itself. */
static void malformed_blame_list_blames_its_sender(void **state)
{
    (void)state;
    forged f = {0};
    pgt_run_threads(2, NULL, forge_abort, &f);
    if (f.status[0] != FTC_EPROTO ||
        !strstr(f.msg[0], "rank 5 at 0 of 1 is not in the group")) {
        fail_msg("rank 0: %s: %s", ftc_err_name(f.status[0]), f.msg[0]);
    }
    assert_int_equal(f.n[0], 1);
    assert_int_equal(f.peers[0][0], 1);
    assert_int_equal(f.status[1], FTC_EPROTO);
    assert_int_equal(f.n[1], 0);
    assert_int_equal(f.peers[1][0], -1);
}

/* ------------------------------------------- a peer's word, weighed */

/* Rank 0 tells rank 2, in an ABORT, that rank 1 is cut off; rank 2 hears
 * it either idle or in an allreduce whose liveness probe rank 1 already
 * answered. */
typedef struct testimony {
    bool probed;             /* rank 2 in the allreduce, rank 1 answered */
    ftc__tcp *_Atomic g0;    /* rank 0's group, for its side channel */
    atomic_int ready;        /* rank 2 is where the case wants it */
    atomic_int let_go;       /* rank 2 no longer uses g0 */
    int status, n, peers[2]; /* rank 2's */
    char msg[512];
} testimony;

/* Writes rank 2 an ABORT from rank 0 (code FTC_EPEER, not on purpose)
 * that blames rank 1. */
static int forge_testimony(ftc__tcp *g0)
{
    static const char why[] = "forged: rank 1 is cut off";
    ftc__pgw_hdr h = {.kind = FTC__PGW_ABORT,
                      .flags = (uint8_t)-FTC_EPEER,
                      .group = g0->group_id,
                      .epoch = g0->epoch,
                      .src = 0,
                      .tag = 1,
                      .len = 4 + sizeof(why) - 1};
    uint8_t frame[FTC__PGW_HDR + 4 + sizeof(why) - 1];
    ftc__pgw_encode(frame, &h);
    ftc__put_u32le(frame + FTC__PGW_HDR, 1);
    memcpy(frame + FTC__PGW_HDR + 4, why, sizeof(why) - 1);
    return write(g0->side[2].fd, frame, sizeof(frame)) == (ssize_t)sizeof(frame)
               ? 0
               : FTC_ESYS;
}

/* Rank 2 in an allreduce (4 s) the others never join, driven by this
 * thread until its probe has an answer from rank 1 (the engine held while
 * looking); then rank 0's ABORT. Returns the allreduce's result. */
static int allreduce_until_probed(ftc_pg *pg, testimony *t)
{
    ftc__tcp *g = pg->impl;
    float x = 1;
    ftc_tensor tx = ftc_tensor_cpu(&x, 1, FTC_DTYPE_F32);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = 4000;
    ftc_work *w = NULL;
    int rc = ftc_pg_allreduce(pg, &tx, &tx, FTC_OP_SUM, &o, &w);
    int done = 0;
    int64_t end = tk_now_ms() + tk_ms(BOUND_MS);
    while (rc == 0 && atomic_load(&t->ready) == 0 && tk_now_ms() < end) {
        (void)ftc_work_wait(w, 10); /* drives the engine */
        engine_hold(g);
        pthread_mutex_lock(&g->mu);
        bool heard = g->probing && g->pong[1];
        pthread_mutex_unlock(&g->mu);
        engine_release(g, NULL, 0);
        if (ftc_work_test(w, &done) != 0 || done) {
            rc = ftc__seterr(FTC_EPROTO,
                             "the allreduce ended before the "
                             "ABORT: %s",
                             ftc_last_error());
        } else if (heard) {
            atomic_store(&t->ready, 1);
        }
    }
    if (rc == 0 && atomic_load(&t->ready) == 0) {
        rc = ftc__seterr(FTC_ETIMEDOUT, "rank 1 never answered the probe");
    }
    rc = rc != 0 ? rc : forge_testimony(atomic_load(&t->g0));
    atomic_store(&t->let_go, 1);
    if (w != NULL) {
        int wrc = pgt_wait(w);
        rc = rc != 0 ? rc : (wrc == FTC_EPEER ? 0 : FTC_EPROTO);
    }
    return rc;
}

static int weigh_testimony(ftc_pg *pg, void *arg)
{
    testimony *t = arg;
    int r = ftc_pg_rank(pg);
    int rc = 0;
    if (r == 0) {
        atomic_store(&t->g0, (ftc__tcp *)pg->impl);
        if (!t->probed) {
            rc = forge_testimony(pg->impl);
        }
    } else if (r == 2 && t->probed) {
        TK_WAIT_UNTIL(atomic_load(&t->g0) != NULL, BOUND_MS);
        rc = allreduce_until_probed(pg, t);
    }
    int64_t end = tk_now_ms() + tk_ms(BOUND_MS);
    int status;
    while ((status = ftc_pg_status(pg)) == 0 && tk_now_ms() < end) {
        tk_pause_ms(2);
    }
    /* Rank 0's group outlives rank 2's use of its socket (a rank 2 that
     * timed out before forging fails rank 0 as well). */
    while (r == 0 && t->probed && atomic_load(&t->let_go) == 0 &&
           tk_now_ms() < end) {
        tk_pause_ms(2);
    }
    if (r == 2) {
        t->status = status;
        snprintf(t->msg, sizeof(t->msg), "%s", ftc_last_error());
        t->peers[0] = t->peers[1] = -1;
        t->n = ftc_pg_failed_peers(pg, t->peers, 2);
    }
    return rc != 0 ? rc : (status != 0 ? 0 : FTC_ETIMEDOUT);
}

/* A peer's ABORT is its word: taken when this rank knows no better (idle,
 * no probe of its own), but a peer that answered this rank's probe is not
 * blamed on it. A manager reports what its group blames as pairs with
 * itself; repeating the word, the third of three groups, two of them cut
 * apart, would report a triangle and the lighthouse could leave nobody
 * out (make check's run_hosts_pair_test stalled on it). */
static void an_abort_blames_only_what_this_rank_did_not_hear(void **state)
{
    (void)state;
    for (int probed = 0; probed < 2; probed++) {
        testimony t = {.probed = probed != 0};
        pgt_run_threads(3, NULL, weigh_testimony, &t);
        if (t.status != FTC_EPEER || strstr(t.msg, "forged") == NULL) {
            fail_msg("rank 2: %s: %s", ftc_err_name(t.status), t.msg);
        }
        assert_int_equal(t.n, probed ? 0 : 1);
        assert_int_equal(t.peers[0], probed ? -1 : 1);
    }
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"third", third_rank}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stopped_rank_is_blamed),
        cmocka_unit_test(killed_rank_is_blamed),
        cmocka_unit_test(abort_on_purpose_blames_nobody),
        cmocka_unit_test(slow_rank_is_not_blamed),
        cmocka_unit_test(create_blames_the_rank_that_never_came),
        cmocka_unit_test(create_blames_a_missing_rank_0),
        cmocka_unit_test(create_blames_a_rank_that_never_connected),
        cmocka_unit_test(cap_below_the_count),
        cmocka_unit_test(malformed_blame_list_blames_its_sender),
        cmocka_unit_test(an_abort_blames_only_what_this_rank_did_not_hear),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
