/* The Baby backend's shared state between a group's parent process and
 * its child (docs/protocol.md, "Baby process groups"):
 *
 * - the control segment, one memfd: a header, the child's heartbeat, and
 *   two single-producer single-consumer rings of fixed-size records,
 *   requests (parent to child) and completions (child to parent);
 * - the arena, a second memfd mapped at the same size in both: the staged
 *   buffers of the requests in flight, addressed by offset;
 * - the process's shared heap (heap.h), mapped by the child right after
 *   the arena: buffers the program allocated there cross without a copy;
 * - one eventfd per ring, written by the producer only when the consumer
 *   said it sleeps;
 * - a unix socket pair: the set-up messages (with the four descriptors),
 *   and liveness (either end sees the other's exit as a hang-up).
 *
 * Neither side trusts what the other wrote in shared memory: a consumer
 * keeps its own copy of the ring's tail, copies each record out before
 * reading it, and checks every field (baby_check.c). */
#ifndef FTC_PG_BABY_SHM_H
#define FTC_PG_BABY_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ftc/base.h"

#define FTC__BABY_MAGIC 0x3159424143544646ull /* "FFTCBAY1" */
#define FTC__BABY_VERSION 2u
/* Slots per ring (a power of two). */
#define FTC__BABY_SLOTS 1024u
/* Longest completion message, with its NUL. */
#define FTC__BABY_MSG_MAX 400
/* Address space of the arena in both processes. Pages exist only where
 * requests staged bytes (docs/decisions.md, "pg: Baby process groups"). */
#define FTC__BABY_ARENA_BYTES ((uint64_t)1 << 36)
/* Address space of the process's shared heap (ftc_pg_mem_alloc), which
 * the child maps right after the arena: a request's offsets address
 * both, arena first. */
#define FTC__BABY_HEAP_BYTES ((uint64_t)1 << 36)
#define FTC__BABY_SPACE_BYTES (FTC__BABY_ARENA_BYTES + FTC__BABY_HEAP_BYTES)
/* "No array" for the count offsets of a request. */
#define FTC__BABY_NONE UINT64_MAX
/* Descriptors sent with the config, in this order: the control memfd,
 * the arena memfd, the request ring's eventfd, the completion ring's
 * eventfd, the shared heap's memfd. */
#define FTC__BABY_NFDS 5
/* How often the child beats (ms). */
#define FTC__BABY_BEAT_MS 20

/* The coll of the request that ends the child: it destroys the inner
 * group (which tells its peers it leaves) and exits. */
#define FTC__BABY_QUIT 0

/* One collective or send/recv, in the ftc_pg_request terms, with its
 * buffers as arena offsets (send_off == recv_off: in place). */
typedef struct ftc__baby_req {
    uint64_t id; /* the parent's, increasing */
    int32_t coll;
    int32_t dtype;
    int32_t op;
    int32_t root;
    int32_t algo;
    uint32_t tag;
    int64_t timeout_ms; /* FTC_TIMEOUT_INFINITE: none */
    uint64_t send_off;
    uint64_t send_count;
    uint64_t recv_off;
    uint64_t recv_count;
    uint64_t counts_off;  /* size uint64 send counts, or FTC__BABY_NONE */
    uint64_t rcounts_off; /* size uint64 receive counts, or NONE */
} ftc__baby_req;

typedef struct ftc__baby_done {
    uint64_t id;
    int32_t rc;     /* 0 or a negative FTC_E* */
    int32_t source; /* recv: the sender */
    char msg[FTC__BABY_MSG_MAX];
} ftc__baby_done;

/* The indices of one ring, each on its own cache line. */
typedef struct ftc__baby_ring {
    _Atomic uint64_t head; /* records written (producer) */
    char pad0[56];
    _Atomic uint64_t tail; /* records consumed (consumer) */
    char pad1[56];
    _Atomic uint32_t sleeping; /* consumer: "write my eventfd" */
    char pad2[60];
} ftc__baby_ring;

typedef struct ftc__baby_shm {
    uint64_t magic;
    uint32_t version;
    uint32_t slots;
    _Atomic uint64_t beat; /* the child's heartbeat counter */
    char pad[40];
    ftc__baby_ring req_ring;
    ftc__baby_ring done_ring;
    ftc__baby_req req[FTC__BABY_SLOTS];
    ftc__baby_done done[FTC__BABY_SLOTS];
} ftc__baby_shm;

/* One end of a ring: the shared indices and slots, this side's private
 * copy of its own index, and the eventfd of the consumer. */
typedef struct ftc__baby_end {
    ftc__baby_ring *ring;
    void *slots;
    size_t record; /* bytes per slot */
    uint64_t mine; /* producer: head; consumer: tail */
    int efd;       /* the consumer's eventfd */
} ftc__baby_end;

/* Producer: appends rec and wakes a sleeping consumer. 0, or 1 when the
 * ring is full (nothing written). */
int ftc__baby_push(ftc__baby_end *e, const void *rec);
/* Consumer: copies the next record into rec. 1 when it did, 0 when the
 * ring is empty, FTC_EPROTO when the producer's head is impossible (ahead
 * by more than the ring, or behind). */
int ftc__baby_pop(ftc__baby_end *e, void *rec);
/* Consumer: declares it sleeps, then says whether anything is there (the
 * caller then must not sleep and calls ftc__baby_awake). */
int ftc__baby_sleep_begin(ftc__baby_end *e);
/* Consumer: back from sleep: clears the flag and drains the eventfd. */
void ftc__baby_awake(ftc__baby_end *e);

/* Set-up messages on the socket. */
#define FTC__BABY_HOST_MAX 256
#define FTC__BABY_PREFIX_MAX 512
#define FTC__BABY_TOKEN_MAX 1024

/* What the child needs to build the inner group (parent to child, with
 * the control memfd, the arena memfd and the two eventfds attached). */
typedef struct ftc__baby_config {
    uint64_t magic;
    uint32_t version;
    int32_t parent_pid;
    int32_t rank;
    int32_t size;
    uint64_t epoch;
    int64_t create_ms; /* time left for the inner create */
    /* The store: address, client options and view. */
    char store_host[FTC__BABY_HOST_MAX];
    int32_t store_port;
    int32_t store_dialect;
    int64_t store_connect_timeout_ms;
    int64_t store_timeout_ms;
    uint64_t store_max_value_bytes;
    char store_view[FTC__BABY_PREFIX_MAX];
    char store_token[FTC__BABY_TOKEN_MAX]; /* "" for none */
    char prefix[FTC__BABY_PREFIX_MAX];     /* the inner group's */
    char backend[32];                      /* the inner backend */
    /* ftc_pg_opts of the inner group (strings: "" is NULL). */
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    int32_t algos[5]; /* allreduce, allgather, reduce_scatter, bcast, reduce */
    int32_t streams;
    int32_t spin_us;
    int32_t sndbuf_bytes;
    int32_t rcvbuf_bytes;
    int32_t has_congestion;
    uint64_t small_bytes;
    uint64_t segment_bytes;
    uint64_t max_message_bytes;
    uint64_t max_unexpected_bytes;
    char host[FTC__BABY_HOST_MAX];
    char congestion[32];
    char token[FTC__BABY_TOKEN_MAX];
    int32_t protect; /* ftc_pg_opts.protect, resolved */
} ftc__baby_config;

/* The child's answer once the inner group exists (or failed). */
typedef struct ftc__baby_hello {
    uint64_t magic;
    int32_t rc;
    int32_t pid;
    char msg[FTC__BABY_MSG_MAX];
} ftc__baby_hello;

/* Checks a received config: magic, version, terminated strings, ranges.
 * 0 or FTC_EPROTO with a message naming the field. */
int ftc__baby_config_check(const ftc__baby_config *c);

/* Checks a request against the arena and the group size (the child's
 * side): every buffer and count array inside the arena, counts that do
 * not overflow. 0 or FTC_EPROTO naming the field. */
int ftc__baby_req_check(const ftc__baby_req *r, int size);

/* Bytes of dtype elements, 0 for an unknown dtype. */
size_t ftc__baby_elem(int dtype);

#endif
