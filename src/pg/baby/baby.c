/* The Baby backend, parent side: "baby-<inner>" runs the inner backend's
 * group in a child process (the helper ftc-baby, child.c) and looks
 * exactly like the inner backend to the caller. A request's buffers are
 * staged through the arena both processes map; its descriptor goes
 * through the request ring; the watcher thread (watch.c) completes it.
 * Abort is SIGKILL of the child: whatever the inner library is stuck in
 * ends with the process, and every pending work fails at once.
 * Choices and costs: docs/decisions.md, "pg: Baby process groups". */
#include <string.h>
#include <unistd.h>

#include "pg/baby/parent.h"

/* How long a destroyed group's child may take to leave its group. */
#define QUIT_MS 2000

/* --------------------------------------------------------------- submit */

/* Where a buffer of bytes bytes goes: its place in the shared heap
 * (*off, already an offset the child resolves; true), else staged. */
static bool in_heap(const baby *b, const void *p, uint64_t bytes, uint64_t *off)
{
    uint64_t h = 0;
    if (bytes == 0 || !ftc__baby_heap_find(b->heap, p, bytes, &h)) {
        return false;
    }
    *off = FTC__BABY_ARENA_BYTES + h;
    return true;
}

static uint64_t up64(uint64_t v)
{
    return (v + 63) & ~(uint64_t)63;
}

/* Places a request's buffers: a buffer in the shared heap as it is, the
 * others staged in an arena region (send part, receive part unless in
 * place, then the count arrays) and their input copied in. */
static int stage(baby *b, baby_op *o, const ftc_pg_request *d)
{
    size_t elem = ftc_dtype_size(d->dtype);
    bool in_place = d->send == d->recv;
    uint64_t send_bytes = (uint64_t)d->send_count * elem;
    uint64_t recv_bytes = (uint64_t)d->recv_count * elem;
    ftc__baby_req *r = &o->req;
    bool send_shared = in_heap(b, d->send, send_bytes, &r->send_off);
    bool recv_shared = in_heap(b, d->recv, recv_bytes, &r->recv_off);
    if (in_place && send_shared != recv_shared) {
        /* In place over the heap's end: stage both alike. */
        send_shared = recv_shared = false;
    }
    uint64_t first = send_shared                           ? 0
                     : in_place && recv_bytes > send_bytes ? up64(recv_bytes)
                                                           : up64(send_bytes);
    uint64_t second = in_place || recv_shared ? 0 : up64(recv_bytes);
    uint64_t counts = d->send_counts != NULL ? (uint64_t)b->size * 8 : 0;
    uint64_t rcounts = d->recv_counts != NULL ? (uint64_t)b->size * 8 : 0;
    o->len = first + second + counts + rcounts;
    if (o->len > 0) {
        pthread_mutex_lock(&b->mu);
        int rc = ftc__baby_regions_alloc(&b->regions, o->len,
                                         FTC__BABY_ARENA_BYTES, &o->off);
        pthread_mutex_unlock(&b->mu);
        if (rc != 0) {
            o->len = 0;
            return rc == FTC_ENOMEM
                       ? ftc__seterr(rc, "%s: out of memory", b->name)
                       : ftc__seterr(rc,
                                     "%s: %llu bytes to stage do not fit in "
                                     "the arena (%llu bytes with the "
                                     "requests in flight)",
                                     b->name,
                                     (unsigned long long)(first + second),
                                     (unsigned long long)FTC__BABY_ARENA_BYTES);
        }
    }
    if (!send_shared) {
        r->send_off = o->off;
    }
    if (!recv_shared) {
        r->recv_off = in_place ? r->send_off : o->off + first;
    }
    r->counts_off = counts > 0 ? o->off + first + second : FTC__BABY_NONE;
    r->rcounts_off =
        rcounts > 0 ? o->off + first + second + counts : FTC__BABY_NONE;
    /* Only the data the inner call reads crosses: not a receive's, not a
     * broadcast's away from its root. */
    bool reads = d->coll != FTC_PG_COLL_RECV &&
                 (d->coll != FTC_PG_COLL_BROADCAST || d->root == b->rank);
    if (reads && send_bytes > 0 && !send_shared) {
        memcpy(b->arena + r->send_off, d->send, send_bytes);
        atomic_fetch_add_explicit(&b->copied, send_bytes, memory_order_relaxed);
    }
    for (int i = 0; i < b->size && counts > 0; i++) {
        uint64_t v = d->send_counts[i];
        memcpy(b->arena + r->counts_off + (uint64_t)i * 8, &v, 8);
    }
    for (int i = 0; i < b->size && rcounts > 0; i++) {
        uint64_t v = d->recv_counts[i];
        memcpy(b->arena + r->rcounts_off + (uint64_t)i * 8, &v, 8);
    }
    o->recv_bytes =
        d->coll == FTC_PG_COLL_SEND || recv_shared ? 0 : (size_t)recv_bytes;
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
        uint64_t len;
        ftc__baby_regions_free(&b->regions, o->off, &len);
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
    ftc__baby_fail(b, FTC_ECANCELED, msg, FTC__BABY_TELL);
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
    char msg[FTC__PG_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s: the group was destroyed", b->name);
    pthread_mutex_lock(&b->mu);
    ftc__baby_req quit = {.id = UINT64_MAX, .coll = FTC__BABY_QUIT};
    bool leave =
        b->failed == 0 && b->pid > 0 && ftc__baby_push(&b->req_end, &quit) == 0;
    if (leave) {
        /* Latched with the push: the child may leave before ftc__baby_fail
         * below runs, and its exit must not read as a failure to tell the
         * other members of. */
        b->failed = FTC_ECANCELED;
        snprintf(b->msg, sizeof(b->msg), "%s", msg);
    }
    pthread_mutex_unlock(&b->mu);
    ftc__baby_fail(b, FTC_ECANCELED, msg,
                   leave ? FTC__BABY_KEEP_CHILD : FTC__BABY_SILENT);
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
    ftc__baby_release(b);
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

uint64_t ftc__baby_copied_bytes(ftc_pg *pg)
{
    if (pg == NULL || pg->ops->create != ftc__baby_backend.create) {
        return 0;
    }
    baby *b = pg->impl;
    return atomic_load_explicit(&b->copied, memory_order_relaxed);
}

const ftc_pg_backend ftc__baby_backend = {
    .abi_version = FTC_PG_BACKEND_ABI_VERSION,
    .struct_size = sizeof(ftc_pg_backend),
    .name = "baby",
    .devices = FTC_PG_BIT(FTC_DEVICE_CPU),
    .create = ftc__baby_create,
    .submit = baby_submit,
    .abort = baby_abort,
    .status = baby_status,
    .destroy = baby_destroy,
    /* No failed_peers: the inner group lives in the child, and its blame
     * would need a message of its own on the parent-child channel; a
     * Baby group blames nobody (ftc_pg_failed_peers returns 0). */
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
