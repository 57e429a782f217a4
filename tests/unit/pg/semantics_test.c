/* Semantics of groups and works between threads of one process: abort
 * from another thread, refused handshakes, rejected stale and foreign
 * traffic, wait/test/callbacks, argument checks, and send/recv matching.
 * Runs under TSan (label threaded). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/device_int.h"
#include "pg/tcp/tcp_int.h"
#include "pg_kit.h"

/* ------------------------------------------------------------------ abort */

typedef struct abort_state {
    atomic_int submitted;
    atomic_int aborted;
    ftc_pg *victim;
    int64_t abort_ms, returned_ms;
} abort_state;

static void *aborter(void *p)
{
    abort_state *s = p;
    while (atomic_load(&s->submitted) == 0) {
        tk_pause_ms(1);
    }
    tk_pause_ms(50); /* let rank 0 block in wait: not a synchronisation */
    s->abort_ms = tk_now_ms();
    ftc_pg_abort(s->victim);
    atomic_store(&s->aborted, 1);
    return NULL;
}

static int abort_case(ftc_pg *pg, void *arg)
{
    abort_state *s = arg;
    float x[16] = {0};
    ftc_tensor t = ftc_tensor_cpu(x, 16, FTC_DTYPE_F32);
    if (ftc_pg_rank(pg) == 1) {
        /* Not joining the allreduce: rank 0 can only be freed by abort.
         * Then this rank's next operation hears of it. */
        while (atomic_load(&s->aborted) == 0) {
            tk_pause_ms(1);
        }
        ftc_work *w;
        int rc = ftc_pg_barrier(pg, NULL, &w);
        rc = rc == 0 ? pgt_wait(w) : rc;
        if (rc != FTC_EPEER || !strstr(ftc_last_error(), "rank 0") ||
            !strstr(ftc_last_error(), "aborted")) {
            return ftc__seterr(FTC_EPROTO, "rank 1 got %s: %s",
                               ftc_err_name(rc), ftc_last_error());
        }
        return 0;
    }
    s->victim = pg;
    pthread_t t2;
    pthread_create(&t2, NULL, aborter, s);
    ftc_work *w;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    atomic_store(&s->submitted, 1);
    rc = rc == 0 ? pgt_wait(w) : rc;
    s->returned_ms = tk_now_ms();
    pthread_join(t2, NULL);
    if (rc != FTC_ECANCELED) {
        return ftc__seterr(FTC_EPROTO, "rank 0 wait: %s", ftc_err_name(rc));
    }
    /* Unusable from now on, and it says so. */
    rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    if (rc != FTC_ECANCELED || !strstr(ftc_last_error(), "unusable") ||
        w != NULL || ftc_pg_status(pg) != FTC_ECANCELED) {
        return ftc__seterr(FTC_EPROTO, "after abort: %s", ftc_last_error());
    }
    return 0;
}

static void abort_from_another_thread(void **state)
{
    (void)state;
    abort_state s = {0};
    pgt_run_threads(2, NULL, abort_case, &s);
    /* "within milliseconds": generous for sanitizers and a busy host. */
    assert_true(s.returned_ms - s.abort_ms < tk_ms(500));
}

/* -------------------------------------------------------------- handshake */

typedef struct hs {
    ftc__pg_listener l;
    const char **addrs;
    int rank;
    uint64_t id, epoch;
    const char *token;
    int rc;
    char msg[512];
} hs;

static void *hs_main(void *p)
{
    hs *h = p;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.connect_timeout_ms = tk_ms(1000);
    o.epoch = h->epoch;
    o.token = h->token;
    ftc_pg *pg = NULL;
    h->rc = ftc__pg_create_from_peers(&pg, &h->l, h->addrs, NULL, h->rank, 2,
                                      h->id, NULL, &o);
    if (h->rc == 0) {
        ftc_work *w;
        h->rc = ftc_pg_barrier(pg, NULL, &w);
        h->rc = h->rc ? h->rc : pgt_wait(w);
    }
    snprintf(h->msg, sizeof(h->msg), "%s", ftc_last_error());
    ftc_pg_destroy(pg);
    return NULL;
}

/* Both ranks build a group, each in its own thread. */
static void handshake(hs h[2])
{
    const char *addrs[2];
    for (int i = 0; i < 2; i++) {
        TK_OK(ftc__pg_listen("127.0.0.1", &h[i].l));
        addrs[i] = h[i].l.addr;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        h[i].addrs = addrs;
        pthread_create(&t[i], NULL, hs_main, &h[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
}

/* Rank 1 dials rank 0 with the wrong group id, epoch or token. */
static void refused(uint64_t id1, uint64_t epoch1, const char *tok0,
                    const char *tok1, int code, const char *why)
{
    hs h[2] = {{.rank = 0, .id = 1, .epoch = 1, .token = tok0},
               {.rank = 1, .id = id1, .epoch = epoch1, .token = tok1}};
    handshake(h);
    if (h[1].rc != code || !strstr(h[1].msg, "refused the connection") ||
        !strstr(h[1].msg, why)) {
        fail_msg("rank 1 got %s: %s", ftc_err_name(h[1].rc), h[1].msg);
    }
    assert_int_equal(h[0].rc, FTC_ETIMEDOUT);
    assert_non_null(strstr(h[0].msg, "ranks 1 did not connect"));
}

static void foreign_group_refused_at_handshake(void **state)
{
    (void)state;
    refused(2, 1, NULL, NULL, FTC_EPROTO, "is not this group");
    refused(1, 7, NULL, NULL, FTC_EPROTO,
            "epoch 7 is not this group's epoch 1");
}

static void tokens_authenticate_both_ways(void **state)
{
    (void)state;
    unsetenv("FTC_TOKEN");
    hs ok[2] = {{.rank = 0, .id = 5, .token = "s3cret"},
                {.rank = 1, .id = 5, .token = "s3cret"}};
    handshake(ok);
    TK_OK(ok[0].rc);
    TK_OK(ok[1].rc);
    refused(1, 1, "s3cret", "guess", FTC_EAUTH, "authentication failed");
    refused(1, 1, "s3cret", NULL, FTC_EAUTH, "authentication failed");
    refused(1, 1, NULL, "s3cret", FTC_EAUTH, "has no token");
    /* FTC_TOKEN is the default. */
    setenv("FTC_TOKEN", "from-env", 1);
    refused(1, 1, NULL, "other", FTC_EAUTH, "authentication failed");
    hs env[2] = {{.rank = 0, .id = 6}, {.rank = 1, .id = 6}};
    handshake(env);
    unsetenv("FTC_TOKEN");
    TK_OK(env[0].rc);
    TK_OK(env[1].rc);
}

/* ----------------------------------------------- stale or foreign traffic */

/* Rank 1 writes a message of another epoch (kind 0), another group (1)
 * or an earlier collective (2) on its collective connection to rank 0. */
static void inject(ftc_pg *pg, void *arg)
{
    int kind = *(const int *)arg;
    ftc__tcp *g = pg->impl;
    ftc__pgw_hdr h = {.kind = FTC__PGW_COLL,
                      .op = 1,
                      .group = g->group_id ^ (kind == 1),
                      .epoch = g->epoch + (kind == 0),
                      .seq = kind == 2 ? 1 : 2,
                      .src = 1,
                      .len = 16};
    uint8_t frame[FTC__PGW_HDR + 16];
    ftc__pgw_encode(frame, &h);
    memset(frame + FTC__PGW_HDR, 0x7f, 16); /* NaNs if reduced */
    ssize_t n = write(g->coll[ftc__chan_id(g, 0, 0)].fd, frame, sizeof(frame));
    assert_int_equal(n, (ssize_t)sizeof(frame));
}

static int injected(ftc_pg *pg, void *arg)
{
    return pgt_forgery_caught(pg, arg);
}

static void stale_and_foreign_messages_fail_the_op(void **state)
{
    (void)state;
    /* Written on the collective connection: tcp carries the data there
     * (shm_test forges the same in a lane's ring). */
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.transport = FTC_PG_TRANSPORT_TCP;
    static const char *const words[] = {"epoch", "another group", "stale"};
    for (int k = 0; k < 3; k++) {
        pgt_forgery f = {.plant = inject,
                         .arg = &k,
                         .want = k == 0 ? FTC_ESTALE : FTC_EPROTO,
                         .word = words[k]};
        pgt_run_threads(2, &o, injected, &f);
    }
}

/* ------------------------------------------------------------ works */

typedef struct cbs {
    atomic_int calls;
    atomic_int order_ok;
    atomic_int last;
    atomic_int misuse;
} cbs;

static void on_done(void *arg, ftc_work *w, int rc)
{
    cbs *c = arg;
    /* Completion order: callbacks come in call order. */
    int n = atomic_fetch_add(&c->calls, 1);
    if (rc != 0 || atomic_load(&c->last) != n) {
        atomic_store(&c->order_ok, 0);
    }
    atomic_store(&c->last, n + 1);
    if (ftc_work_wait(w, 0) == FTC_EMISUSE) {
        atomic_fetch_add(&c->misuse, 1);
    }
    ftc_work_release(w);
}

typedef struct gate {
    atomic_int open;
} gate;

static int works_case(ftc_pg *pg, void *arg)
{
    gate *gt = arg;
    int r = ftc_pg_rank(pg);
    float x[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)r;
    }
    ftc_tensor t = ftc_tensor_cpu(x, 64, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    /* A wait that times out leaves the operation running. */
    if (r == 1) {
        while (atomic_load(&gt->open) == 0) {
            tk_pause_ms(1);
        }
    }
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    if (rc == 0 && r == 0) {
        int done = -1;
        if (ftc_work_wait(w, 30) != FTC_ETIMEDOUT ||
            ftc_work_test(w, &done) != 0 || done != 0 ||
            ftc_work_error(w) != 0) {
            return ftc__seterr(FTC_EPROTO, "wait should time out");
        }
        atomic_store(&gt->open, 1);
    }
    rc = rc == 0 ? pgt_wait(w) : rc;
    if (rc != 0 || x[0] != 1.0f) {
        return rc != 0 ? rc : ftc__seterr(FTC_EPROTO, "x[0] = %g", x[0]);
    }
    /* Callbacks: once each, in call order, and waiting inside one is
     * refused. */
    cbs c = {.order_ok = 1};
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.done = on_done;
    o.done_arg = &c;
    for (int i = 0; i < 20 && rc == 0; i++) {
        ftc_work *wi;
        rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_MAX, &o, &wi);
    }
    /* A detached operation, then a barrier after everything. */
    if (rc == 0) {
        rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_MIN, NULL, NULL);
    }
    if (rc == 0) {
        rc = ftc_pg_barrier(pg, NULL, &w);
        rc = rc == 0 ? pgt_wait(w) : rc;
    }
    TK_WAIT_UNTIL(atomic_load(&c.calls) == 20, 10000);
    if (rc == 0 &&
        (!atomic_load(&c.order_ok) || atomic_load(&c.misuse) != 20)) {
        rc = ftc__seterr(FTC_EPROTO, "callbacks: order %d misuse %d",
                         atomic_load(&c.order_ok), atomic_load(&c.misuse));
    }
    return rc;
}

static void wait_test_and_callbacks(void **state)
{
    (void)state;
    gate g = {0};
    pgt_run_threads(2, NULL, works_case, &g);
}

/* A callback runs while later operations are still pending on the
 * progress thread (rank 1 joins the second allreduce only after rank 0's
 * first callback ran), and nobody waits: the progress thread drives. */
static void flag_done(void *arg, ftc_work *w, int rc)
{
    atomic_store((atomic_int *)arg, rc == 0 ? 1 : -1);
    ftc_work_release(w);
}

static int callback_case(ftc_pg *pg, void *arg)
{
    atomic_int *first_done = arg;
    int x = 1, y = 1;
    ftc_tensor tx = ftc_tensor_cpu(&x, 1, FTC_DTYPE_I32);
    ftc_tensor ty = ftc_tensor_cpu(&y, 1, FTC_DTYPE_I32);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    ftc_work *w1, *w2;
    int rc;
    if (ftc_pg_rank(pg) == 0) {
        o.done = flag_done;
        o.done_arg = first_done;
        rc = ftc_pg_allreduce(pg, &tx, &tx, FTC_OP_SUM, &o, &w1);
        rc = rc ? rc : ftc_pg_allreduce(pg, &ty, &ty, FTC_OP_SUM, NULL, &w2);
        int done = 0;
        while (rc == 0 && !done) {
            rc = ftc_work_test(w2, &done);
            tk_pause_ms(1);
        }
        ftc_work_release(w2);
    } else {
        rc = ftc_pg_allreduce(pg, &tx, &tx, FTC_OP_SUM, NULL, &w1);
        rc = rc ? rc : pgt_wait(w1);
        TK_WAIT_UNTIL(atomic_load(first_done) != 0, 10000);
        rc = rc ? rc : ftc_pg_allreduce(pg, &ty, &ty, FTC_OP_SUM, NULL, &w2);
        rc = rc ? rc : pgt_wait(w2);
    }
    return rc == 0 && (x != 2 || y != 2) ? FTC_EPROTO : rc;
}

static void callbacks_do_not_wait_for_the_queue(void **state)
{
    (void)state;
    atomic_int first_done = 0;
    pgt_run_threads(2, NULL, callback_case, &first_done);
    assert_int_equal(atomic_load(&first_done), 1);
}

/* ---------------------------------------------------- argument checks */

static int fake_count(int *n)
{
    *n = 1;
    return 0;
}

static int fake_mem(const void *p, int *k)
{
    (void)p;
    *k = FTC_MEMORY_MANAGED;
    return 0;
}

static int arguments_case(ftc_pg *pg, void *arg)
{
    (void)arg;
    float x[8] = {0}, y[16] = {0};
    ftc_tensor t = ftc_tensor_cpu(x, 8, FTC_DTYPE_F32);
    ftc_tensor big = ftc_tensor_cpu(y, 16, FTC_DTYPE_F32);
    ftc_tensor bad = t;
    ftc_work *w = (ftc_work *)&t;
    TK_EXPECT(ftc_pg_allreduce(pg, NULL, &t, FTC_OP_SUM, NULL, &w), FTC_EINVAL);
    assert_null(w);
    TK_EXPECT(ftc_pg_allreduce(pg, &t, &big, FTC_OP_SUM, NULL, &w), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "needs 8"));
    bad.dtype = 42;
    TK_EXPECT(ftc_pg_broadcast(pg, &bad, 0, NULL, &w), FTC_EINVAL);
    bad = t;
    bad.data = NULL;
    TK_EXPECT(ftc_pg_broadcast(pg, &bad, 0, NULL, &w), FTC_EINVAL);
    TK_EXPECT(ftc_pg_broadcast(pg, &t, 2, NULL, &w), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "root 2"));
    ftc_tensor ti = ftc_tensor_cpu(x, 8, FTC_DTYPE_I32);
    TK_EXPECT(ftc_pg_reduce_scatter(pg, &ti, &ti, FTC_OP_AVG, NULL, &w),
              FTC_EINVAL);
    TK_EXPECT(ftc_pg_allgather(pg, &t, &t, NULL, &w), FTC_EINVAL);
    ftc_tensor odd = ftc_tensor_cpu(x, 7, FTC_DTYPE_F32);
    TK_EXPECT(ftc_pg_alltoall(pg, &odd, &odd, NULL, &w), FTC_EINVAL);
    TK_EXPECT(ftc_pg_send(pg, &t, ftc_pg_rank(pg), 0, NULL, &w), FTC_EINVAL);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.algo = FTC_ALGO_TREE;
    TK_EXPECT(ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, &o, &w), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "'tree' does not apply"));
    /* A device the backend cannot reach: refused, loudly. */
    ftc_tensor dev = t;
    dev.device = FTC_DEVICE_CUDA;
    TK_EXPECT(ftc_pg_allreduce(pg, &dev, &dev, FTC_OP_SUM, NULL, &w),
              FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "cannot move cuda buffers"));
    assert_null(w);
    TK_EXPECT(ftc_pg_barrier(NULL, NULL, &w), FTC_EMISUSE);
    TK_EXPECT(ftc_work_wait(NULL, 0), FTC_EMISUSE);
    /* The group is untouched by all of that. */
    TK_OK(ftc_pg_status(pg));
    TK_OK(ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w));
    return pgt_wait(w);
}

static void bad_arguments_start_nothing(void **state)
{
    (void)state;
    pgt_run_threads(2, NULL, arguments_case, NULL);
}

static int host_device_case(ftc_pg *pg, void *arg)
{
    (void)arg;
    float x[4] = {1, 1, 1, 1};
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    t.device = FTC_DEVICE_XPU;
    ftc_work *w;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    rc = rc == 0 ? pgt_wait(w) : rc;
    return rc == 0 && x[0] != 2.0f ? FTC_EPROTO : rc;
}

static void host_accessible_device_is_accepted(void **state)
{
    (void)state;
    /* A (fake) device kind whose memory the CPU can address is moved like
     * cpu memory: the check is by capability, not by kind. */
    static const ftc_device_plugin fake = {
        .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
        .struct_size = sizeof(ftc_device_plugin),
        .kind = FTC_DEVICE_XPU,
        .name = "xpu",
        .host_access = 1,
        .count = fake_count,
        .memory_kind = fake_mem};
    TK_OK(ftc__device_register(&fake));
    pgt_run_threads(2, NULL, host_device_case, NULL);
    ftc__device_unregister(FTC_DEVICE_XPU);
}

/* ------------------------------------------------------------- send/recv */

static int p2p_case(ftc_pg *pg, void *arg)
{
    (void)arg;
    int r = ftc_pg_rank(pg);
    int a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, got1[4], got2[4];
    ftc_tensor ta = ftc_tensor_cpu(a, 4, FTC_DTYPE_I32);
    ftc_tensor tb = ftc_tensor_cpu(b, 4, FTC_DTYPE_I32);
    ftc_work *w1, *w2, *w3;
    int rc;
    if (r == 0) {
        /* Tags 1 then 2; the receiver posts 2 then 1. */
        rc = ftc_pg_send(pg, &ta, 1, 1, NULL, &w1);
        rc = rc ? rc : ftc_pg_send(pg, &tb, 1, 2, NULL, &w2);
        rc = rc ? rc : pgt_wait(w1);
        rc = rc ? rc : pgt_wait(w2);
        /* A size mismatch fails that receive only. */
        rc = rc ? rc : ftc_pg_send(pg, &ta, 1, 3, NULL, &w3);
        rc = rc ? rc : pgt_wait(w3);
    } else {
        ftc_tensor g1 = ftc_tensor_cpu(got1, 4, FTC_DTYPE_I32);
        ftc_tensor g2 = ftc_tensor_cpu(got2, 4, FTC_DTYPE_I32);
        rc = ftc_pg_recv(pg, &g2, 0, 2, NULL, &w2);
        rc = rc ? rc : ftc_pg_recv(pg, &g1, FTC_PG_ANY_SOURCE, 1, NULL, &w1);
        rc = rc ? rc : pgt_wait(w2);
        rc = rc ? rc : pgt_wait(w1);
        if (rc == 0 && (memcmp(got1, a, sizeof(a)) || memcmp(got2, b, 16))) {
            rc = ftc__seterr(FTC_EPROTO, "tags mixed up");
        }
        ftc_tensor small = ftc_tensor_cpu(got1, 2, FTC_DTYPE_I32);
        if (rc == 0) {
            rc = ftc_pg_recv(pg, &small, 0, 3, NULL, &w3);
            rc = rc ? rc : pgt_wait(w3);
            rc = rc == FTC_EMSGSIZE ? 0 : FTC_EPROTO;
        }
    }
    /* Still usable. */
    if (rc == 0) {
        rc = ftc_pg_barrier(pg, NULL, &w1);
        rc = rc ? rc : pgt_wait(w1);
    }
    return rc;
}

static void send_recv_match_by_tag(void **state)
{
    (void)state;
    pgt_run_threads(2, NULL, p2p_case, NULL);
}

/* A recv waited for before the sender's earlier collective: send/recv run
 * apart from the collectives, so this does not deadlock. */
static int p2p_beside_collectives(ftc_pg *pg, void *arg)
{
    (void)arg;
    float x[1000] = {0};
    ftc_tensor t = ftc_tensor_cpu(x, 1000, FTC_DTYPE_F32);
    int v = 42, got = 0;
    ftc_work *wc, *wp;
    int rc;
    if (ftc_pg_rank(pg) == 0) {
        ftc_tensor tv = ftc_tensor_cpu(&v, 1, FTC_DTYPE_I32);
        rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &wc);
        rc = rc ? rc : ftc_pg_send(pg, &tv, 1, 9, NULL, &wp);
        rc = rc ? rc : pgt_wait(wp);
        rc = rc ? rc : pgt_wait(wc);
    } else {
        ftc_tensor tg = ftc_tensor_cpu(&got, 1, FTC_DTYPE_I32);
        rc = ftc_pg_recv(pg, &tg, 0, 9, NULL, &wp);
        rc = rc ? rc : pgt_wait(wp);
        rc = rc ? rc : ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &wc);
        rc = rc ? rc : pgt_wait(wc);
        rc = rc == 0 && got != 42 ? FTC_EPROTO : rc;
    }
    return rc;
}

static void send_recv_do_not_wait_for_collectives(void **state)
{
    (void)state;
    pgt_run_threads(2, NULL, p2p_beside_collectives, NULL);
}

static int flood_case(ftc_pg *pg, void *arg)
{
    (void)arg;
    static char big[2][8192];
    int r = ftc_pg_rank(pg);
    ftc_tensor t = ftc_tensor_cpu(big[r], sizeof(big[r]), FTC_DTYPE_U8);
    ftc_tensor one = ftc_tensor_cpu(big[r], 1, FTC_DTYPE_U8);
    ftc_work *w;
    int rc;
    if (r == 0) {
        /* Three 8 KiB messages rank 1 has no receive for (16 KiB allowed),
         * then the one it waits for. */
        for (uint32_t tag = 0; tag < 3; tag++) {
            rc = ftc_pg_send(pg, &t, 1, tag, NULL, &w);
            rc = rc ? rc : pgt_wait(w);
        }
        rc = ftc_pg_send(pg, &one, 1, 5, NULL, &w);
        rc = rc ? rc : pgt_wait(w);
        rc = rc ? rc : ftc_pg_barrier(pg, NULL, &w);
        rc = rc ? rc : pgt_wait(w);
    } else {
        rc = ftc_pg_recv(pg, &one, 0, 5, NULL, &w);
        rc = rc ? rc : pgt_wait(w);
    }
    if (rc != FTC_EMSGSIZE ||
        !strstr(ftc_last_error(), "max_unexpected_bytes")) {
        return ftc__seterr(FTC_EPROTO, "rank %d got %s: %s", r,
                           ftc_err_name(rc), ftc_last_error());
    }
    return 0;
}

static void unexpected_messages_are_bounded(void **state)
{
    (void)state;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.max_unexpected_bytes = 16384;
    pgt_run_threads(2, &o, flood_case, NULL);
}

/* ------------------------------------------------------------- destroy */

/* Rank 0 destroys its group with a recv pending (the harness destroys it
 * when this returns): the work fails with FTC_ECANCELED and stays valid
 * until released; rank 1, waiting on a recv of its own, fails naming rank
 * 0. No thread may wait on the work while destroy runs (destroy must not
 * race with other calls), so the test reads it afterwards. */
static int destroy_case(ftc_pg *pg, void *arg)
{
    _Atomic(ftc_work *) *orphan = arg;
    static float x[2][8];
    int r = ftc_pg_rank(pg);
    ftc_tensor t = ftc_tensor_cpu(x[r], 8, FTC_DTYPE_F32);
    ftc_work *w = NULL;
    int rc = ftc_pg_recv(pg, &t, 1 - r, 7, NULL, &w);
    if (r == 0) {
        atomic_store(orphan, w);
        return rc;
    }
    rc = rc ? rc : pgt_wait(w);
    if (rc != FTC_EPEER || !strstr(ftc_last_error(), "rank 0 (127.0.0.1:")) {
        return ftc__seterr(FTC_EPROTO, "rank 1 got %s: %s", ftc_err_name(rc),
                           ftc_last_error());
    }
    return 0;
}

static void destroy_fails_pending_work(void **state)
{
    (void)state;
    _Atomic(ftc_work *) orphan = NULL;
    pgt_run_threads(2, NULL, destroy_case, &orphan);
    ftc_work *w = atomic_load(&orphan);
    TK_EXPECT(ftc_work_wait(w, 0), FTC_ECANCELED);
    assert_non_null(strstr(ftc_last_error(), "destroyed the group"));
    int done = 0;
    TK_EXPECT(ftc_work_test(w, &done), FTC_ECANCELED);
    assert_int_equal(done, 1);
    ftc_work_release(w);
}

/* ---------------------------------------------------------------- split */

static int split_case(ftc_pg *pg, void *arg)
{
    (void)arg;
    int r = ftc_pg_rank(pg);
    ftc_pg *shard = NULL, *rep = NULL;
    int rc = ftc_pg_mesh_2d(pg, 2, FTC_DEVICE_CPU, NULL, &shard, &rep);
    int got[2];
    if (rc == 0) {
        ftc_pg_parent_ranks(rep, got);
        if (ftc_pg_size(shard) != 2 || got[0] != r % 2 || got[1] != r % 2 + 2) {
            rc = ftc__seterr(FTC_EPROTO, "rank %d: replicate %d,%d", r, got[0],
                             got[1]);
        }
    }
    /* Operations on the three groups at once. */
    int a = 1, b = 1, c = 1;
    ftc_tensor ta = ftc_tensor_cpu(&a, 1, FTC_DTYPE_I32);
    ftc_tensor tb = ftc_tensor_cpu(&b, 1, FTC_DTYPE_I32);
    ftc_tensor tc = ftc_tensor_cpu(&c, 1, FTC_DTYPE_I32);
    ftc_work *wa, *wb, *wc;
    rc = rc ? rc : ftc_pg_allreduce(pg, &ta, &ta, FTC_OP_SUM, NULL, &wa);
    rc = rc ? rc : ftc_pg_allreduce(rep, &tc, &tc, FTC_OP_SUM, NULL, &wc);
    rc = rc ? rc : ftc_pg_allreduce(shard, &tb, &tb, FTC_OP_SUM, NULL, &wb);
    rc = rc ? rc : pgt_wait(wb);
    rc = rc ? rc : pgt_wait(wc);
    rc = rc ? rc : pgt_wait(wa);
    if (rc == 0 && (a != 4 || b != 2 || c != 2)) {
        rc = ftc__seterr(FTC_EPROTO, "sums %d %d %d", a, b, c);
    }
    ftc_pg_destroy(shard);
    ftc_pg_destroy(rep);
    return rc;
}

static void subgroups_run_beside_their_parent(void **state)
{
    (void)state;
    pgt_run_threads(4, NULL, split_case, NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(abort_from_another_thread),
        cmocka_unit_test(foreign_group_refused_at_handshake),
        cmocka_unit_test(tokens_authenticate_both_ways),
        cmocka_unit_test(stale_and_foreign_messages_fail_the_op),
        cmocka_unit_test(wait_test_and_callbacks),
        cmocka_unit_test(callbacks_do_not_wait_for_the_queue),
        cmocka_unit_test(bad_arguments_start_nothing),
        cmocka_unit_test(host_accessible_device_is_accepted),
        cmocka_unit_test(send_recv_match_by_tag),
        cmocka_unit_test(send_recv_do_not_wait_for_collectives),
        cmocka_unit_test(unexpected_messages_are_bounded),
        cmocka_unit_test(subgroups_run_beside_their_parent),
        cmocka_unit_test(destroy_fails_pending_work),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
