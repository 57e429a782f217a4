/* The child of a Baby group (the helper ftc-baby runs this and nothing
 * else): it takes its config and shared memory from the parent over
 * descriptor 3, builds the inner group through the store, answers hello,
 * and then turns each request of the ring into the same ftc_pg call on
 * the inner group, over the arena's bytes; each call's completion
 * callback puts the result in the completion ring.
 *
 * Tied to the parent: SIGKILL when the parent's spawning thread (and so
 * the process) ends (PR_SET_PDEATHSIG, set before anything else and
 * checked against the pid the parent wrote), and a thread that exits the
 * moment the set-up socket hangs up. That thread also beats the heartbeat
 * the parent watches. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "pg/baby/baby.h"
#include "pg/baby/baby_shm.h"
#include "pg/pg_int.h"
#include "store/client/endpoint.h"

/* The arena's bytes are handed between this child's threads through the
 * parent (a completion goes out, the parent frees the region, a later
 * request reuses it), which ThreadSanitizer cannot see: tell it that a
 * completion happens before every request read after it. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define ARENA_RELEASE() __tsan_release(&child.arena)
#define ARENA_ACQUIRE() __tsan_acquire(&child.arena)
#else
#define ARENA_RELEASE() ((void)0)
#define ARENA_ACQUIRE() ((void)0)
#endif

/* Exit statuses the parent reports. */
enum { EXIT_SETUP = 2, EXIT_ORPHAN = 3, EXIT_PROTOCOL = 4 };

/* One child serves one group: its state is the process's. */
static struct {
    ftc__baby_shm *shm;
    uint8_t *arena;
    ftc__baby_end req_end;  /* we consume */
    ftc__baby_end done_end; /* we produce, from completion callbacks */
    pthread_mutex_t done_mu;
    ftc_pg *pg;
    int rank;
    int64_t spin_ns;
} child = {.done_mu = PTHREAD_MUTEX_INITIALIZER};

static void *beat(void *arg)
{
    (void)arg;
    for (;;) {
        atomic_fetch_add(&child.shm->beat, 1);
        struct pollfd p = {.fd = FTC__BABY_CHILD_FD, .events = POLLIN};
        if (poll(&p, 1, FTC__BABY_BEAT_MS) > 0) {
            _exit(0); /* the parent hung up (or broke the protocol) */
        }
    }
    return NULL;
}

static void push_done(const ftc__baby_done *d)
{
    ARENA_RELEASE();
    pthread_mutex_lock(&child.done_mu);
    /* The parent keeps at most FTC__BABY_SLOTS requests in flight, so the
     * ring has room; a parent that breaks that is waited for, with
     * backoff, for as long as it lives. */
    for (int64_t ns = 1000; ftc__baby_push(&child.done_end, d) != 0;) {
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns < 1000000 ? ns * 2 : ns;
    }
    pthread_mutex_unlock(&child.done_mu);
}

static void fail_request(uint64_t id, int rc)
{
    ftc__baby_done d = {.id = id, .rc = rc, .source = -1};
    snprintf(d.msg, sizeof(d.msg), "%s", ftc_last_error());
    push_done(&d);
}

static void on_done(void *arg, ftc_work *w, int rc)
{
    ftc__baby_done d = {.id = (uint64_t)(uintptr_t)arg, .rc = rc, .source = -1};
    if (rc != 0) {
        ftc_work_error(w);
        snprintf(d.msg, sizeof(d.msg), "%s", ftc_last_error());
    } else {
        int src;
        if (ftc_work_source(w, &src) == 0) {
            d.source = src;
        }
    }
    push_done(&d);
}

/* The ftc_pg call a request stands for, on the arena's bytes. */
static int run(const ftc__baby_req *r)
{
    ftc_pg *pg = child.pg;
    uint8_t *a = child.arena;
    ftc_tensor in = ftc_tensor_cpu(a + r->send_off, r->send_count, r->dtype);
    ftc_tensor out = ftc_tensor_cpu(a + r->recv_off, r->recv_count, r->dtype);
    const size_t *counts = r->counts_off != FTC__BABY_NONE
                               ? (const size_t *)(a + r->counts_off)
                               : NULL;
    const size_t *rcounts = r->rcounts_off != FTC__BABY_NONE
                                ? (const size_t *)(a + r->rcounts_off)
                                : NULL;
    bool root = r->root == child.rank;
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = r->timeout_ms;
    o.algo = r->algo;
    o.done = on_done;
    o.done_arg = (void *)(uintptr_t)r->id;
    switch (r->coll) {
    case FTC_PG_COLL_ALLREDUCE:
        return ftc_pg_allreduce(pg, &in, &out, r->op, &o, NULL);
    case FTC_PG_COLL_BROADCAST:
        return ftc_pg_broadcast(pg, &out, r->root, &o, NULL);
    case FTC_PG_COLL_REDUCE:
        return ftc_pg_reduce(pg, &in, root ? &out : NULL, r->op, r->root, &o,
                             NULL);
    case FTC_PG_COLL_ALLGATHER:
        return ftc_pg_allgather(pg, &in, &out, &o, NULL);
    case FTC_PG_COLL_ALLGATHERV:
        return ftc_pg_allgatherv(pg, &in, &out, counts, &o, NULL);
    case FTC_PG_COLL_REDUCE_SCATTER:
        return ftc_pg_reduce_scatter(pg, &in, &out, r->op, &o, NULL);
    case FTC_PG_COLL_ALLTOALL:
        return ftc_pg_alltoall(pg, &in, &out, &o, NULL);
    case FTC_PG_COLL_ALLTOALLV:
        return ftc_pg_alltoallv(pg, &in, counts, &out, rcounts, &o, NULL);
    case FTC_PG_COLL_GATHER:
        return ftc_pg_gather(pg, &in, root ? &out : NULL, r->root, &o, NULL);
    case FTC_PG_COLL_SCATTER:
        return ftc_pg_scatter(pg, root ? &in : NULL, &out, r->root, &o, NULL);
    case FTC_PG_COLL_BARRIER:
        return ftc_pg_barrier(pg, &o, NULL);
    case FTC_PG_COLL_SEND:
        return ftc_pg_send(pg, &in, r->root, r->tag, &o, NULL);
    default: /* FTC_PG_COLL_RECV: ftc__baby_req_check allows no other */
        return ftc_pg_recv(pg, &out, r->root, r->tag, &o, NULL);
    }
}

static void serve(void)
{
    for (;;) {
        ftc__baby_req r;
        int got = ftc__baby_pop(&child.req_end, &r);
        if (got < 0) {
            _exit(EXIT_PROTOCOL);
        }
        if (got == 1 && r.coll == FTC__BABY_QUIT) {
            ftc_pg_destroy(child.pg);
            _exit(0);
        }
        if (got == 1) {
            ARENA_ACQUIRE();
            int rc = ftc__baby_req_check(&r, ftc_pg_size(child.pg));
            rc = rc != 0 ? rc : run(&r);
            if (rc != 0) {
                fail_request(r.id, rc);
            }
            continue;
        }
        int64_t end = ftc__now_ns() + child.spin_ns;
        while (ftc__now_ns() < end &&
               atomic_load_explicit(&child.req_end.ring->head,
                                    memory_order_acquire) ==
                   child.req_end.mine) {
            sched_yield();
        }
        if (ftc__baby_sleep_begin(&child.req_end)) {
            ftc__baby_awake(&child.req_end);
            continue;
        }
        struct pollfd p = {.fd = child.req_end.efd, .events = POLLIN};
        poll(&p, 1, -1); /* the parent's exit ends us in beat() */
        ftc__baby_awake(&child.req_end);
    }
}

static void inner_opts(const ftc__baby_config *c, ftc_pg_opts *o)
{
    ftc_pg_opts_init(o);
    o->timeout_ms = c->timeout_ms;
    o->connect_timeout_ms = c->connect_timeout_ms;
    o->epoch = c->epoch;
    o->host = c->host[0] != '\0' ? c->host : NULL;
    o->allreduce_algo = c->algos[0];
    o->allgather_algo = c->algos[1];
    o->reduce_scatter_algo = c->algos[2];
    o->broadcast_algo = c->algos[3];
    o->reduce_algo = c->algos[4];
    o->small_bytes = c->small_bytes;
    o->segment_bytes = c->segment_bytes;
    o->streams = c->streams;
    o->spin_us = c->spin_us;
    o->sndbuf_bytes = c->sndbuf_bytes;
    o->rcvbuf_bytes = c->rcvbuf_bytes;
    o->tcp_congestion = c->has_congestion ? c->congestion : NULL;
    o->max_message_bytes = c->max_message_bytes;
    o->max_unexpected_bytes = c->max_unexpected_bytes;
    o->token = c->token[0] != '\0' ? c->token : NULL;
    o->protect = c->protect;
    o->backend = c->backend;
}

static void endpoint(const ftc__baby_config *c, ftc__store_endpoint *ep)
{
    memset(ep, 0, sizeof(*ep));
    snprintf(ep->host, sizeof(ep->host), "%s", c->store_host);
    ep->port = c->store_port;
    ftc_store_client_opts_init(&ep->opts);
    ep->opts.dialect = c->store_dialect;
    ep->opts.connect_timeout_ms = c->store_connect_timeout_ms;
    ep->opts.timeout_ms = c->store_timeout_ms;
    ep->opts.max_value_bytes = c->store_max_value_bytes;
    snprintf(ep->token, sizeof(ep->token), "%s", c->store_token);
    snprintf(ep->view, sizeof(ep->view), "%s", c->store_view);
}

/* Maps the shared memory the parent sent (fds: FTC__BABY_NFDS): the
 * control segment, and the arena with the shared heap right after it, so
 * that a request's offset addresses either. */
static int attach(const int fds[FTC__BABY_NFDS])
{
    void *ctl = mmap(NULL, sizeof(ftc__baby_shm), PROT_READ | PROT_WRITE,
                     MAP_SHARED, fds[0], 0);
    uint8_t *space = mmap(NULL, FTC__BABY_SPACE_BYTES, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *arena = MAP_FAILED, *heap = MAP_FAILED;
    if (space != MAP_FAILED) {
        arena = mmap(space, FTC__BABY_ARENA_BYTES, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_FIXED, fds[1], 0);
        heap = mmap(space + FTC__BABY_ARENA_BYTES, FTC__BABY_HEAP_BYTES,
                    PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fds[4], 0);
    }
    close(fds[0]);
    close(fds[1]);
    close(fds[4]);
    if (ctl == MAP_FAILED || arena == MAP_FAILED || heap == MAP_FAILED) {
        return ftc__seterr_errno(errno, "baby child: mmap");
    }
    child.shm = ctl;
    child.arena = space;
    if (child.shm->magic != FTC__BABY_MAGIC ||
        child.shm->version != FTC__BABY_VERSION ||
        child.shm->slots != FTC__BABY_SLOTS) {
        return ftc__seterr(FTC_EPROTO, "baby child: foreign control segment");
    }
    child.req_end = (ftc__baby_end){.ring = &child.shm->req_ring,
                                    .slots = child.shm->req,
                                    .record = sizeof(ftc__baby_req),
                                    .efd = fds[2]};
    child.done_end = (ftc__baby_end){.ring = &child.shm->done_ring,
                                     .slots = child.shm->done,
                                     .record = sizeof(ftc__baby_done),
                                     .efd = fds[3]};
    return 0;
}

int ftc__baby_child_main(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Nothing of the parent's but descriptors 0-2 and the socket. */
    close_range(FTC__BABY_CHILD_FD + 1, ~0u, 0);
    static ftc__baby_config c;
    int fds[FTC__BABY_NFDS];
    int rc = ftc__baby_recv(FTC__BABY_CHILD_FD, &c, sizeof(c), fds,
                            FTC__BABY_NFDS, ftc__deadline_in_ms(60000), -1);
    if (rc != 0) {
        return EXIT_SETUP;
    }
    rc = ftc__baby_config_check(&c);
    if (rc == 0 && getppid() != c.parent_pid) {
        return EXIT_ORPHAN; /* the parent died before PDEATHSIG was set */
    }
    rc = rc != 0 ? rc : attach(fds);
    pthread_t t;
    rc = rc != 0 ? rc : ftc__thread_start(&t, "ftc-baby-beat", beat, NULL);
    ftc_store_client *conn = NULL, *store = NULL;
    ftc__store_endpoint ep;
    if (rc == 0) {
        endpoint(&c, &ep);
        rc = ftc__store_client_reach(&ep, &conn, &store);
    }
    ftc_pg_opts o;
    inner_opts(&c, &o);
    if (rc == 0) {
        o.connect_timeout_ms =
            c.create_ms < o.connect_timeout_ms || o.connect_timeout_ms < 0
                ? c.create_ms
                : o.connect_timeout_ms;
        rc = ftc_pg_create(store, c.prefix, c.rank, c.size, &o, &child.pg);
    }
    if (store != conn) {
        ftc_store_client_close(store);
    }
    ftc_store_client_close(conn);
    ftc__baby_hello h = {.magic = FTC__BABY_MAGIC, .rc = rc, .pid = getpid()};
    snprintf(h.msg, sizeof(h.msg), "%s", rc != 0 ? ftc_last_error() : "");
    if (ftc__baby_send(FTC__BABY_CHILD_FD, &h, sizeof(h), NULL, 0,
                       ftc__deadline_in_ms(10000)) != 0 ||
        rc != 0) {
        return EXIT_SETUP;
    }
    child.rank = c.rank;
    child.spin_ns = ftc__pg_spin_ns(&o, 2 * c.size);
    serve();
    return 0;
}
