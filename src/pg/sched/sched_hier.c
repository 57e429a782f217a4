/* Hierarchical plans for groups whose ranks sit on several hosts, several
 * ranks each (ftc__sched_hosts): most bytes move between ranks of one
 * host (shared-memory lanes), and each rank carries only its share of
 * what crosses between hosts, over links that join one rank per host
 * (its "column": the ranks with the same index on every host).
 *
 * allreduce: reduce-scatter within the host, allreduce of the rank's
 * block along its column, allgather within the host. Each host's
 * traffic across hosts is 2(H-1)/H of the buffer, shared by its L ranks,
 * where a flat ring over ranks interleaved by host sends 2(N-1)/N of it
 * over every one of its links.
 * allgather(v): allgather along the column, then within the host.
 * broadcast: a pipelined chain that visits the root's host first, then
 * each other host in turn, so the buffer crosses between hosts H-1 times. */
#include "pg/sched/sched_int.h"

/* The buffer of an allreduce cut into units of one pipeline segment
 * each; unit u covers elements [u * seg, (u + 1) * seg) of it. Every
 * message carries one unit, so the message that last wrote a unit is
 * exactly what its next send waits for, whichever phase wrote it. */
typedef struct units {
    ftc__sched_ctx *x;
    size_t count;   /* elements */
    ftc__dep *last; /* per unit: the receive that last wrote it */
} units;

/* Units [lo, hi) split into k even parts: the bounds of part i. */
static size_t part_lo(size_t lo, size_t hi, int k, int i)
{
    return lo + (hi - lo) * (size_t)i / (size_t)k;
}

/* Units past the end are empty (see ftc__build_allreduce_hier). */
static size_t unit_len(const units *u, size_t i)
{
    size_t start = i * u->x->seg;
    if (start >= u->count) {
        return 0;
    }
    size_t n = u->count - start < u->x->seg ? u->count - start : u->x->seg;
    return n * u->x->E;
}

/* Every send and receive of a unit waits for the unit's last writer (a
 * unit not written yet waits for nothing). */
static void send_units(units *u, int peer, size_t lo, size_t hi,
                       const uint8_t *base)
{
    for (size_t i = lo; i < hi; i++) {
        ftc__plan_send(u->x->p, ftc__seg_chan(u->x, peer, i),
                       base + i * u->x->seg * u->x->E, unit_len(u, i),
                       u->last[i]);
    }
}

/* Receives units [lo, hi) from peer into out: reduced with a (the same
 * offsets) when a is not NULL, else copied. */
static void recv_units(units *u, int peer, size_t lo, size_t hi,
                       const uint8_t *a, bool avg)
{
    ftc__sched_ctx *x = u->x;
    for (size_t i = lo; i < hi; i++) {
        size_t o = i * x->seg * x->E;
        int ch = ftc__seg_chan(x, peer, i);
        uint32_t k =
            a == NULL ? ftc__plan_recv(x->p, ch, x->op->out + o, unit_len(u, i),
                                       u->last[i])
                      : ftc__plan_recv_reduce(x->p, ch, x->op->out + o, a + o,
                                              unit_len(u, i), u->last[i], avg);
        u->last[i] = ftc__after_recv(ch, k);
    }
}

/* A ring over n ranks (ring[i]; this rank is ring[me]) passing the parts
 * of units [lo, hi): reduce-scatter (reducing into out with a as this
 * rank's own values; afterwards this rank holds part me + 1 whole) or
 * allgather (this rank starts with part me + 1). */
static void ring_pass(units *u, const int *ring, int n, int me, size_t lo,
                      size_t hi, bool rs, const uint8_t *first_src,
                      const uint8_t *a, bool avg)
{
    int right = ring[ftc__mod(me + 1, n)], left = ring[ftc__mod(me - 1, n)];
    for (int s = 0; s < n - 1; s++) {
        int sp = ftc__mod(rs ? me - s : me + 1 - s, n);
        int rp = ftc__mod(rs ? me - s - 1 : me - s, n);
        send_units(u, right, part_lo(lo, hi, n, sp), part_lo(lo, hi, n, sp + 1),
                   s == 0 ? first_src : u->x->op->out);
        recv_units(u, left, part_lo(lo, hi, n, rp), part_lo(lo, hi, n, rp + 1),
                   rs ? a : NULL, avg && s == n - 2);
    }
}

int ftc__build_allreduce_hier(ftc__sched_ctx *x)
{
    const ftc__sched_hosts *h = x->hosts;
    ftc__op *op = x->op;
    int H = h->nhost, L = h->per_host;
    /* At least a unit per rank, empty ones past the end, so that every
     * step of every phase sends a message, as the flat plans do: a peer
     * that is gone fails the call even when the buffer is tiny or empty. */
    size_t nunits = (op->count + x->seg - 1) / x->seg;
    nunits = nunits < (size_t)x->size ? (size_t)x->size : nunits;
    units u = {.x = x, .count = op->count};
    u.last = ftc__calloc(nunits + 1, sizeof(*u.last));
    int *local = ftc__calloc((size_t)(L + H), sizeof(*local));
    if (u.last == NULL || local == NULL) {
        ftc__free(u.last);
        ftc__free(local);
        return ftc__seterr(FTC_ENOMEM, "hierarchical allreduce: out of memory");
    }
    for (size_t i = 0; i < nunits; i++) {
        u.last[i] = FTC__NO_DEP;
    }
    int *column = local + L;
    for (int i = 0; i < L; i++) {
        local[i] = h->rank_at[h->host * L + i];
    }
    for (int k = 0; k < H; k++) {
        column[k] = h->rank_at[k * L + h->local];
    }
    /* Within the host: this rank ends with block local + 1 reduced over
     * its host; its units split in H parts along the column; then the
     * blocks go round the host again. */
    ring_pass(&u, local, L, h->local, 0, nunits, true, op->in, op->in, false);
    int mine = ftc__mod(h->local + 1, L);
    size_t lo = part_lo(0, nunits, L, mine),
           hi = part_lo(0, nunits, L, mine + 1);
    ring_pass(&u, column, H, h->host, lo, hi, true, op->out, op->out,
              op->op == FTC_OP_AVG);
    ring_pass(&u, column, H, h->host, lo, hi, false, op->out, NULL, false);
    ring_pass(&u, local, L, h->local, 0, nunits, false, op->out, NULL, false);
    ftc__free(u.last);
    ftc__free(local);
    return x->p->error;
}

/* Sends or receives the block of rank b of an allgather, segment by
 * segment; last[b * maxseg + j] tracks each received segment. */
typedef struct blocks {
    ftc__sched_ctx *x;
    const size_t *cnt, *off;
    size_t maxseg;
    ftc__dep *last;
} blocks;

static void send_block(blocks *g, int peer, int b)
{
    ftc__sched_ctx *x = g->x;
    bool own = b == x->rank;
    const uint8_t *src = own ? x->op->in : x->op->out + g->off[b] * x->E;
    for (size_t j = 0; j < ftc__nseg(x, g->cnt[b]); j++) {
        ftc__plan_send(x->p, ftc__seg_chan(x, peer, j), src + j * x->seg * x->E,
                       ftc__seg_len(x, g->cnt[b], j) * x->E,
                       own ? FTC__NO_DEP : g->last[(size_t)b * g->maxseg + j]);
    }
}

static void recv_block(blocks *g, int peer, int b)
{
    ftc__sched_ctx *x = g->x;
    for (size_t j = 0; j < ftc__nseg(x, g->cnt[b]); j++) {
        int ch = ftc__seg_chan(x, peer, j);
        uint32_t k = ftc__plan_recv(
            x->p, ch, x->op->out + (g->off[b] + j * x->seg) * x->E,
            ftc__seg_len(x, g->cnt[b], j) * x->E, FTC__NO_DEP);
        g->last[(size_t)b * g->maxseg + j] = ftc__after_recv(ch, k);
    }
}

int ftc__build_allgather_hier(ftc__sched_ctx *x, const size_t *cnt,
                              const size_t *off)
{
    const ftc__sched_hosts *h = x->hosts;
    int H = h->nhost, L = h->per_host;
    blocks g = {.x = x, .cnt = cnt, .off = off, .maxseg = 1};
    for (int b = 0; b < x->size; b++) {
        size_t k = ftc__nseg(x, cnt[b]);
        g.maxseg = k > g.maxseg ? k : g.maxseg;
    }
    g.last = ftc__calloc((size_t)x->size * g.maxseg, sizeof(*g.last));
    if (g.last == NULL) {
        return ftc__seterr(FTC_ENOMEM, "hierarchical allgather: out of memory");
    }
    /* Along the column: this rank gathers the blocks of every rank with
     * its index, one host's block per step. */
    int right = h->rank_at[ftc__mod(h->host + 1, H) * L + h->local];
    int left = h->rank_at[ftc__mod(h->host - 1, H) * L + h->local];
    for (int s = 0; s < H - 1; s++) {
        send_block(&g, right,
                   h->rank_at[ftc__mod(h->host - s, H) * L + h->local]);
        recv_block(&g, left,
                   h->rank_at[ftc__mod(h->host - s - 1, H) * L + h->local]);
    }
    /* Within the host: whole columns, one per step. */
    right = h->rank_at[h->host * L + ftc__mod(h->local + 1, L)];
    left = h->rank_at[h->host * L + ftc__mod(h->local - 1, L)];
    for (int s = 0; s < L - 1; s++) {
        int sc = ftc__mod(h->local - s, L), rc = ftc__mod(h->local - s - 1, L);
        for (int k = 0; k < H; k++) {
            send_block(&g, right, h->rank_at[k * L + sc]);
            recv_block(&g, left, h->rank_at[k * L + rc]);
        }
    }
    ftc__free(g.last);
    return x->p->error;
}

int ftc__build_bcast_hier(ftc__sched_ctx *x)
{
    const ftc__sched_hosts *h = x->hosts;
    int H = h->nhost, L = h->per_host, root = x->op->root;
    /* The root's position (host, index) starts the chain; each host is
     * walked from the root's index on, hosts from the root's on. */
    int rh = 0, ri = 0;
    for (int k = 0; k < H * L; k++) {
        if (h->rank_at[k] == root) {
            rh = k / L;
            ri = k % L;
        }
    }
    int pos = ftc__mod(h->host - rh, H) * L + ftc__mod(h->local - ri, L);
    int prev = -1, next = -1;
    if (pos > 0) {
        int p = pos - 1;
        prev =
            h->rank_at[ftc__mod(rh + p / L, H) * L + ftc__mod(ri + p % L, L)];
    }
    if (pos + 1 < H * L) {
        int q = pos + 1;
        next =
            h->rank_at[ftc__mod(rh + q / L, H) * L + ftc__mod(ri + q % L, L)];
    }
    return ftc__build_bcast_chain_links(x, prev, next);
}

int ftc__sched_hosts_init(ftc__sched_hosts *h, const int *host_of, int size,
                          int rank)
{
    memset(h, 0, sizeof(*h));
    int *index = ftc__calloc((size_t)size, sizeof(*index)); /* host of r */
    int *fill = ftc__calloc((size_t)size, sizeof(*fill));   /* ranks of k */
    h->rank_at = ftc__calloc((size_t)size, sizeof(*h->rank_at));
    if (index == NULL || fill == NULL || h->rank_at == NULL) {
        ftc__free(index);
        ftc__free(fill);
        ftc__sched_hosts_free(h);
        return ftc__seterr(FTC_ENOMEM, "host layout: out of memory");
    }
    int nhost = 0;
    bool uniform = true;
    for (int r = 0; r < size; r++) {
        int first = host_of[r];
        uniform =
            uniform && first >= 0 && first <= r && host_of[first] == first;
        index[r] = !uniform ? 0 : first == r ? nhost++ : index[first];
        fill[index[r]]++;
    }
    int per_host = nhost > 0 ? size / nhost : 0;
    uniform = uniform && nhost >= 2 && per_host >= 2;
    for (int k = 0; uniform && k < nhost; k++) {
        uniform = fill[k] == per_host;
        fill[k] = 0;
    }
    for (int r = 0; uniform && r < size; r++) {
        int k = index[r];
        if (r == rank) {
            h->host = k;
            h->local = fill[k];
        }
        h->rank_at[k * per_host + fill[k]++] = r;
    }
    ftc__free(index);
    ftc__free(fill);
    if (!uniform) {
        ftc__sched_hosts_free(h);
        return 0;
    }
    h->nhost = nhost;
    h->per_host = per_host;
    return 0;
}

void ftc__sched_hosts_free(ftc__sched_hosts *h)
{
    ftc__free(h->rank_at);
    memset(h, 0, sizeof(*h));
}
