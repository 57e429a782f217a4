/* The schedules' plans run by a simulated transport, in one process: every
 * rank's plan is built, then sends start, finish and are delivered in a
 * random order that respects each plan's dependencies and each channel's
 * order, like a transport with unbounded buffers that reads a send's
 * bytes at any moment before it completes. Checked: results bit for bit
 * against a reference, no deadlock, matching message lengths, no buffer
 * changed while a send of it was in flight, a message for every rank
 * even with nothing to move, and bytes crossing between hosts only along
 * columns. Layouts: several hosts
 * of several ranks, contiguous, interleaved and shuffled, several
 * streams, and layouts with no two levels (which run the flat plans).
 * Also the layout and the host key it is derived from. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg/pg_int.h"
#include "pg/reduce.h"
#include "pg/sched/sched.h"
#include "testkit.h"

#define MAXN 12

typedef struct sim_rank {
    ftc__plan plan;
    ftc__op op;
    ftc__scratch scratch;
    ftc__sched_hosts hosts;
    uint8_t *in, *out;
    size_t *counts;
    /* Per channel: the send in flight (started, not finished) and its
     * bytes as they were when it started; finished sends wait for their
     * receive in a FIFO of payloads. */
    bool *sending;
    uint8_t **snap;
    uint8_t ***fifo;
    size_t **fifo_len;
    uint32_t *fifo_head, *fifo_tail, *fifo_cap;
} sim_rank;

typedef struct sim {
    int n, streams;
    sim_rank r[MAXN];
    uint64_t rng;
} sim;

static uint64_t next_rand(sim *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static void push_payload(sim_rank *to, int chan, uint8_t *data, size_t len)
{
    if (to->fifo_tail[chan] == to->fifo_cap[chan]) {
        uint32_t cap = to->fifo_cap[chan] ? to->fifo_cap[chan] * 2 : 8;
        to->fifo[chan] = realloc(to->fifo[chan], cap * sizeof(uint8_t *));
        to->fifo_len[chan] = realloc(to->fifo_len[chan], cap * sizeof(size_t));
        assert_non_null(to->fifo[chan]);
        assert_non_null(to->fifo_len[chan]);
        to->fifo_cap[chan] = cap;
    }
    to->fifo[chan][to->fifo_tail[chan]] = data;
    to->fifo_len[chan][to->fifo_tail[chan]++] = len;
}

enum { START, FINISH, DELIVER };

typedef struct action {
    int kind, rank, chan;
} action;

/* Every action possible now. */
static int enabled(sim *s, action *a, int cap)
{
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        sim_rank *me = &s->r[i];
        for (int c = 0; c < s->n * s->streams && k < cap; c++) {
            ftc__plan_chan *pc = &me->plan.ch[c];
            if (me->sending[c]) {
                a[k++] = (action){FINISH, i, c};
            } else if (pc->sent < pc->nsends &&
                       ftc__xfer_ready(&me->plan, &pc->sends[pc->sent])) {
                a[k++] = (action){START, i, c};
            }
            if (pc->recvd < pc->nrecvs && me->fifo_head[c] < me->fifo_tail[c] &&
                ftc__xfer_ready(&me->plan, &pc->recvs[pc->recvd]) && k < cap) {
                a[k++] = (action){DELIVER, i, c};
            }
        }
    }
    return k;
}

static void run(sim *s, action *a)
{
    sim_rank *me = &s->r[a->rank];
    ftc__plan_chan *pc = &me->plan.ch[a->chan];
    int peer = a->chan / s->streams, stream = a->chan % s->streams;
    if (a->kind == START) {
        ftc__xfer *x = &pc->sends[pc->sent];
        me->snap[a->chan] = malloc(x->len + 1);
        assert_non_null(me->snap[a->chan]);
        if (x->len > 0) {
            memcpy(me->snap[a->chan], x->buf, x->len);
        }
        me->sending[a->chan] = true;
    } else if (a->kind == FINISH) {
        ftc__xfer *x = &pc->sends[pc->sent];
        if (x->len > 0 && memcmp(me->snap[a->chan], x->buf, x->len) != 0) {
            fail_msg("rank %d: the bytes of send %u to %d changed while it "
                     "was in flight",
                     a->rank, pc->sent, peer);
        }
        push_payload(&s->r[peer],
                     ftc__plan_chan_of(a->rank, stream, s->streams),
                     me->snap[a->chan], x->len);
        me->snap[a->chan] = NULL;
        me->sending[a->chan] = false;
        pc->sent++;
        me->plan.pending--;
    } else {
        ftc__xfer *x = &pc->recvs[pc->recvd];
        uint32_t h = me->fifo_head[a->chan]++;
        uint8_t *data = me->fifo[a->chan][h];
        size_t len = me->fifo_len[a->chan][h];
        if (len != x->len) {
            fail_msg("rank %d: receive %u from %d is %zu bytes, the send %zu",
                     a->rank, pc->recvd, peer, x->len, len);
        }
        size_t E = me->op.elem;
        if (x->a != NULL) {
            ftc__reduce(x->buf, x->a, data, len / E, me->plan.dtype,
                        me->plan.op);
            if (x->avg) {
                ftc__reduce_avg_finish(x->buf, len / E, me->plan.dtype,
                                       me->plan.size);
            }
        } else if (len > 0) {
            memcpy(x->buf, data, len);
        }
        free(data);
        pc->recvd++;
        me->plan.pending--;
    }
}

/* Runs every rank's plan to the end in a random order. */
static void execute(sim *s)
{
    enum { CAP = 4 * MAXN * MAXN * 4 };
    action a[CAP];
    for (;;) {
        int k = enabled(s, a, CAP);
        if (k == 0) {
            break;
        }
        run(s, &a[next_rand(s) % (uint64_t)k]);
    }
    for (int i = 0; i < s->n; i++) {
        if (s->r[i].plan.pending != 0) {
            fail_msg("rank %d: deadlock with %u messages left", i,
                     s->r[i].plan.pending);
        }
    }
}

typedef struct layout {
    int n;
    int host_of[MAXN]; /* the lowest rank of each rank's host */
} layout;

static const layout layouts[] = {
    {4, {0, 0, 2, 2}},                          /* 2 hosts x 2, contiguous */
    {4, {0, 1, 0, 1}},                          /* 2 x 2, interleaved */
    {6, {0, 1, 2, 0, 1, 2}},                    /* 3 x 2, interleaved */
    {6, {0, 0, 0, 3, 3, 3}},                    /* 2 x 3 */
    {8, {0, 1, 1, 0, 1, 0, 0, 1}},              /* 2 x 4, shuffled */
    {12, {0, 1, 2, 0, 4, 2, 1, 4, 0, 2, 4, 1}}, /* 4 x 3, shuffled */
    {5, {0, 0, 0, 3, 3}},                       /* uneven: flat */
    {3, {0, 1, 2}},                             /* a host per rank: flat */
};

enum {
    ALLREDUCE_SUM,
    ALLREDUCE_MAX,
    ALLREDUCE_AVG,
    ALLREDUCE_IN_PLACE,
    ALLGATHER,
    ALLGATHERV,
    BROADCAST,
    NCASES
};

static int32_t value_of(int rank, size_t i, int seed)
{
    return (int32_t)((rank * 7919 + (int)i * 31 + seed * 17) % 2001) - 1000;
}

static size_t v_count(int rank, size_t count)
{
    return count + (size_t)(rank % 3);
}

/* Sets up rank i's op of case kind over count elements. */
static void prepare(sim *s, int i, int kind, size_t count, int root, int seed)
{
    sim_rank *me = &s->r[i];
    bool gather = kind == ALLGATHER || kind == ALLGATHERV;
    size_t in_elems = kind == ALLGATHERV ? v_count(i, count) : count;
    size_t out_elems = count;
    if (gather) {
        out_elems = 0;
        for (int q = 0; q < s->n; q++) {
            out_elems += kind == ALLGATHERV ? v_count(q, count) : count;
        }
    }
    me->in = malloc(in_elems * 4 + 4);
    me->out = calloc(out_elems + 1, 4);
    assert_non_null(me->in);
    assert_non_null(me->out);
    for (size_t e = 0; e < in_elems; e++) {
        int32_t v = value_of(i, e, seed);
        if (kind == ALLREDUCE_AVG) {
            float f = (float)v;
            memcpy(me->in + e * 4, &f, 4);
        } else {
            memcpy(me->in + e * 4, &v, 4);
        }
    }
    if (kind == BROADCAST && i == root) {
        memcpy(me->out, me->in, count * 4);
    }
    me->counts = NULL;
    if (kind == ALLGATHERV) {
        me->counts = calloc((size_t)s->n, sizeof(size_t));
        assert_non_null(me->counts);
        for (int q = 0; q < s->n; q++) {
            me->counts[q] = v_count(q, count);
        }
    }
    static const int colls[NCASES] = {
        FTC__ALLREDUCE, FTC__ALLREDUCE,  FTC__ALLREDUCE, FTC__ALLREDUCE,
        FTC__ALLGATHER, FTC__ALLGATHERV, FTC__BROADCAST};
    if (kind == ALLREDUCE_IN_PLACE) {
        memcpy(me->out, me->in, count * 4);
    }
    me->op = (ftc__op){.coll = colls[kind],
                       .dtype = kind == ALLREDUCE_AVG ? FTC_DTYPE_F32
                                                      : FTC_DTYPE_I32,
                       .elem = 4,
                       .op = kind == ALLREDUCE_MAX   ? FTC_OP_MAX
                             : kind == ALLREDUCE_AVG ? FTC_OP_AVG
                                                     : FTC_OP_SUM,
                       .root = root,
                       /* AUTO must pick HIER for these (large) sizes. */
                       .algo = seed % 2 ? FTC_ALGO_HIER : FTC_ALGO_AUTO,
                       .in = kind == BROADCAST            ? NULL
                             : kind == ALLREDUCE_IN_PLACE ? me->out
                                                          : me->in,
                       .out = me->out,
                       .count = count,
                       .counts = me->counts};
}

/* The expected result of element e. */
static void expect(const sim *s, int kind, size_t count, int root, int seed,
                   int rank, uint8_t *want)
{
    if (kind == ALLGATHER || kind == ALLGATHERV) {
        size_t at = 0;
        for (int q = 0; q < s->n; q++) {
            size_t c = kind == ALLGATHERV ? v_count(q, count) : count;
            for (size_t e = 0; e < c; e++, at++) {
                int32_t v = value_of(q, e, seed);
                memcpy(want + at * 4, &v, 4);
            }
        }
        return;
    }
    (void)rank;
    for (size_t e = 0; e < count; e++) {
        int32_t acc =
            kind == BROADCAST ? value_of(root, e, seed) : value_of(0, e, seed);
        for (int q = 1; kind != BROADCAST && q < s->n; q++) {
            int32_t v = value_of(q, e, seed);
            acc = kind == ALLREDUCE_MAX ? (v > acc ? v : acc) : acc + v;
        }
        if (kind == ALLREDUCE_AVG) {
            float f = (float)acc / (float)s->n;
            memcpy(want + e * 4, &f, 4);
        } else {
            memcpy(want + e * 4, &acc, 4);
        }
    }
}

/* Where rank sits in a two-level layout. */
static void place_of(const ftc__sched_hosts *h, int rank, int *host, int *local)
{
    for (int k = 0; k < h->nhost * h->per_host; k++) {
        if (h->rank_at[k] == rank) {
            *host = k / h->per_host;
            *local = k % h->per_host;
        }
    }
}

/* On two levels, bytes cross between hosts only along columns (allreduce,
 * allgather) or once per host boundary (broadcast). */
static void check_crossings(const sim *s, int kind)
{
    const ftc__sched_hosts *h = &s->r[0].hosts;
    if (h->nhost == 0) {
        return;
    }
    int links = 0;
    for (int i = 0; i < s->n; i++) {
        int hi = 0, li = 0;
        place_of(h, i, &hi, &li);
        for (int peer = 0; peer < s->n; peer++) {
            int hp = 0, lp = 0;
            place_of(h, peer, &hp, &lp);
            bool sends = false;
            for (int st = 0; st < s->streams; st++) {
                int c = ftc__plan_chan_of(peer, st, s->streams);
                sends = sends || s->r[i].plan.ch[c].nsends > 0;
            }
            if (!sends || hp == hi) {
                continue;
            }
            links++;
            if (kind != BROADCAST && lp != li) {
                fail_msg("case %d: rank %d (index %d) sends to rank %d of "
                         "another host (index %d)",
                         kind, i, li, peer, lp);
            }
        }
    }
    if (kind == BROADCAST && links > h->nhost - 1) {
        fail_msg("broadcast: %d links between hosts, %d hosts", links,
                 h->nhost);
    }
}

static void check_case(sim *s, const layout *l, int kind, size_t count,
                       int root, int seed)
{
    for (int i = 0; i < s->n; i++) {
        prepare(s, i, kind, count, root, seed);
        ftc__sched_group sg = {.rank = i,
                               .size = s->n,
                               .streams = s->streams,
                               .segment_bytes = 8, /* two elements */
                               .small_bytes = 0,
                               .scratch = &s->r[i].scratch,
                               .hosts = &s->r[i].hosts};
        TK_OK(ftc__sched_build(&sg, &s->r[i].plan, &s->r[i].op));
    }
    /* AUTO takes the small algorithms for an empty buffer. */
    if (count > 0 || s->r[0].op.algo == FTC_ALGO_HIER) {
        check_crossings(s, kind);
    }
    /* Every rank exchanges something, even with nothing to move, so a
     * peer that is gone fails the call. */
    for (int i = 0; i < s->n; i++) {
        if (s->r[i].plan.pending == 0) {
            fail_msg("case %d, %zu elements: rank %d has no message", kind,
                     count, i);
        }
    }
    execute(s);
    size_t out_elems = s->n * (count + 2) + 1;
    uint8_t *want = calloc(out_elems, 4);
    assert_non_null(want);
    for (int i = 0; i < s->n; i++) {
        size_t bytes = count * 4;
        if (kind == ALLGATHER || kind == ALLGATHERV) {
            bytes = 0;
            for (int q = 0; q < s->n; q++) {
                bytes += (kind == ALLGATHERV ? v_count(q, count) : count) * 4;
            }
        }
        memset(want, 0, out_elems * 4);
        expect(s, kind, count, root, seed, i, want);
        if (memcmp(want, s->r[i].out, bytes) != 0) {
            fail_msg("%d ranks (host of rank 1: %d), %d streams, case %d, "
                     "%zu elements, root %d: rank %d's result is wrong",
                     l->n, l->host_of[1], s->streams, kind, count, root, i);
        }
        free(s->r[i].in);
        free(s->r[i].out);
        free(s->r[i].counts);
    }
    free(want);
}

static void sim_open(sim *s, const layout *l, int streams)
{
    memset(s, 0, sizeof(*s));
    s->n = l->n;
    s->streams = streams;
    s->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(l->n * 131 + streams);
    int nch = l->n * streams;
    for (int i = 0; i < l->n; i++) {
        sim_rank *me = &s->r[i];
        TK_OK(ftc__plan_init(&me->plan, nch));
        TK_OK(ftc__sched_hosts_init(&me->hosts, l->host_of, l->n, i));
        me->sending = calloc((size_t)nch, sizeof(bool));
        me->snap = calloc((size_t)nch, sizeof(uint8_t *));
        me->fifo = calloc((size_t)nch, sizeof(uint8_t **));
        me->fifo_len = calloc((size_t)nch, sizeof(size_t *));
        me->fifo_head = calloc((size_t)nch, sizeof(uint32_t));
        me->fifo_tail = calloc((size_t)nch, sizeof(uint32_t));
        me->fifo_cap = calloc((size_t)nch, sizeof(uint32_t));
        assert_true(me->sending && me->snap && me->fifo && me->fifo_len &&
                    me->fifo_head && me->fifo_tail && me->fifo_cap);
    }
}

static void sim_close(sim *s)
{
    for (int i = 0; i < s->n; i++) {
        sim_rank *me = &s->r[i];
        for (int c = 0; c < s->n * s->streams; c++) {
            free(me->fifo[c]);
            free(me->fifo_len[c]);
        }
        free(me->sending);
        free(me->snap);
        free(me->fifo);
        free(me->fifo_len);
        free(me->fifo_head);
        free(me->fifo_tail);
        free(me->fifo_cap);
        ftc__plan_free(&me->plan);
        ftc__scratch_free(&me->scratch);
        ftc__sched_hosts_free(&me->hosts);
    }
}

/* Every layout, 1 to 3 streams, every case, counts from 0 to more units
 * than ranks, every root of a broadcast, HIER named and chosen by AUTO. */
static void hierarchical_plans(void **state)
{
    (void)state;
    static const size_t counts[] = {0, 1, 2, 5, 13, 64};
    int seed = 0;
    for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
        for (int streams = 1; streams <= 3; streams++) {
            sim s;
            sim_open(&s, &layouts[li], streams);
            for (int kind = 0; kind < NCASES; kind++) {
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]);
                     c++) {
                    int roots = kind == BROADCAST ? s.n : 1;
                    for (int root = 0; root < roots; root++) {
                        check_case(&s, &layouts[li], kind, counts[c], root,
                                   ++seed);
                    }
                }
            }
            sim_close(&s);
        }
    }
}

/* The layout as ftc__sched_hosts_init derives it. */
static void host_layouts(void **state)
{
    (void)state;
    ftc__sched_hosts h;
    /* 4 x 3 shuffled: hosts in the order of their lowest ranks. */
    TK_OK(ftc__sched_hosts_init(&h, layouts[5].host_of, 12, 7));
    assert_int_equal(h.nhost, 4);
    assert_int_equal(h.per_host, 3);
    static const int want[12] = {0, 3, 8, 1, 6, 11, 2, 5, 9, 4, 7, 10};
    assert_memory_equal(h.rank_at, want, sizeof(want));
    assert_int_equal(h.host, 3); /* rank 7's host is rank 4's */
    assert_int_equal(h.local, 1);
    ftc__sched_hosts_free(&h);
    /* No two levels: uneven hosts, a host per rank, one host, and maps
     * that do not name each host by its lowest rank. */
    static const int flat[][4] = {
        {0, 0, 0, 3}, {0, 1, 2, 3}, {0, 0, 0, 0}, {1, 1, 2, 2}, {0, 0, 3, 2}};
    for (size_t i = 0; i < sizeof(flat) / sizeof(flat[0]); i++) {
        TK_OK(ftc__sched_hosts_init(&h, flat[i], 4, 0));
        assert_int_equal(h.nhost, 0);
        assert_null(h.rank_at);
    }
}

/* The host key: equal for equal FTC_PG_HOST_IDs on one machine and
 * network namespace, different for another id or another namespace. */
static void host_keys(void **state)
{
    (void)state;
    setenv("FTC_PG_HOST_ID", "a", 1);
    uint64_t a = ftc__pg_host_key();
    assert_true(a != 0);
    assert_true(a == ftc__pg_host_key());
    setenv("FTC_PG_HOST_ID", "b", 1);
    uint64_t b = ftc__pg_host_key();
    assert_true(b != a);
    /* A child in a network namespace of its own (as the many-hosts tests
     * make hosts) reports its key through a pipe. */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t k = unshare(CLONE_NEWNET) == 0 ? ftc__pg_host_key() : 0;
        _exit(write(fds[1], &k, sizeof(k)) == sizeof(k) ? 0 : 1);
    }
    uint64_t other = 0;
    assert_int_equal(read(fds[0], &other, sizeof(other)), sizeof(other));
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(fds[0]);
    close(fds[1]);
    assert_true(other != 0); /* 0: unshare failed (the suite runs as root) */
    assert_true(other != b);
    unsetenv("FTC_PG_HOST_ID");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_keys),
        cmocka_unit_test(host_layouts),
        cmocka_unit_test(hierarchical_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
