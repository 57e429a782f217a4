/* The plan of a collective: per channel, the ordered lists of messages to
 * send and receive, each waiting on at most one earlier message of the
 * plan. The schedules (sched.h) build it; a transport runs it (the tcp
 * backend over its connections and shared-memory lanes). Both ends of a
 * channel build the same lists, so the k-th send of A to B is the k-th
 * receive of B from A. Channel c of a group with s streams per pair is
 * stream c % s to peer c / s. */
#ifndef FTC_PG_SCHED_PLAN_H
#define FTC_PG_SCHED_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One message of a collective on one channel. Sends and receives on a
 * channel happen in list order; both ends build the same lists, so the
 * k-th send of A to B is the k-th receive of B from A. */
typedef struct ftc__xfer {
    uint8_t *buf;       /* send: source; recv: destination */
    const uint8_t *a;   /* recv: reduce as buf = a op received; NULL: copy */
    size_t len;         /* bytes */
    int32_t dep_chan;   /* -1: ready at once; else wait for ... */
    uint32_t dep_count; /* ... this many sends/recvs done on dep_chan */
    uint8_t dep_send;   /* 1: sends; 0: recvs */
    uint8_t avg;        /* recv: divide by the group size after reducing */
} ftc__xfer;

typedef struct ftc__dep {
    int32_t chan;
    uint32_t count;
    uint8_t send;
} ftc__dep;

#define FTC__NO_DEP ((ftc__dep){-1, 0, 0})

static inline ftc__dep ftc__after_recv(int chan, uint32_t index)
{
    return (ftc__dep){chan, index + 1, 0};
}

static inline ftc__dep ftc__after_send(int chan, uint32_t index)
{
    return (ftc__dep){chan, index + 1, 1};
}

typedef struct ftc__plan_chan {
    ftc__xfer *sends;
    ftc__xfer *recvs;
    uint32_t nsends, sends_cap;
    uint32_t nrecvs, recvs_cap;
    uint32_t sent, recvd; /* done so far */
    size_t tmp_need;      /* largest reducing receive */
    bool active;
} ftc__plan_chan;

typedef struct ftc__plan {
    ftc__plan_chan *ch; /* one per collective channel */
    int nch;
    int *active; /* channels with messages, in first-use order */
    int nactive;
    uint32_t pending; /* messages not done */
    int dtype, op, size;
    /* Set by the builder when it cannot allocate. */
    int error;
} ftc__plan;

static inline int ftc__plan_chan_of(int peer, int stream, int streams)
{
    return peer * streams + stream;
}

int ftc__plan_init(ftc__plan *p, int nch);
void ftc__plan_free(ftc__plan *p);
void ftc__plan_reset(ftc__plan *p, int dtype, int op, int size);
/* Append a message; return its index on the channel (deps refer to it).
 * Errors latch in p->error. */
uint32_t ftc__plan_send(ftc__plan *p, int chan, const void *src, size_t len,
                        ftc__dep dep);
uint32_t ftc__plan_recv(ftc__plan *p, int chan, void *dst, size_t len,
                        ftc__dep dep);
uint32_t ftc__plan_recv_reduce(ftc__plan *p, int chan, void *dst, const void *a,
                               size_t len, ftc__dep dep, bool avg);
/* Whether the message x waits for nothing more. */
bool ftc__xfer_ready(const ftc__plan *p, const ftc__xfer *x);

#endif
