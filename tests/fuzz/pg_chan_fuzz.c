/* libFuzzer target for the data plane's reader: any bytes arriving on a
 * collective connection and on a side channel of a 2-rank group (rank 0's
 * view), with an allreduce expecting three 16-byte messages and a recv
 * posted. Every header check, length limit, match and failure path runs,
 * an ABORT's list of blamed ranks included; nothing may crash, leak, or
 * touch memory outside the plan's buffers, and whatever arrives, rank 0
 * never blames itself nor a rank outside the group. The first byte
 * splits the input between the two connections. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pg/tcp/tcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes bytes into the peer's end and closes it, so our end reads them
 * and then the end of the stream. */
static int feed(const uint8_t *p, size_t n)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) {
        abort();
    }
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    if (n > 0 && write(sv[1], p, n) != (ssize_t)n) {
        abort();
    }
    close(sv[1]);
    return sv[0];
}

static ftc__chan *chan_init(ftc__chan *c, int peer, int stream, int fd)
{
    c->fd = fd;
    c->peer = peer;
    c->stream = stream;
    snprintf(c->name, sizeof(c->name), "rank %d (fuzz)", peer);
    c->stage = ftc__malloc(FTC__STAGE_CAP);
    c->readable = c->writable = true;
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        ftc_log_set_level(FTC_LOG_OFF);
        quiet = 1;
    }
    size_t split = size > 0 ? (size_t)data[0] * size / 256 : 0;
    const uint8_t *rest = size > 0 ? data + 1 : data;
    size_t nrest = size > 0 ? size - 1 : 0;
    split = split > nrest ? nrest : split;

    ftc_pg pg;
    memset(&pg, 0, sizeof(pg));
    ftc_pg_opts_init(&pg.opts);
    pg.opts.max_message_bytes = 4096;
    pg.opts.max_unexpected_bytes = 8192;
    ftc__tcp g;
    memset(&g, 0, sizeof(g));
    g.pg = &pg;
    g.rank = 0;
    g.size = 2;
    g.streams = 1;
    g.group_id = 0x1122334455667788ull;
    g.epoch = 3;
    g.inbox_tail = &g.inbox;
    g.queue_tail = &g.queue;
    g.cbq_tail = &g.cbq;
    g.unexp_tail = &g.unexp;
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.user_cv, NULL);
    ftc__chan coll[2], side[2];
    memset(coll, 0, sizeof(coll));
    memset(side, 0, sizeof(side));
    coll[0].fd = side[0].fd = -1;
    g.coll = coll;
    g.side = side;
    bool pong[2] = {true, false}, blame[2] = {false, false};
    bool held[2] = {false, false};
    g.pong = pong;
    g.blame = blame;
    g.held_abort.blame = held;
    chan_init(&coll[1], 1, 0, feed(rest, split));
    chan_init(&side[1], 1, -1, feed(rest + split, nrest - split));

    /* The current collective: an f32 sum allreduce receiving three
     * 16-byte messages from rank 1, the last one reduced in place. */
    static float out[12], in[12];
    ftc__plan_init(&g.plan, 2);
    ftc__plan_reset(&g.plan, FTC_DTYPE_F32, FTC_OP_SUM, 2);
    ftc__plan_recv(&g.plan, 1, out, 16, FTC__NO_DEP);
    ftc__plan_recv(&g.plan, 1, out + 4, 16, FTC__NO_DEP);
    ftc__plan_recv_reduce(&g.plan, 1, out + 8, in + 8, 16,
                          ftc__after_recv(1, 1), true);
    ftc__op *cur = ftc__calloc(1, sizeof(*cur));
    cur->coll = FTC__ALLREDUCE;
    cur->seq = 2;
    g.cur = cur;
    /* A posted recv of 8 bytes, any source, tag 5. */
    static uint8_t rbuf[8];
    ftc__op *recv = ftc__calloc(1, sizeof(*recv));
    recv->coll = FTC__RECV;
    recv->root = FTC_PG_ANY_SOURCE;
    recv->tag = 5;
    recv->out = rbuf;
    recv->count = 8;
    recv->elem = 1;
    g.posted = recv;

    /* As the engine's pump: a held ABORT fails the group once the
     * collective channel stops moving. */
    for (int round = 0; round < 64 && !g.failed; round++) {
        bool moved = false;
        if (g.cur != NULL) {
            moved |= ftc__chan_pump_coll(&g, &coll[1]);
        }
        if (!moved) {
            ftc__tcp_apply_held_abort(&g);
        }
        moved |= ftc__chan_pump_side(&g, &side[1]);
        moved |= ftc__p2p_match_unexpected(&g);
        if (!moved) {
            break;
        }
    }
    ftc__tcp_apply_held_abort(&g);

    /* Only rank 1 can be to blame, and only once the group failed. */
    if (blame[0] || (blame[1] && !g.failed)) {
        abort();
    }
    ftc__p2p_fail_all(&g, FTC_ECANCELED, "fuzz over");
    if (g.cur != NULL) {
        ftc__tcp_op_done(&g, g.cur, FTC_ECANCELED, "fuzz over");
    }
    while (g.done != NULL) {
        ftc__op *op = g.done;
        g.done = op->next;
        ftc__op_free(op);
    }
    ftc__p2p_free(&g);
    ftc__plan_free(&g.plan);
    ftc__chan_close(&coll[1]);
    ftc__chan_close(&side[1]);
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.user_cv);
    return 0;
}
