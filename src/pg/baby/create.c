/* Creating a Baby group (the parent's side): the shared memory, the
 * child (spawn.c), its config, and the wait for its hello, during which
 * the child's heartbeat is watched, a cancel of the caller's store client
 * ends the wait, and so does a failure another member reports (peers.c):
 * no member waits for a create that cannot complete. */
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
/* The default heartbeat timeout (FTC_PG_BABY_HANG_MS overrides). */
#define HANG_MS_DEFAULT 3000
/* How often the wait for hello looks at the heartbeat and the peers. */
#define LOOK_NS (100 * 1000000LL)

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
    snprintf(c->store_token, sizeof(c->store_token), "%s", b->store.token);
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
    c->protect = o->protect;
    return 0;
}

void ftc__baby_release(baby *b)
{
    if (b->pid > 0) {
        kill(b->pid, SIGKILL);
        while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        b->pid = -1;
    }
    ftc__baby_peers_stop(b);
    if (b->shm != NULL) {
        munmap(b->shm, sizeof(*b->shm));
    }
    if (b->arena != NULL) {
        munmap(b->arena, FTC__BABY_ARENA_BYTES);
    }
    ftc__baby_heap_unref(b->heap);
    int fds[] = {b->sock, b->efd_req, b->efd_done};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    ftc__free(b->regions.v);
    ftc__free(b);
}

static void *map(int fd, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The segments, eventfds and socket; fds[] gets what the child is sent
 * (FTC__BABY_NFDS says which) and child_sock its end. */
static int make_channels(baby *b, int fds[FTC__BABY_NFDS], int *child_sock)
{
    int sp[2] = {-1, -1};
    int rc = ftc__baby_heap_ref(&b->heap);
    if (rc != 0) {
        return rc;
    }
    fds[4] = ftc__baby_heap_fd(b->heap); /* the heap's: not ours to close */
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

/* Waits for the child's hello in slices, between which it checks the
 * child's heartbeat and whether another member reported a failure. */
static int wait_hello(baby *b, ftc__baby_hello *h, ftc__deadline late,
                      int cancel_fd)
{
    uint64_t beat = atomic_load(&b->shm->beat);
    int64_t beat_at = ftc__now_ns(), looked = beat_at;
    for (;;) {
        ftc__deadline slice = {ftc__now_ns() + LOOK_NS};
        int rc = ftc__baby_recv(b->sock, h, sizeof(*h), NULL, 0,
                                ftc__deadline_min(late, slice), cancel_fd);
        if (rc != FTC_ETIMEDOUT) {
            return rc;
        }
        if (ftc__deadline_expired(late)) {
            return ftc__seterr(FTC_ETIMEDOUT,
                               "%s: the child (pid %d) did not build its "
                               "group by the create's deadline",
                               b->name, (int)b->pid);
        }
        pthread_mutex_lock(&b->mu);
        rc = b->failed != 0 ? ftc__seterr(b->failed, "%s", b->msg) : 0;
        pthread_mutex_unlock(&b->mu);
        if (rc != 0) {
            return rc; /* a member told us it failed */
        }
        int64_t now = ftc__now_ns();
        uint64_t cur = atomic_load(&b->shm->beat);
        if (now - looked > b->hang_ns / 2 || cur != beat) {
            beat_at = now; /* a beat, or this process was not running */
        }
        looked = now;
        beat = cur;
        if (now - beat_at > b->hang_ns) {
            return ftc__seterr(FTC_ETIMEDOUT,
                               "%s: the child (pid %d) stopped answering its "
                               "heartbeat for %lld ms while its group was "
                               "built (stopped or hung)",
                               b->name, (int)b->pid,
                               (long long)(b->hang_ns / 1000000));
        }
    }
}

/* Starts the child, hands it the config, waits for its hello. */
static int start_child(baby *b, const ftc__baby_config *c,
                       const int fds[FTC__BABY_NFDS], int child_sock,
                       ftc__deadline dl, int cancel_fd)
{
    char path[1024];
    int rc = ftc__baby_helper(path, sizeof(path));
    if (rc == 0) {
        rc = ftc__baby_spawn(path, c->prefix, child_sock, &b->pid);
    }
    close(child_sock);
    if (rc == 0) {
        rc = ftc__baby_send(b->sock, c, sizeof(*c), fds, FTC__BABY_NFDS, dl);
    }
    ftc__baby_hello h;
    if (rc == 0) {
        ftc__deadline late = {dl.ns == INT64_MAX
                                  ? INT64_MAX
                                  : dl.ns + CREATE_GRACE_MS * 1000000LL};
        rc = wait_hello(b, &h, late, cancel_fd);
    }
    pthread_mutex_lock(&b->mu);
    if (rc != 0 && b->failed != 0) {
        rc = ftc__seterr(b->failed, "%s", b->msg); /* a member told us */
    }
    pthread_mutex_unlock(&b->mu);
    if (rc == FTC_ECLOSED) {
        int status = 0;
        while (waitpid(b->pid, &status, 0) < 0 && errno == EINTR) {
        }
        b->pid = -1;
        char how[160];
        ftc__baby_describe_status(status, how, sizeof(how));
        return ftc__seterr(FTC_EPEER,
                           "%s: the child %s before its group was built",
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

static void init_sync(baby *b)
{
    pthread_mutex_init(&b->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cv, &ca);
    pthread_condattr_destroy(&ca);
}

int ftc__baby_create(const ftc_pg_backend_create_args *a, void **impl)
{
    *impl = NULL;
    char inner[FTC__PG_BACKEND_NAME_MAX];
    int rc = inner_name(a->opts, inner, sizeof(inner));
    if (rc != 0) {
        return rc;
    }
    baby *b = ftc__calloc(1, sizeof(*b));
    ftc__baby_config *c = ftc__calloc(1, sizeof(*c));
    if (b == NULL || c == NULL) {
        ftc__free(b);
        ftc__free(c);
        return ftc__seterr(FTC_ENOMEM, "baby: out of memory");
    }
    init_sync(b);
    b->pid = -1;
    b->sock = b->efd_req = b->efd_done = -1;
    b->group = a->group;
    b->rank = a->rank;
    b->size = a->size;
    b->hang_ns = hang_ns();
    snprintf(b->name, sizeof(b->name), "%s", a->opts->backend);
    int fds[FTC__BABY_NFDS] = {-1, -1, -1, -1, -1}, child_sock = -1;
    rc = store_of(a, &b->store);
    rc = rc != 0 ? rc : fill_config(a, b, inner, c);
    rc = rc != 0 ? rc : make_channels(b, fds, &child_sock);
    /* Watching the others from the start: a member whose child hangs or
     * dies while the group forms tells them, and they stop waiting. */
    rc = rc != 0 ? rc : ftc__baby_peers_start(b, c->prefix);
    if (rc == 0) {
        int cancel_fd =
            a->store != NULL ? ftc__store_client_cancel_fd(a->store) : -1;
        rc = start_child(b, c, fds, child_sock, (ftc__deadline){a->deadline_ns},
                         cancel_fd);
        pthread_mutex_lock(&b->mu);
        bool told = b->failed != 0;
        pthread_mutex_unlock(&b->mu);
        if (rc != 0 && rc != FTC_ECANCELED && !told) {
            char msg[FTC__PG_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", ftc_last_error());
            ftc__baby_peers_tell(b, msg);
            ftc__seterr(rc, "%s", msg); /* the store call replaced it */
        }
    } else if (child_sock >= 0) {
        close(child_sock);
    }
    /* The child has its own copies now; ours of the memfds are not needed
     * (the mappings keep the memory). */
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    ftc__free(c);
    if (rc == 0) {
        rc = ftc__thread_start(&b->watcher, "ftc-baby-watch", ftc__baby_watch,
                               b);
    }
    if (rc != 0) {
        ftc__baby_release(b);
        return rc;
    }
    *impl = b;
    return 0;
}
