/* Shared-memory lanes between ranks of one host (src/pg/tcp/shm_*.c):
 * every size through the rings, the segments gone with the group, a
 * hostile peer writing forged headers or indices into its ring or
 * offering what is not a lane's segment, and the choice of transport
 * (docs/operations.md "Transports"). */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "engine_hold.h"
#include "pg/tcp/tcp_int.h"
#include "pg_kit.h"

static ftc_pg_opts with_transport(int transport)
{
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.transport = transport;
    o.timeout_ms = tk_ms(20000);
    return o;
}

/* ------------------------------------------------------ the data path */

static int every_size(ftc_pg *pg, void *arg)
{
    (void)arg;
    int peers = ftc_pg_size(pg) - 1;
    if (pgt_lanes(pg) != peers || pgt_lane_segments() == 0) {
        return ftc__seterr(FTC_EPROTO, "%d lanes for %d peers, %d segments",
                           pgt_lanes(pg), peers, pgt_lane_segments());
    }
    /* Odd byte counts (i8), the ring's size and more (1 MiB), f64 and
     * the averaging op. */
    static const size_t counts[] = {1, 7, 1000, 262144, 300001};
    static const struct {
        int coll, dtype, op;
    } cases[] = {
        {PGT_ALLREDUCE, FTC_DTYPE_F32, FTC_OP_SUM},
        {PGT_ALLREDUCE, FTC_DTYPE_I8, FTC_OP_MAX},
        {PGT_ALLREDUCE, FTC_DTYPE_F64, FTC_OP_AVG},
        {PGT_BROADCAST, FTC_DTYPE_U8, FTC_OP_SUM},
        {PGT_ALLGATHER, FTC_DTYPE_F32, FTC_OP_SUM},
        {PGT_REDUCE_SCATTER, FTC_DTYPE_I32, FTC_OP_SUM},
    };
    int seed = 1;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            int rc = pgt_check(pg, cases[c].coll, cases[c].dtype, cases[c].op,
                               counts[k], FTC_ALGO_AUTO, 0, seed++);
            if (rc != 0) {
                return rc;
            }
        }
    }
    return 0;
}

static void lanes_carry_every_size_and_vanish(void **state)
{
    (void)state;
    ftc_pg_opts o = with_transport(FTC_PG_TRANSPORT_SHM);
    pgt_run_threads(2, &o, every_size, NULL);
    assert_int_equal(pgt_lane_segments(), 0);
    pgt_run_threads(3, &o, every_size, NULL);
    assert_int_equal(pgt_lane_segments(), 0);
}

/* ------------------------------------------------------ a hostile peer */

enum { F_EPOCH, F_GROUP, F_STALE, F_INDEX, F_SIZE, F_COUNT };

/* Rank 1 writes into its ring to rank 0 what an honest writer never
 * would, between two allreduces. */
static void forge(ftc_pg *pg, void *arg)
{
    int kind = *(const int *)arg;
    ftc__tcp *g = pg->impl;
    ftc__shm_lane *l = g->coll[ftc__chan_id(g, 0, 0)].lane;
    if (kind == F_INDEX) {
        /* Its own state too, or its next write would publish the truth. */
        l->tx_head += 2 * FTC__SHM_RING;
        atomic_store(&l->tx_ctl->head, l->tx_head);
        return;
    }
    ftc__pgw_hdr h = {.kind = FTC__PGW_COLL,
                      .op = PGT_ALLREDUCE,
                      .group = g->group_id ^ (kind == F_GROUP),
                      .epoch = g->epoch + (kind == F_EPOCH),
                      .seq = kind == F_STALE ? 1 : 2,
                      .src = 1,
                      .len = kind == F_SIZE ? 8 : 16};
    uint8_t *at = l->tx + (l->tx_head & (FTC__SHM_RING - 1));
    ftc__pgw_encode(at, &h);
    memset(at + FTC__PGW_HDR, 0x7f, 16); /* NaNs if reduced */
    l->tx_head += FTC__SHM_ALIGN;
    atomic_store(&l->tx_ctl->head, l->tx_head);
}

static int forged(ftc_pg *pg, void *arg)
{
    return pgt_forgery_caught(pg, arg);
}

static void forged_ring_contents_fail_the_op(void **state)
{
    (void)state;
    ftc_pg_opts o = with_transport(FTC_PG_TRANSPORT_SHM);
    static const char *const words[F_COUNT] = {"epoch", "another group",
                                               "stale", "out of range",
                                               "unexpected message"};
    for (int k = 0; k < F_COUNT; k++) {
        pgt_forgery f = {.plant = forge,
                         .arg = &k,
                         .want = k == F_EPOCH ? FTC_ESTALE : FTC_EPROTO,
                         .word = words[k]};
        pgt_run_threads(2, &o, forged, &f);
        assert_int_equal(pgt_lane_segments(), 0);
    }
}

/* ------------------------------------------------ a peer that left */

/* Rank 2 finishes a direct reduce_scatter and destroys its group while
 * rank 1 cannot run its engine; rank 1's receive from rank 2 waits for
 * its receive from rank 0, whose channel its pump visits second. */
typedef struct left_early {
    atomic_int submitted; /* rank 1's sends are out, its engine held */
    atomic_int done;      /* rank 1 has its result */
} left_early;

/* A 3-rank f32 SUM reduce_scatter of C elements per rank, and its check. */
enum { RS_C = 4 };
typedef struct rs_case {
    float in[3 * RS_C], out[RS_C];
    ftc_tensor ti, to;
} rs_case;

static void rs_prepare(ftc_pg *pg, rs_case *k)
{
    int r = ftc_pg_rank(pg), n = ftc_pg_size(pg);
    memset(k->out, 0, sizeof(k->out));
    for (int i = 0; i < n * RS_C; i++) {
        k->in[i] = (float)(100 * r + i);
    }
    k->ti = ftc_tensor_cpu(k->in, (size_t)n * RS_C, FTC_DTYPE_F32);
    k->to = ftc_tensor_cpu(k->out, RS_C, FTC_DTYPE_F32);
}

static int rs_submit(ftc_pg *pg, rs_case *k, ftc_work **w)
{
    return ftc_pg_reduce_scatter(pg, &k->ti, &k->to, FTC_OP_SUM, NULL, w);
}

/* Rank 1's submit: its engine held first, so its sends leave at once on
 * this thread and nobody reads until it lets go; then *submitted. */
static int rs_submit_held(ftc_pg *pg, rs_case *k, ftc_work **w,
                          atomic_int *submitted)
{
    engine_hold(pg->impl);
    int rc = rs_submit(pg, k, w);
    atomic_store(submitted, 1);
    return rc;
}

/* The other ranks' submit: once rank 1's sends are out (*submitted). */
static int rs_submit_after(ftc_pg *pg, rs_case *k, ftc_work **w,
                           atomic_int *submitted)
{
    TK_WAIT_UNTIL(atomic_load(submitted) != 0, 20000);
    return rs_submit(pg, k, w);
}

static int rs_check(ftc_pg *pg, const rs_case *k)
{
    int r = ftc_pg_rank(pg), n = ftc_pg_size(pg);
    for (int i = 0; i < RS_C; i++) {
        float want = 0;
        for (int q = 0; q < n; q++) {
            want += (float)(100 * q + r * RS_C + i);
        }
        if (k->out[i] != want) {
            return ftc__seterr(FTC_EPROTO, "rank %d: out[%d] = %g, not %g", r,
                               i, (double)k->out[i], (double)want);
        }
    }
    return 0;
}

static int reduce_scatter_after_peer_left(ftc_pg *pg, void *arg)
{
    left_early *e = arg;
    ftc__tcp *g = pg->impl;
    int r = ftc_pg_rank(pg);
    rs_case k;
    rs_prepare(pg, &k);
    ftc_work *w = NULL;
    int rc;
    if (r == 1) {
        rc = rs_submit_held(pg, &k, &w, &e->submitted);
        /* Rank 2 is done and gone: its data waits in the ring, rank 0's
         * too (rank 2 could not finish without it), then the end of
         * stream of the lane's connection. */
        ftc__chan *from2 = &g->coll[ftc__chan_id(g, 2, 0)];
        struct pollfd p = {.fd = from2->fd, .events = POLLRDHUP};
        if (rc == 0 && poll(&p, 1, (int)tk_ms(20000)) != 1) {
            rc = ftc__seterr(FTC_ETIMEDOUT, "rank 2 did not leave");
        }
        if (rc != 0) {
            atomic_store(&e->done, 1);
            return rc;
        }
        engine_release(g, &from2, 1); /* as that event would */
    } else if ((rc = rs_submit_after(pg, &k, &w, &e->submitted)) != 0) {
        return rc;
    }
    rc = pgt_wait(w);
    if (r == 1) {
        atomic_store(&e->done, 1);
    } else if (r == 0) {
        TK_WAIT_UNTIL(atomic_load(&e->done) != 0, 20000);
    }
    return rc != 0 ? rc : rs_check(pg, &k); /* rank 2 returns first */
}

/* Over TCP a peer's data precede its end of stream; over a lane they
 * wait in the ring after it: an operation whose bytes all arrived
 * completes, however late its receive becomes due. */
static void a_peer_that_left_after_sending_is_read_to_the_end(void **state)
{
    (void)state;
    ftc_pg_opts o = with_transport(FTC_PG_TRANSPORT_SHM);
    o.reduce_scatter_algo = FTC_ALGO_DIRECT;
    for (int k = 0; k < 3; k++) {
        left_early e = {0};
        pgt_run_threads(3, &o, reduce_scatter_after_peer_left, &e);
    }
    assert_int_equal(pgt_lane_segments(), 0);
}

/* ------------------------------------- a peer's abort after its bytes */

/* Rank 0 aborts its group right after a direct reduce_scatter that every
 * rank's bytes finished, while rank 1 cannot run its engine: when rank 1
 * runs again its channels hold rank 0's and rank 2's messages and its
 * side channel rank 0's ABORT. The receive from rank 2 waits for the one
 * from rank 0, on a channel the pump visits second. */
typedef struct abort_after {
    atomic_int submitted; /* rank 1's sends are out, its engine held */
    atomic_int finished2; /* rank 2's operation is done */
    atomic_int aborted;   /* rank 0 sent its ABORT */
    atomic_int done;      /* rank 1 has its result */
} abort_after;

/* Bounded wait for fd to have something to read. */
static int readable_within(int fd, const char *what)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, (int)tk_ms(20000)) == 1
               ? 0
               : ftc__seterr(FTC_ETIMEDOUT, "%s never came", what);
}

static int reduce_scatter_then_abort(ftc_pg *pg, void *arg)
{
    abort_after *e = arg;
    ftc__tcp *g = pg->impl;
    int r = ftc_pg_rank(pg);
    rs_case k;
    rs_prepare(pg, &k);
    ftc_work *w = NULL;
    int rc;
    if (r == 1) {
        rc = rs_submit_held(pg, &k, &w, &e->submitted);
        TK_WAIT_UNTIL(atomic_load(&e->aborted) != 0, 20000);
        /* Over TCP rank 2's message sits in its socket; over a lane in
         * the ring, and its doorbell connection says nothing. */
        ftc__chan *ready[] = {&g->coll[ftc__chan_id(g, 2, 0)],
                              &g->coll[ftc__chan_id(g, 0, 0)], &g->side[0]};
        rc = rc != 0          ? rc
             : ready[0]->lane ? 0
                              : readable_within(ready[0]->fd, "rank 2's bytes");
        rc = rc != 0 ? rc : readable_within(g->side[0].fd, "rank 0's ABORT");
        if (rc != 0) {
            atomic_store(&e->done, 1);
            return rc;
        }
        engine_release(g, ready, 3);
    } else if ((rc = rs_submit_after(pg, &k, &w, &e->submitted)) != 0) {
        return rc;
    }
    rc = pgt_wait(w);
    if (r == 2) {
        atomic_store(&e->finished2, 1);
    } else if (r == 0 && rc == 0) {
        /* Once rank 2 finished, its bytes for rank 1 are on their way. */
        TK_WAIT_UNTIL(atomic_load(&e->finished2) != 0, 20000);
        ftc_pg_abort(pg);
        atomic_store(&e->aborted, 1);
    }
    rc = rc != 0 ? rc : rs_check(pg, &k);
    if (r == 1) {
        /* The ABORT is taken once the operation is done: the next fails. */
        ftc_work *b = NULL;
        int brc = ftc_pg_barrier(pg, NULL, &b);
        brc = brc != 0 ? brc : pgt_wait(b);
        if (rc == 0 && brc == 0) {
            rc = ftc__seterr(FTC_EPROTO, "the group outlived rank 0's ABORT");
        }
        atomic_store(&e->done, 1);
    } else {
        TK_WAIT_UNTIL(atomic_load(&e->done) != 0, 20000);
    }
    return rc;
}

/* A peer's ABORT does not fail an operation whose bytes all arrived, on
 * either transport. */
static void an_abort_after_the_bytes_fails_the_next_operation(void **state)
{
    (void)state;
    int transports[] = {FTC_PG_TRANSPORT_TCP, FTC_PG_TRANSPORT_SHM};
    for (int t = 0; t < 2; t++) {
        ftc_pg_opts o = with_transport(transports[t]);
        o.reduce_scatter_algo = FTC_ALGO_DIRECT;
        for (int k = 0; k < 3; k++) {
            abort_after e = {0};
            pgt_run_threads(3, &o, reduce_scatter_then_abort, &e);
        }
    }
    assert_int_equal(pgt_lane_segments(), 0);
}

/* ------------------------------------------- offers that are not lanes */

static void expect_refused(ftc__chan *c, uint32_t pid, int fd, uint64_t ring,
                           const uint8_t *nonce, const char *word)
{
    char why[256] = "";
    assert_int_equal(
        ftc__shm_lane_open(c, pid, fd, ring, nonce, why, sizeof(why)), -1);
    assert_null(c->lane);
    if (strstr(why, word) == NULL) {
        fail_msg("refused for '%s', expected '%s'", why, word);
    }
}

/* What an offer names is the peer's word: only a lane's segment of a
 * lane's size holding the offered nonce is mapped. */
static void offers_that_are_not_lanes_are_refused(void **state)
{
    (void)state;
    ftc__chan a = {.fd = -1}, b = {.fd = -1};
    uint8_t nonce[FTC__SHM_NONCE], other[FTC__SHM_NONCE];
    char why[256];
    assert_int_equal(ftc__shm_lane_create(&a, nonce, why, sizeof(why)), 0);
    uint32_t pid = (uint32_t)getpid();
    int fd = a.lane->memfd;
    /* The honest offer: each end reads what the other writes. */
    assert_int_equal(
        ftc__shm_lane_open(&b, pid, fd, FTC__SHM_RING, nonce, why, sizeof(why)),
        0);
    a.lane->tx[0] = 42;
    b.lane->tx[FTC__SHM_RING - 1] = 7;
    assert_int_equal(b.lane->rx[0], 42);
    assert_int_equal(a.lane->rx[FTC__SHM_RING - 1], 7);
    ftc__shm_lane_close(&b);

    memcpy(other, nonce, sizeof(other));
    other[3] ^= 1;
    expect_refused(&b, pid, fd, FTC__SHM_RING, other, "another segment");
    expect_refused(&b, pid, fd, FTC__SHM_RING / 2, nonce, "ring of");
    FILE *plain = tmpfile();
    assert_non_null(plain);
    expect_refused(&b, pid, fileno(plain), FTC__SHM_RING, nonce,
                   "not a lane's segment");
    fclose(plain);
    expect_refused(&b, 0x3fffffff, fd, FTC__SHM_RING, nonce, "not this host");
    /* Truncated: not a lane's size any more. */
    assert_int_equal(ftruncate(fd, FTC__SHM_SEG_BYTES / 2), 0);
    expect_refused(&b, pid, fd, FTC__SHM_RING, nonce, "a lane's size");
    ftc__shm_lane_close(&a);
    assert_int_equal(pgt_lane_segments(), 0);
}

/* ------------------------------------------------- choosing transports */

typedef struct creator {
    ftc__pg_listener l;
    const char *addrs[2];
    int rank;
    ftc_pg_opts o;
    int rc;
    int lanes;
    char msg[512];
} creator;

static void *create_main(void *p)
{
    creator *m = p;
    ftc_pg *pg = NULL;
    m->rc = ftc__pg_create_from_peers(&pg, &m->l, m->addrs, NULL, m->rank, 2, 7,
                                      NULL, &m->o);
    snprintf(m->msg, sizeof(m->msg), "%s", ftc_last_error());
    m->lanes = pg != NULL ? pgt_lanes(pg) : -1;
    ftc_pg_destroy(pg);
    return NULL;
}

/* Two ranks with these options each; the results in m. */
static void create_pair(creator m[2], const ftc_pg_opts o[2])
{
    for (int i = 0; i < 2; i++) {
        m[i] = (creator){.rank = i, .o = o[i]};
        m[i].o.connect_timeout_ms = tk_ms(5000);
        TK_OK(ftc__pg_listen("127.0.0.1", &m[i].l));
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        m[i].addrs[0] = m[0].l.addr;
        m[i].addrs[1] = m[1].l.addr;
    }
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, create_main, &m[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
}

static void transport_is_chosen_per_pair(void **state)
{
    (void)state;
    creator m[2];
    /* Auto on one host: a lane. */
    ftc_pg_opts o[2] = {with_transport(FTC_PG_TRANSPORT_AUTO),
                        with_transport(FTC_PG_TRANSPORT_AUTO)};
    create_pair(m, o);
    TK_OK(m[0].rc);
    assert_int_equal(m[0].lanes, 1);
    assert_int_equal(m[1].lanes, 1);
    /* One rank says tcp: both stay on TCP, and agree. */
    o[1] = with_transport(FTC_PG_TRANSPORT_TCP);
    create_pair(m, o);
    TK_OK(m[0].rc);
    TK_OK(m[1].rc);
    assert_int_equal(m[0].lanes, 0);
    assert_int_equal(m[1].lanes, 0);
    /* Protected messages: no lane; required, the create says why. */
    for (int i = 0; i < 2; i++) {
        o[i] = with_transport(FTC_PG_TRANSPORT_AUTO);
        o[i].token = "lane-test";
        o[i].protect = FTC_PG_PROTECT_MAC;
    }
    create_pair(m, o);
    TK_OK(m[0].rc);
    assert_int_equal(m[0].lanes + m[1].lanes, 0);
    o[0].transport = FTC_PG_TRANSPORT_SHM;
    create_pair(m, o);
    assert_int_equal(m[0].rc, FTC_ENOTSUP);
    assert_non_null(strstr(m[0].msg, "protected"));
    assert_non_null(strstr(m[0].msg, "rank 1 (127.0.0.1:"));
    assert_int_equal(pgt_lane_segments(), 0);
}

static void transport_from_the_environment(void **state)
{
    (void)state;
    creator m[2];
    ftc_pg_opts o[2] = {with_transport(FTC_PG_TRANSPORT_DEFAULT),
                        with_transport(FTC_PG_TRANSPORT_DEFAULT)};
    setenv("FTC_PG_TRANSPORT", "tcp", 1);
    create_pair(m, o);
    TK_OK(m[0].rc);
    assert_int_equal(m[0].lanes + m[1].lanes, 0);
    setenv("FTC_PG_TRANSPORT", "sideways", 1);
    create_pair(m, o);
    assert_int_equal(m[0].rc, FTC_EINVAL);
    assert_non_null(strstr(m[0].msg, "FTC_PG_TRANSPORT='sideways'"));
    unsetenv("FTC_PG_TRANSPORT");
    o[0].transport = 9;
    o[1].transport = 9;
    create_pair(m, o);
    assert_int_equal(m[0].rc, FTC_EINVAL);
}

int main(int argc, char **argv)
{
    unsetenv("FTC_PG_TRANSPORT");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lanes_carry_every_size_and_vanish),
        cmocka_unit_test(forged_ring_contents_fail_the_op),
        cmocka_unit_test(a_peer_that_left_after_sending_is_read_to_the_end),
        cmocka_unit_test(an_abort_after_the_bytes_fails_the_next_operation),
        cmocka_unit_test(offers_that_are_not_lanes_are_refused),
        cmocka_unit_test(transport_is_chosen_per_pair),
        cmocka_unit_test(transport_from_the_environment),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
