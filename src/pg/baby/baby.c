/* The Baby backend, parent side: "baby-<inner>" runs the inner backend's
 * group in a child process (the helper ftc-baby, child.c) and looks
 * exactly like the inner backend to the caller. A request's buffers are
 * staged through the arena both processes map; its descriptor goes
 * through the request ring; the watcher thread (watch.c) completes it.
 * Abort is SIGKILL of the child: whatever the inner library is stuck in
 * ends with the process, and every pending work fails at once.
 * Choices and costs: docs/decisions.md, "pg: Baby process groups". */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg/baby/parent.h"

/* How long the inner create may take beyond the group's own deadline
 * before the parent gives up on the child. */
#define CREATE_GRACE_MS 2000
/* How long a destroyed group's child may take to leave its group. */
#define QUIT_MS 2000
/* The default heartbeat timeout (FTC_PG_BABY_HANG_MS overrides). */
#define HANG_MS_DEFAULT 3000

static int inner_name(const ftc_pg_opts *opts, char *out, size_t cap)
{
    const char *name = opts->backend != NULL ? opts->backend : "";
    size_t n = strlen(FTC__BABY_PREFIX);
    if (strncmp(name, FTC__BABY_PREFIX, n) != 0 || name[n] == '\0') {
        return ftc__seterr(FTC_EINVAL, "baby: '%s' names no inner backend",
                           name);
    }
    snprintf(out, cap, "%s", name + n);
    return 0;
}

static int64_t hang_ns(void)
{
    ftc__pg_env e;
    ftc__pg_env_read(&e);
    char *end = NULL;
    long long ms =
        e.baby_hang_ms != NULL ? strtoll(e.baby_hang_ms, &end, 10) : 0;
    if (end != NULL && *end != '\0') {
        ms = 0; /* not a number: the default */
    }
    return (ms > 0 ? ms : HANG_MS_DEFAULT) * 1000000LL;
}

/* The store the child reconnects to: the caller's for ftc_pg_create, the
 * parent group's for a subgroup (whose parent must be a Baby group). */
static int store_of(const ftc_pg_backend_create_args *a,
                    ftc__store_endpoint *out)
{
    if (a->store != NULL) {
        return ftc__store_client_endpoint(a->store, out);
    }
    const ftc_pg *parent = a->rendezvous != NULL ? a->rendezvous->parent : NULL;
    if (parent != NULL && parent->ops->create == ftc__baby_backend.create) {
        *out = ((const baby *)parent->impl)->store;
        return 0;
    }
    return ftc__seterr(FTC_ENOTSUP,
                       "baby: a subgroup on a Baby backend needs a Baby "
                       "parent group (its child reaches the store through "
                       "the parent's), not '%s'",
                       parent != NULL ? parent->backend : "?");
}

static int fill_config(const ftc_pg_backend_create_args *a, const baby *b,
                       const char *inner, ftc__baby_config *c)
{
    const ftc_pg_opts *o = a->opts;
    memset(c, 0, sizeof(*c));
    c->magic = FTC__BABY_MAGIC;
    c->version = FTC__BABY_VERSION;
    c->parent_pid = (int32_t)getpid();
    c->rank = a->rank;
    c->size = a->size;
    c->epoch = a->epoch;
    c->create_ms = ftc__deadline_left_ms((ftc__deadline){a->deadline_ns});
    snprintf(c->store_host, sizeof(c->store_host), "%s", b->store.host);
    c->store_port = b->store.port;
    c->store_dialect = b->store.opts.dialect;
    c->store_connect_timeout_ms = b->store.opts.connect_timeout_ms;
    c->store_timeout_ms = b->store.opts.timeout_ms;
    c->store_max_value_bytes = b->store.opts.max_value_bytes;
    snprintf(c->store_view, sizeof(c->store_view), "%s", b->store.view);
    int n = snprintf(c->prefix, sizeof(c->prefix), "%s/baby", a->prefix);
    snprintf(c->backend, sizeof(c->backend), "%s", inner);
    c->timeout_ms = o->timeout_ms;
    c->connect_timeout_ms = o->connect_timeout_ms;
    c->algos[0] = o->allreduce_algo;
    c->algos[1] = o->allgather_algo;
    c->algos[2] = o->reduce_scatter_algo;
    c->algos[3] = o->broadcast_algo;
    c->algos[4] = o->reduce_algo;
    c->streams = o->streams;
    c->spin_us = o->spin_us;
    c->sndbuf_bytes = o->sndbuf_bytes;
    c->rcvbuf_bytes = o->rcvbuf_bytes;
    c->has_congestion = o->tcp_congestion != NULL;
    c->small_bytes = o->small_bytes;
    c->segment_bytes = o->segment_bytes;
    c->max_message_bytes = o->max_message_bytes;
    c->max_unexpected_bytes = o->max_unexpected_bytes;
    snprintf(c->host, sizeof(c->host), "%s", o->host != NULL ? o->host : "");
    snprintf(c->congestion, sizeof(c->congestion), "%s",
             o->tcp_congestion != NULL ? o->tcp_congestion : "");
    const char *token = o->token != NULL ? o->token : "";
    if ((size_t)n >= sizeof(c->prefix) || strlen(token) >= sizeof(c->token)) {
        return ftc__seterr(FTC_EINVAL,
                           "baby: the prefix (%zu bytes) or the token (%zu) "
                           "is too long (at most %zu and %zu)",
                           strlen(a->prefix), strlen(token),
                           sizeof(c->prefix) - 6, sizeof(c->token) - 1);
    }
    snprintf(c->token, sizeof(c->token), "%s", token);
    return 0;
}

/* Closes and unmaps what create made; kills and reaps a child. */
static void release(baby *b)
{
    if (b->pid > 0) {
        kill(b->pid, SIGKILL);
        while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        b->pid = -1;
    }
    if (b->shm != NULL) {
        munmap(b->shm, sizeof(*b->shm));
    }
    if (b->arena != NULL) {
        munmap(b->arena, FTC__BABY_ARENA_BYTES);
    }
    int fds[] = {b->sock, b->efd_req, b->efd_done};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    ftc__free(b->regions);
    ftc__free(b);
}

static void *map(int fd, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The segments, eventfds and socket; fds[] gets what the child is sent
 * (control memfd, arena memfd, its eventfd, ours) and child_sock its end. */
static int make_channels(baby *b, int fds[4], int *child_sock)
{
    int sp[2] = {-1, -1};
    fds[0] = memfd_create("ftc-baby-ctl", MFD_CLOEXEC);
    fds[1] = memfd_create("ftc-baby-arena", MFD_CLOEXEC);
    b->efd_req = fds[2] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    b->efd_done = fds[3] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || fds[3] < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0 ||
        ftruncate(fds[0], sizeof(ftc__baby_shm)) != 0 ||
        ftruncate(fds[1], (off_t)FTC__BABY_ARENA_BYTES) != 0 ||
        (b->shm = map(fds[0], sizeof(ftc__baby_shm))) == NULL ||
        (b->arena = map(fds[1], FTC__BABY_ARENA_BYTES)) == NULL) {
        int e = errno;
        if (sp[0] >= 0) {
            close(sp[0]);
            close(sp[1]);
        }
        return ftc__seterr_errno(e, "%s: shared memory, eventfds or socket",
                                 b->name);
    }
    b->sock = sp[0];
    *child_sock = sp[1];
    b->shm->magic = FTC__BABY_MAGIC;
    b->shm->version = FTC__BABY_VERSION;
    b->shm->slots = FTC__BABY_SLOTS;
    b->req_end = (ftc__baby_end){.ring = &b->shm->req_ring,
                                 .slots = b->shm->req,
                                 .record = sizeof(ftc__baby_req),
                                 .efd = b->efd_req};
    b->done_end = (ftc__baby_end){.ring = &b->shm->done_ring,
                                  .slots = b->shm->done,
                                  .record = sizeof(ftc__baby_done),
                                  .efd = b->efd_done};
    return 0;
}

/* Starts the child, hands it the config, waits for its hello. */
static int start_child(baby *b, const ftc__baby_config *c, const int fds[4],
                       int child_sock, ftc__deadline dl)
{
    char path[1024];
    int rc = ftc__baby_helper(path, sizeof(path));
    if (rc == 0) {
        rc = ftc__baby_spawn(path, child_sock, &b->pid);
    }
    close(child_sock);
    if (rc == 0) {
        rc = ftc__baby_send(b->sock, c, sizeof(*c), fds, 4, dl);
    }
    ftc__baby_hello h;
    if (rc == 0) {
        ftc__deadline late = {dl.ns == INT64_MAX
                                  ? INT64_MAX
                                  : dl.ns + CREATE_GRACE_MS * 1000000LL};
        rc = ftc__baby_recv(b->sock, &h, sizeof(h), NULL, 0, late);
    }
    if (rc == FTC_ECLOSED) {
        int status = 0;
        while (waitpid(b->pid, &status, 0) < 0 && errno == EINTR) {
        }
        b->pid = -1;
        char how[160];
        ftc__baby_describe_status(status, how, sizeof(how));
        return ftc__seterr(FTC_EPEER,
                           "%s: the child %s before its group "
                           "was built",
                           b->name, how);
    }
    if (rc == 0 && h.magic != FTC__BABY_MAGIC) {
        rc = ftc__seterr(FTC_EPROTO, "%s: the child's hello is malformed",
                         b->name);
    }
    if (rc == 0 && h.rc != 0) {
        h.msg[sizeof(h.msg) - 1] = '\0';
        rc = ftc__seterr(h.rc < 0 ? h.rc : FTC_EPROTO,
                         "%s: the child's inner group: %s", b->name, h.msg);
    }
    return rc;
}

static int baby_create(const ftc_pg_backend_create_args *a, void **impl)
{
    *impl = NULL;
    char inner[FTC__PG_BACKEND_NAME_MAX];
    int rc = inner_name(a->opts, inner, sizeof(inner));
    if (rc != 0) {
        return rc;
    }
    baby *b = ftc__calloc(1, sizeof(*b));
    if (b == NULL) {
        return ftc__seterr(FTC_ENOMEM, "baby: out of memory");
    }
    b->pid = -1;
    b->sock = b->efd_req = b->efd_done = -1;
    b->group = a->group;
    b->rank = a->rank;
    b->size = a->size;
    b->hang_ns = hang_ns();
    snprintf(b->name, sizeof(b->name), "%s", a->opts->backend);
    ftc__baby_config *c = ftc__calloc(1, sizeof(*c));
    int fds[4] = {-1, -1, -1, -1}, child_sock = -1;
    rc = c != NULL ? 0 : ftc__seterr(FTC_ENOMEM, "baby: out of memory");
    rc = rc != 0 ? rc : store_of(a, &b->store);
    rc = rc != 0 ? rc : fill_config(a, b, inner, c);
    rc = rc != 0 ? rc : make_channels(b, fds, &child_sock);
    if (rc == 0) {
        rc =
            start_child(b, c, fds, child_sock, (ftc__deadline){a->deadline_ns});
    }
    /* The child has its own copies now; ours of the memfds are not needed
     * (the mappings keep the memory) and the child's eventfd stays ours
     * to write. */
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    ftc__free(c);
    if (rc == 0) {
        pthread_mutex_init(&b->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&b->cv, &ca);
        pthread_condattr_destroy(&ca);
        rc = ftc__thread_start(&b->watcher, "ftc-baby-watch", ftc__baby_watch,
                               b);
        if (rc != 0) {
            pthread_mutex_destroy(&b->mu);
            pthread_cond_destroy(&b->cv);
        }
    }
    if (rc != 0) {
        release(b);
        return rc;
    }
    *impl = b;
    return 0;
}

/* --------------------------------------------------------------- submit */

/* Lays out a request's region: send part, receive part (the same for an
 * in-place call), then the count arrays. */
static int stage(baby *b, baby_op *o, const ftc_pg_request *d)
{
    size_t elem = ftc_dtype_size(d->dtype);
    bool in_place = d->send == d->recv;
    uint64_t send_bytes = (uint64_t)d->send_count * elem;
    uint64_t recv_bytes = (uint64_t)d->recv_count * elem;
    uint64_t counts = d->send_counts != NULL ? (uint64_t)b->size * 8 : 0;
    uint64_t rcounts = d->recv_counts != NULL ? (uint64_t)b->size * 8 : 0;
    uint64_t first =
        in_place && recv_bytes > send_bytes ? recv_bytes : send_bytes;
    uint64_t second = in_place ? 0 : (recv_bytes + 63) & ~(uint64_t)63;
    first = (first + 63) & ~(uint64_t)63;
    pthread_mutex_lock(&b->mu);
    int rc =
        ftc__baby_arena_alloc(b, first + second + counts + rcounts, &o->off);
    pthread_mutex_unlock(&b->mu);
    if (rc != 0) {
        return rc;
    }
    o->len = first + second + counts + rcounts;
    ftc__baby_req *r = &o->req;
    r->send_off = o->off;
    r->recv_off = in_place ? o->off : o->off + first;
    r->counts_off = counts > 0 ? o->off + first + second : FTC__BABY_NONE;
    r->rcounts_off =
        rcounts > 0 ? o->off + first + second + counts : FTC__BABY_NONE;
    /* Only the data the inner call reads crosses: not a receive's, not a
     * broadcast's away from its root. */
    bool reads = d->coll != FTC_PG_COLL_RECV &&
                 (d->coll != FTC_PG_COLL_BROADCAST || d->root == b->rank);
    if (reads && send_bytes > 0) {
        memcpy(b->arena + r->send_off, d->send, send_bytes);
    }
    for (int i = 0; i < b->size && counts > 0; i++) {
        uint64_t v = d->send_counts[i];
        memcpy(b->arena + r->counts_off + (uint64_t)i * 8, &v, 8);
    }
    for (int i = 0; i < b->size && rcounts > 0; i++) {
        uint64_t v = d->recv_counts[i];
        memcpy(b->arena + r->rcounts_off + (uint64_t)i * 8, &v, 8);
    }
    o->recv_bytes = d->coll == FTC_PG_COLL_SEND ? 0 : (size_t)recv_bytes;
    return 0;
}

static int baby_submit(void *impl, ftc_pg_backend_request *request,
                       const ftc_pg_request *desc)
{
    baby *b = impl;
    baby_op *o = ftc__calloc(1, sizeof(*o));
    if (o == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%s: out of memory", b->name);
    }
    pthread_mutex_lock(&b->mu);
    int rc = b->failed;
    if (rc != 0) {
        ftc__seterr(rc, "%s", b->msg);
    }
    pthread_mutex_unlock(&b->mu);
    o->op = request;
    o->coll = desc->coll != FTC_PG_COLL_SEND && desc->coll != FTC_PG_COLL_RECV;
    ftc__baby_req *r = &o->req;
    r->coll = desc->coll;
    r->dtype = desc->dtype;
    r->op = desc->op;
    r->root = desc->root;
    r->algo = request->algo;
    r->tag = desc->tag;
    r->timeout_ms =
        desc->deadline_ns == INT64_MAX
            ? FTC_TIMEOUT_INFINITE
            : ftc__deadline_left_ms((ftc__deadline){desc->deadline_ns});
    r->send_count = desc->send_count;
    r->recv_count = desc->recv_count;
    /* The copy in runs without the lock: submits are serialised by the pg
     * layer, and the watcher pushes only requests already queued. */
    rc = rc != 0 ? rc : stage(b, o, desc);
    pthread_mutex_lock(&b->mu);
    if (rc == 0 && b->failed != 0) {
        rc = ftc__seterr(b->failed, "%s", b->msg);
    }
    if (rc == 0) {
        r->id = ++b->next_id;
        if (b->tail != NULL) {
            b->tail->next = o;
        } else {
            b->head = o;
        }
        b->tail = o;
        ftc__baby_pump(b);
    } else if (o->len > 0) {
        ftc__baby_arena_free(b, o->off);
    }
    pthread_mutex_unlock(&b->mu);
    if (rc != 0) {
        ftc__free(o);
    }
    return rc;
}

/* ----------------------------------------------------------------- rest */

static void baby_abort(void *impl)
{
    baby *b = impl;
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg),
             "%s: the group was aborted (its child process was killed)",
             b->name);
    ftc__baby_fail(b, FTC_ECANCELED, msg, false);
}

static int baby_status(void *impl)
{
    baby *b = impl;
    pthread_mutex_lock(&b->mu);
    int rc = b->failed;
    if (rc != 0) {
        ftc__seterr(rc, "%s", b->msg);
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static void baby_destroy(void *impl)
{
    baby *b = impl;
    if (b == NULL) {
        return;
    }
    /* A healthy child is asked to leave its group, as a destroy on the
     * inner backend would (its peers must not see a crash), and gets
     * QUIT_MS to exit before it is killed. */
    pthread_mutex_lock(&b->mu);
    ftc__baby_req quit = {.id = UINT64_MAX, .coll = FTC__BABY_QUIT};
    bool leave =
        b->failed == 0 && b->pid > 0 && ftc__baby_push(&b->req_end, &quit) == 0;
    pthread_mutex_unlock(&b->mu);
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s: the group was destroyed", b->name);
    ftc__baby_fail(b, FTC_ECANCELED, msg, leave);
    pthread_mutex_lock(&b->mu);
    ftc__deadline dl = ftc__deadline_in_ms(QUIT_MS);
    struct timespec ts = {.tv_sec = dl.ns / 1000000000,
                          .tv_nsec = dl.ns % 1000000000};
    while (leave && b->pid > 0 &&
           pthread_cond_timedwait(&b->cv, &b->mu, &ts) == 0) {
    }
    b->stop = true;
    pthread_mutex_unlock(&b->mu);
    uint64_t one = 1;
    (void)!write(b->efd_done, &one, sizeof(one));
    pthread_join(b->watcher, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    release(b);
}

pid_t ftc__baby_child_pid(ftc_pg *pg)
{
    if (pg == NULL || pg->ops->create != ftc__baby_backend.create) {
        return -1;
    }
    baby *b = pg->impl;
    pthread_mutex_lock(&b->mu);
    pid_t pid = b->pid;
    pthread_mutex_unlock(&b->mu);
    return pid;
}

const ftc_pg_backend ftc__baby_backend = {
    .abi_version = FTC_PG_BACKEND_ABI_VERSION,
    .struct_size = sizeof(ftc_pg_backend),
    .name = "baby",
    .devices = FTC_PG_BIT(FTC_DEVICE_CPU),
    .create = baby_create,
    .submit = baby_submit,
    .abort = baby_abort,
    .status = baby_status,
    .destroy = baby_destroy,
};

void ftc__baby_table(const char *name, const ftc_pg_backend *inner,
                     ftc_pg_backend *out)
{
    *out = ftc__baby_backend;
    out->name = name;
    out->colls = inner->colls;
    out->dtypes = inner->dtypes;
    out->ops = inner->ops;
    out->devices = inner->devices & ftc__baby_backend.devices;
    out->check_request = inner->check_request;
}
