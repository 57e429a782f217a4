/* The public process-group API: options, lifetime, and one entry point per
 * operation that checks every argument before anything starts, then hands
 * a request to the group's backend. */
#include <stdlib.h>

#include "pg/pg_int.h"
#include "pg/reduce.h"

#define KIB ((size_t)1024)

/* Stands in for the NULL data pointer of an empty buffer, so no code
 * ever does arithmetic on NULL. Never written: empty means no bytes. */
static uint8_t empty_buffer[8];

static const char *const coll_names[FTC__COLL_END] = {
    [FTC__ALLREDUCE] = "allreduce",
    [FTC__BROADCAST] = "broadcast",
    [FTC__REDUCE] = "reduce",
    [FTC__ALLGATHER] = "allgather",
    [FTC__ALLGATHERV] = "allgatherv",
    [FTC__REDUCE_SCATTER] = "reduce_scatter",
    [FTC__ALLTOALL] = "alltoall",
    [FTC__ALLTOALLV] = "alltoallv",
    [FTC__GATHER] = "gather",
    [FTC__SCATTER] = "scatter",
    [FTC__BARRIER] = "barrier",
    [FTC__SEND] = "send",
    [FTC__RECV] = "recv",
};

const char *ftc__coll_name(int coll)
{
    return coll > 0 && coll < FTC__COLL_END ? coll_names[coll] : "?";
}

/* ----------------------------------------------------------------- opts */

void ftc_pg_opts_init(ftc_pg_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->spin_us = FTC_PG_SPIN_AUTO;
    o->timeout_ms = 300000;
    o->connect_timeout_ms = 60000;
    o->small_bytes = 64 * KIB;
    o->segment_bytes = 256 * KIB;
    o->streams = 1;
    o->max_message_bytes = (size_t)1 << 30;
    o->max_unexpected_bytes = 64 << 20;
}

void ftc_pg_op_opts_init(ftc_pg_op_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->timeout_ms = FTC_TIMEOUT_DEFAULT;
}

/* The caller's fields over the defaults; ranges are checked. */
int ftc__pg_resolve_opts(ftc_pg_opts *out, const ftc_pg_opts *in)
{
    ftc_pg_opts d;
    ftc_pg_opts_init(&d);
    *out = d;
    int rc = FTC__OPTS_MERGE(out, in, ftc_pg_opts, token);
    if (rc != 0) {
        return rc;
    }
    FTC__OPT_DEFAULT(out, &d, timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(out, &d, connect_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(out, &d, small_bytes, FTC_SIZE_DEFAULT);
    FTC__OPT_DEFAULT(out, &d, segment_bytes, FTC_SIZE_DEFAULT);
    FTC__OPT_DEFAULT(out, &d, max_message_bytes, FTC_SIZE_DEFAULT);
    FTC__OPT_DEFAULT(out, &d, max_unexpected_bytes, FTC_SIZE_DEFAULT);
    rc = ftc__timeout_check(out->timeout_ms, "ftc_pg_opts.timeout_ms");
    rc = rc != 0 ? rc
                 : ftc__timeout_check(out->connect_timeout_ms,
                                      "ftc_pg_opts.connect_timeout_ms");
    if (rc != 0) {
        return rc;
    }
    if (out->segment_bytes == 0 || out->max_message_bytes == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_pg_opts: segment_bytes %zu and "
                           "max_message_bytes %zu must be >= 1",
                           out->segment_bytes, out->max_message_bytes);
    }
    const int algos[] = {out->allreduce_algo, out->allgather_algo,
                         out->reduce_scatter_algo, out->broadcast_algo,
                         out->reduce_algo};
    const int colls[] = {FTC__ALLREDUCE, FTC__ALLGATHER, FTC__REDUCE_SCATTER,
                         FTC__BROADCAST, FTC__REDUCE};
    for (int i = 0; i < 5; i++) {
        rc = ftc__sched_validate(colls[i], algos[i]);
        if (rc != 0) {
            return rc;
        }
    }
    if (out->streams < 1 || out->streams > 8) {
        return ftc__seterr(FTC_EINVAL, "streams %d not in 1..8", out->streams);
    }
    if (out->protect < FTC_PG_PROTECT_DEFAULT ||
        out->protect > FTC_PG_PROTECT_ENCRYPT) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_pg_opts.protect %d is not an "
                           "ftc_pg_protect",
                           out->protect);
    }
    if (out->transport < FTC_PG_TRANSPORT_DEFAULT ||
        out->transport > FTC_PG_TRANSPORT_SHM) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_pg_opts.transport %d is not an "
                           "ftc_pg_transport",
                           out->transport);
    }
    if (out->sndbuf_bytes < 0 || out->rcvbuf_bytes < 0 ||
        (out->spin_us < -1 && out->spin_us != FTC_PG_SPIN_AUTO)) {
        return ftc__seterr(FTC_EINVAL, "negative buffer or spin");
    }
    return 0;
}

/* An enum option's environment variable (NULL or "": unset) as one of
 * values, named by names (values[0] when unset). */
static int env_choice(const char *var, const char *v, const char *const *names,
                      const int *values, int n, int *out)
{
    if (v == NULL || v[0] == '\0') {
        *out = values[0];
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(v, names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    }
    char expected[64] = "";
    for (int i = 0; i < n; i++) {
        size_t at = strlen(expected);
        snprintf(expected + at, sizeof(expected) - at, "%s%s",
                 i == 0       ? ""
                 : i == n - 1 ? " or "
                              : ", ",
                 names[i]);
    }
    return ftc__seterr(FTC_EINVAL, "%s='%.32s': expected %s", var, v, expected);
}

static int protect_from_env(const char *v, int *out)
{
    static const char *const names[] = {"auto", "mac", "encrypt", "off"};
    static const int values[] = {FTC_PG_PROTECT_AUTO, FTC_PG_PROTECT_MAC,
                                 FTC_PG_PROTECT_ENCRYPT, FTC_PG_PROTECT_OFF};
    return env_choice("FTC_PG_PROTECT", v, names, values, 4, out);
}

static int transport_from_env(const char *v, int *out)
{
    static const char *const names[] = {"auto", "tcp", "shm"};
    static const int values[] = {FTC_PG_TRANSPORT_AUTO, FTC_PG_TRANSPORT_TCP,
                                 FTC_PG_TRANSPORT_SHM};
    return env_choice("FTC_PG_TRANSPORT", v, names, values, 3, out);
}

int ftc__pg_init(ftc_pg *pg, int rank, int size, const int *parent_ranks,
                 const ftc_pg_opts *opts)
{
    if (size < 1 || rank < 0 || rank >= size) {
        return ftc__seterr(FTC_EINVAL, "rank %d of size %d", rank, size);
    }
    int rc = ftc__pg_resolve_opts(&pg->opts, opts);
    if (rc != 0) {
        return rc;
    }
    if (pg->opts.host != NULL) {
        snprintf(pg->host, sizeof(pg->host), "%s", pg->opts.host);
        pg->opts.host = pg->host;
    }
    pg->opts.backend = NULL; /* ftc__pg_build sets it to pg->backend */
    ftc__pg_env env;
    ftc__pg_env_read(&env);
    const char *cc = pg->opts.tcp_congestion != NULL ? pg->opts.tcp_congestion
                                                     : env.tcp_congestion;
    pg->opts.tcp_congestion = NULL;
    if (cc != NULL) {
        if (strlen(cc) >= sizeof(pg->congestion)) {
            return ftc__seterr(FTC_EINVAL,
                               "tcp_congestion '%.32s': longer than %d bytes",
                               cc, FTC__CC_NAME_MAX - 1);
        }
        snprintf(pg->congestion, sizeof(pg->congestion), "%s", cc);
        pg->opts.tcp_congestion = pg->congestion;
    }
    if (pg->opts.protect == FTC_PG_PROTECT_DEFAULT) {
        rc = protect_from_env(env.protect, &pg->opts.protect);
        if (rc != 0) {
            return rc;
        }
    }
    if (pg->opts.transport == FTC_PG_TRANSPORT_DEFAULT) {
        rc = transport_from_env(env.transport, &pg->opts.transport);
        if (rc != 0) {
            return rc;
        }
    }
    const char *token = pg->opts.token != NULL ? pg->opts.token : env.token;
    if (token != NULL && token[0] != '\0') {
        pg->token = ftc__strdup(token);
    }
    pg->opts.token = pg->token;
    pg->parent_ranks = ftc__calloc((size_t)size, sizeof(int));
    if (pg->parent_ranks == NULL || (token && token[0] && !pg->token)) {
        return ftc__seterr(FTC_ENOMEM, "process group: out of memory");
    }
    for (int i = 0; i < size; i++) {
        pg->parent_ranks[i] = parent_ranks != NULL ? parent_ranks[i] : i;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&pg->submit_mu, NULL);
    pthread_mutex_init(&pg->done_mu, NULL);
    pthread_cond_init(&pg->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&pg->aborted, 0);
    pg->sync_ready = 1;
    pg->magic = FTC__PG_MAGIC;
    pg->rank = rank;
    pg->size = size;
    return 0;
}

void ftc__pg_free(ftc_pg *pg)
{
    if (pg->sync_ready) {
        pthread_mutex_destroy(&pg->submit_mu);
        pthread_mutex_destroy(&pg->done_mu);
        pthread_cond_destroy(&pg->done_cv);
    }
    ftc__free(pg->prefix);
    ftc__free(pg->parent_ranks);
    ftc__free(pg->token);
    pg->magic = 0;
    ftc__free(pg);
}

/* ------------------------------------------------------------- lifetime */

static int check_pg(const ftc_pg *pg)
{
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a process group");
    }
    return 0;
}

void ftc_pg_destroy(ftc_pg *pg)
{
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return; /* NULL is a no-op and leaves the error message alone */
    }
    pg->ops->destroy(pg->impl);
    ftc__pg_free(pg);
}

void ftc_pg_abort(ftc_pg *pg)
{
    if (check_pg(pg) == 0) {
        atomic_store(&pg->aborted, 1);
        pg->ops->abort(pg->impl);
    }
}

int ftc_pg_rank(const ftc_pg *pg)
{
    return check_pg(pg) == 0 ? pg->rank : FTC_EMISUSE;
}

int ftc_pg_size(const ftc_pg *pg)
{
    return check_pg(pg) == 0 ? pg->size : FTC_EMISUSE;
}

int ftc_pg_status(ftc_pg *pg)
{
    ftc__clearerr();
    int rc = check_pg(pg);
    return rc != 0 ? rc : pg->ops->status(pg->impl);
}

int ftc_pg_parent_ranks(const ftc_pg *pg, int *ranks)
{
    ftc__clearerr();
    int rc = check_pg(pg);
    if (rc == 0 && ranks == NULL) {
        rc = ftc__seterr(FTC_EINVAL, "ranks is NULL");
    }
    if (rc == 0) {
        memcpy(ranks, pg->parent_ranks, (size_t)pg->size * sizeof(int));
    }
    return rc;
}

/* ------------------------------------------------------------ arguments */

/* A request under construction; `what` names the call in messages. */
typedef struct req {
    ftc_pg *pg;
    const char *what;
    ftc__op *op;
    ftc_pg_op_opts o; /* the caller's, over the defaults */
} req;

/* Checks one tensor: non-NULL, known dtype, reachable device, size that
 * fits, data present unless empty. */
static int check_tensor(req *r, const ftc_tensor *t, const char *name)
{
    if (t == NULL) {
        return ftc__seterr(FTC_EINVAL, "%s: %s is NULL", r->what, name);
    }
    size_t elem = ftc_dtype_size(t->dtype);
    if (elem == 0) {
        return ftc__seterr(FTC_EINVAL, "%s: %s has unknown dtype %d", r->what,
                           name, t->dtype);
    }
    if (t->count > SIZE_MAX / elem / (size_t)r->pg->size) {
        return ftc__seterr(FTC_EINVAL, "%s: %s count %zu is too large", r->what,
                           name, t->count);
    }
    if (t->data == NULL && t->count > 0) {
        return ftc__seterr(FTC_EINVAL, "%s: %s has no data", r->what, name);
    }
    const ftc_pg_backend *be = r->pg->ops;
    if (t->device < 0 || t->device >= 32 ||
        (be->devices & FTC_PG_BIT(t->device)) == 0) {
        return ftc__seterr(
            FTC_ENOTSUP, "%s: %s: the '%s' backend cannot move %s buffers",
            r->what, name, be->name, ftc_device_kind_name(t->device));
    }
    int rc =
        be->check_device != NULL ? be->check_device(r->pg->impl, t->device) : 0;
    if (rc != 0) {
        return ftc__adderr(rc, "%s: %s", r->what, name);
    }
    return 0;
}

static uint8_t *data_of(const ftc_tensor *t)
{
    return t->data != NULL ? t->data : empty_buffer;
}

static int same_type(req *r, const ftc_tensor *a, const ftc_tensor *b)
{
    if (a->dtype != b->dtype || a->device != b->device) {
        return ftc__seterr(
            FTC_EINVAL, "%s: input is %s on %s, output %s on %s", r->what,
            ftc_dtype_name(a->dtype), ftc_device_kind_name(a->device),
            ftc_dtype_name(b->dtype), ftc_device_kind_name(b->device));
    }
    return 0;
}

static int count_is(req *r, const char *name, size_t got, size_t want)
{
    if (got != want) {
        return ftc__seterr(FTC_EINVAL, "%s: %s has %zu elements, needs %zu",
                           r->what, name, got, want);
    }
    return 0;
}

/* out is a valid tensor like in: same dtype, device and count. */
static int check_like(req *r, const ftc_tensor *in, const ftc_tensor *out)
{
    int rc = check_tensor(r, out, "output");
    if (rc == 0) {
        rc = same_type(r, in, out);
    }
    if (rc == 0) {
        rc = count_is(r, "output", out->count, in->count);
    }
    return rc;
}

static int check_rank(req *r, int rank, const char *name, bool any_ok)
{
    if ((any_ok && rank == FTC_PG_ANY_SOURCE) ||
        (rank >= 0 && rank < r->pg->size)) {
        return 0;
    }
    return ftc__seterr(FTC_EINVAL,
                       "%s: %s %d is not a rank of this group "
                       "(size %d)",
                       r->what, name, rank, r->pg->size);
}

/* Starts a request: checks pg and opts, allocates the op. */
static int begin(req *r, ftc_pg *pg, int coll, const ftc_pg_op_opts *o,
                 ftc_work **work)
{
    ftc__clearerr();
    r->pg = pg;
    r->what = ftc__coll_name(coll);
    r->op = NULL;
    if (work != NULL) {
        *work = NULL;
    }
    ftc_pg_op_opts_init(&r->o);
    int rc = check_pg(pg);
    rc = rc != 0 ? rc : FTC__OPTS_MERGE(&r->o, o, ftc_pg_op_opts, done_arg);
    rc = rc != 0 ? rc : ftc__timeout_check(r->o.timeout_ms, r->what);
    if (rc != 0) {
        return rc;
    }
    int algo = r->o.algo;
    rc = ftc__sched_validate(coll, algo);
    if (rc != 0) {
        return rc;
    }
    if (algo == FTC_ALGO_AUTO) {
        algo = coll == FTC__ALLREDUCE ? pg->opts.allreduce_algo
               : coll == FTC__ALLGATHER || coll == FTC__ALLGATHERV
                   ? pg->opts.allgather_algo
               : coll == FTC__REDUCE_SCATTER ? pg->opts.reduce_scatter_algo
               : coll == FTC__BROADCAST      ? pg->opts.broadcast_algo
               : coll == FTC__REDUCE         ? pg->opts.reduce_algo
                                             : FTC_ALGO_AUTO;
    }
    r->op = ftc__calloc(1, sizeof(*r->op));
    if (r->op == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%s: out of memory", r->what);
    }
    ftc__op *op = r->op;
    op->coll = coll;
    op->algo = algo;
    op->dtype = FTC_DTYPE_U8;
    op->elem = 1;
    op->in = empty_buffer;
    op->out = empty_buffer;
    op->timeout_ms = ftc__timeout_resolve(r->o.timeout_ms, pg->opts.timeout_ms);
    op->deadline = ftc__deadline_in_ms(op->timeout_ms);
    return 0;
}

/* Fills the op's buffers from in (may be NULL) and out (may be NULL). */
static void set_buffers(req *r, const ftc_tensor *in, const ftc_tensor *out)
{
    const ftc_tensor *t = in != NULL ? in : out;
    r->op->dtype = t->dtype;
    r->op->elem = ftc_dtype_size(t->dtype);
    if (in != NULL) {
        r->op->in = data_of(in);
        r->op->desc.send_count = in->count;
    }
    if (out != NULL) {
        r->op->out = data_of(out);
        r->op->desc.recv_count = out->count;
    }
    r->op->desc.device = t->device;
}

/* FTC_ENOTSUP unless the backend's masks cover the request. */
static int check_caps(req *r)
{
    const ftc_pg_backend *be = r->pg->ops;
    const ftc__op *op = r->op;
    bool reducing = op->coll == FTC__ALLREDUCE || op->coll == FTC__REDUCE ||
                    op->coll == FTC__REDUCE_SCATTER;
    bool has_data = op->coll != FTC__BARRIER;
    if ((be->colls & FTC_PG_BIT(op->coll)) == 0 ||
        (has_data && (be->dtypes & FTC_PG_BIT(op->dtype)) == 0) ||
        (reducing &&
         (op->op < 0 || op->op >= 32 || (be->ops & FTC_PG_BIT(op->op)) == 0))) {
        return ftc__seterr(FTC_ENOTSUP,
                           "%s: the '%s' backend does not support %s of %s "
                           "with op %s (nothing was started)",
                           r->what, be->name, r->what,
                           has_data ? ftc_dtype_name(op->dtype) : "-",
                           reducing ? ftc_op_name(op->op) : "-");
    }
    /* ABI 1.1: the backend's own finer refusals (nothing started). */
    return be->check_request != NULL ? be->check_request(&op->desc) : 0;
}

/* The published descriptor of the op (ftc/plugin/backend.h). */
static void describe(req *r)
{
    ftc__op *op = r->op;
    ftc_pg_request *d = &op->desc;
    d->struct_size = sizeof(*d);
    d->coll = op->coll;
    d->dtype = op->dtype;
    d->op = op->op;
    d->root = op->root;
    d->tag = op->tag;
    d->send = op->in;
    d->recv = op->out;
    d->send_counts = op->counts;
    d->recv_counts = op->coll == FTC__ALLTOALLV || op->coll == FTC__ALLTOALL
                         ? op->rcounts
                         : NULL;
    d->epoch = r->pg->opts.epoch;
    d->deadline_ns = op->deadline.ns;
}

/* Hands the op over (or frees it on an earlier error) and returns the
 * work. */
static int finish(req *r, int rc, ftc_work **work)
{
    if (rc == 0) {
        describe(r);
        rc = check_caps(r);
    }
    if (rc == 0 && atomic_load(&r->pg->aborted)) {
        rc = ftc__seterr(FTC_ECANCELED,
                         "%s: the group was aborted (unusable until rebuilt)",
                         r->what);
    }
    if (rc != 0) {
        ftc__op_free(r->op);
        return rc;
    }
    ftc_work *w = ftc__work_new(r->pg, r->op->coll, &r->o);
    if (w == NULL) {
        ftc__op_free(r->op);
        return ftc__seterr(FTC_ENOMEM, "%s: out of memory", r->what);
    }
    r->op->work = w;
    ftc__work_trace_submit(w, r->op);
    pthread_mutex_lock(&r->pg->submit_mu);
    if (r->op->coll != FTC__SEND && r->op->coll != FTC__RECV) {
        r->op->desc.seq = ++r->pg->seq;
    }
    w->trace_seq = r->op->desc.seq;
    rc = r->pg->ops->submit(r->pg->impl, r->op, &r->op->desc);
    pthread_mutex_unlock(&r->pg->submit_mu);
    if (rc != 0) {
        ftc__work_unref(w); /* the engine's reference: never submitted */
        ftc__work_unref(w);
        ftc__op_free(r->op); /* not taken: still ours */
        return rc;
    }
    if (work != NULL) {
        *work = w;
    } else {
        ftc__work_unref(w); /* detached */
    }
    return 0;
}

void ftc__op_free(ftc__op *op)
{
    if (op != NULL) {
        ftc__free(op->counts);
        ftc__free(op->rcounts);
        ftc__free(op);
    }
}

/* Copies n counts into the op; checks that their sum fits and returns it. */
static int copy_counts(req *r, const size_t *counts, size_t **dst, size_t elem,
                       size_t *sum)
{
    int n = r->pg->size;
    if (counts == NULL) {
        return ftc__seterr(FTC_EINVAL, "%s: counts is NULL", r->what);
    }
    *dst = ftc__memdup(counts, (size_t)n * sizeof(size_t));
    if (*dst == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%s: out of memory", r->what);
    }
    size_t s = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] > SIZE_MAX / elem - s) {
            return ftc__seterr(FTC_EINVAL, "%s: counts overflow", r->what);
        }
        s += counts[i];
    }
    *sum = s;
    return 0;
}

/* ----------------------------------------------------------- operations */

int ftc_pg_allreduce(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                     int op, const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__ALLREDUCE, opts, work);
    if (rc == 0) {
        rc = check_tensor(&r, in, "input");
    }
    if (rc == 0) {
        rc = check_like(&r, in, out);
    }
    if (rc == 0) {
        rc = ftc__reduce_check(in->dtype, op);
    }
    if (rc == 0) {
        set_buffers(&r, in, out);
        r.op->count = in->count;
        r.op->op = op;
    }
    return finish(&r, rc, work);
}

int ftc_pg_broadcast(ftc_pg *pg, const ftc_tensor *buf, int root,
                     const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__BROADCAST, opts, work);
    if (rc == 0) {
        rc = check_tensor(&r, buf, "buffer");
    }
    if (rc == 0) {
        rc = check_rank(&r, root, "root", false);
    }
    if (rc == 0) {
        set_buffers(&r, buf, buf);
        r.op->count = buf->count;
        r.op->root = root;
    }
    return finish(&r, rc, work);
}

int ftc_pg_reduce(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                  int op, int root, const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__REDUCE, opts, work);
    if (rc == 0) {
        rc = check_tensor(&r, in, "input");
    }
    if (rc == 0) {
        rc = check_rank(&r, root, "root", false);
    }
    bool at_root = rc == 0 && pg->rank == root;
    if (at_root) {
        rc = check_like(&r, in, out);
    }
    if (rc == 0) {
        rc = ftc__reduce_check(in->dtype, op);
    }
    if (rc == 0) {
        set_buffers(&r, in, at_root ? out : NULL);
        r.op->count = in->count;
        r.op->op = op;
        r.op->root = root;
    }
    return finish(&r, rc, work);
}

/* Shared by allgather, gather and scatter: a small block in and a large
 * one (size blocks) out, or the reverse. */
static int check_pair(req *r, const ftc_tensor *small, const char *sname,
                      const ftc_tensor *large, const char *lname,
                      bool large_here)
{
    int rc = check_tensor(r, small, sname);
    if (rc == 0 && large_here) {
        rc = check_tensor(r, large, lname);
        if (rc == 0) {
            rc = same_type(r, small, large);
        }
        if (rc == 0) {
            rc = count_is(r, lname, large->count,
                          small->count * (size_t)r->pg->size);
        }
    }
    return rc;
}

int ftc_pg_allgather(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                     const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__ALLGATHER, opts, work);
    if (rc == 0) {
        rc = check_pair(&r, in, "input", out, "output", true);
    }
    if (rc == 0) {
        set_buffers(&r, in, out);
        r.op->count = in->count;
    }
    return finish(&r, rc, work);
}

int ftc_pg_allgatherv(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                      const size_t *counts, const ftc_pg_op_opts *opts,
                      ftc_work **work)
{
    req r;
    size_t sum = 0;
    int rc = begin(&r, pg, FTC__ALLGATHERV, opts, work);
    if (rc == 0) {
        rc = check_tensor(&r, in, "input");
    }
    if (rc == 0) {
        rc = check_tensor(&r, out, "output");
    }
    if (rc == 0) {
        rc = same_type(&r, in, out);
    }
    if (rc == 0) {
        rc = copy_counts(&r, counts, &r.op->counts, ftc_dtype_size(in->dtype),
                         &sum);
    }
    if (rc == 0) {
        rc = count_is(&r, "input", in->count, counts[pg->rank]);
    }
    if (rc == 0) {
        rc = count_is(&r, "output", out->count, sum);
    }
    if (rc == 0) {
        set_buffers(&r, in, out);
        r.op->count = in->count;
    }
    return finish(&r, rc, work);
}

int ftc_pg_reduce_scatter(ftc_pg *pg, const ftc_tensor *in,
                          const ftc_tensor *out, int op,
                          const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__REDUCE_SCATTER, opts, work);
    if (rc == 0) {
        rc = check_pair(&r, out, "output", in, "input", true);
    }
    if (rc == 0) {
        rc = ftc__reduce_check(in->dtype, op);
    }
    if (rc == 0) {
        set_buffers(&r, in, out);
        r.op->count = out->count;
        r.op->op = op;
    }
    return finish(&r, rc, work);
}

/* alltoall and alltoallv share the counts checks. */
static int alltoall_common(req *r, const ftc_tensor *in, const size_t *scnt,
                           const ftc_tensor *out, const size_t *rcnt)
{
    size_t ssum = 0, rsum = 0;
    int rc = check_tensor(r, in, "input");
    if (rc == 0) {
        rc = check_tensor(r, out, "output");
    }
    if (rc == 0) {
        rc = same_type(r, in, out);
    }
    size_t elem = rc == 0 ? ftc_dtype_size(in->dtype) : 1;
    if (rc == 0) {
        rc = copy_counts(r, scnt, &r->op->counts, elem, &ssum);
    }
    if (rc == 0) {
        rc = copy_counts(r, rcnt, &r->op->rcounts, elem, &rsum);
    }
    if (rc == 0) {
        rc = count_is(r, "input", in->count, ssum);
    }
    if (rc == 0) {
        rc = count_is(r, "output", out->count, rsum);
    }
    if (rc == 0 && scnt[r->pg->rank] != rcnt[r->pg->rank]) {
        rc = ftc__seterr(FTC_EINVAL,
                         "%s: this rank sends itself %zu elements but "
                         "receives %zu",
                         r->what, scnt[r->pg->rank], rcnt[r->pg->rank]);
    }
    if (rc == 0) {
        set_buffers(r, in, out);
    }
    return rc;
}

int ftc_pg_alltoall(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                    const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__ALLTOALL, opts, work);
    size_t *counts = NULL;
    if (rc == 0) {
        rc = check_tensor(&r, in, "input");
    }
    if (rc == 0 && in->count % (size_t)pg->size != 0) {
        rc = ftc__seterr(FTC_EINVAL,
                         "alltoall: %zu elements do not split into %d "
                         "equal blocks",
                         in->count, pg->size);
    }
    if (rc == 0) {
        counts = ftc__malloc((size_t)pg->size * sizeof(size_t));
        rc = counts == NULL ? ftc__seterr(FTC_ENOMEM, "out of memory") : 0;
    }
    for (int i = 0; rc == 0 && i < pg->size; i++) {
        counts[i] = in->count / (size_t)pg->size;
    }
    if (rc == 0) {
        rc = alltoall_common(&r, in, counts, out, counts);
    }
    ftc__free(counts);
    return finish(&r, rc, work);
}

int ftc_pg_alltoallv(ftc_pg *pg, const ftc_tensor *in,
                     const size_t *send_counts, const ftc_tensor *out,
                     const size_t *recv_counts, const ftc_pg_op_opts *opts,
                     ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__ALLTOALLV, opts, work);
    if (rc == 0) {
        rc = alltoall_common(&r, in, send_counts, out, recv_counts);
    }
    return finish(&r, rc, work);
}

/* gather and scatter are mirror images: a block per rank on one side, all
 * blocks at the root on the other. */
static int rooted_blocks(ftc_pg *pg, int coll, const ftc_tensor *in,
                         const ftc_tensor *out, int root,
                         const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    bool gather = coll == FTC__GATHER;
    const ftc_tensor *block = gather ? in : out, *all = gather ? out : in;
    int rc = begin(&r, pg, coll, opts, work);
    if (rc == 0) {
        rc = check_rank(&r, root, "root", false);
    }
    bool at_root = rc == 0 && pg->rank == root;
    if (rc == 0) {
        rc = check_pair(&r, block, gather ? "input" : "output", all,
                        gather ? "output" : "input", at_root);
    }
    if (rc == 0) {
        set_buffers(&r, gather || at_root ? in : NULL,
                    !gather || at_root ? out : NULL);
        r.op->count = block->count;
        r.op->root = root;
    }
    return finish(&r, rc, work);
}

int ftc_pg_gather(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                  int root, const ftc_pg_op_opts *opts, ftc_work **work)
{
    return rooted_blocks(pg, FTC__GATHER, in, out, root, opts, work);
}

int ftc_pg_scatter(ftc_pg *pg, const ftc_tensor *in, const ftc_tensor *out,
                   int root, const ftc_pg_op_opts *opts, ftc_work **work)
{
    return rooted_blocks(pg, FTC__SCATTER, in, out, root, opts, work);
}

int ftc_pg_barrier(ftc_pg *pg, const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, FTC__BARRIER, opts, work);
    return finish(&r, rc, work);
}

static int p2p(ftc_pg *pg, int coll, const ftc_tensor *buf, int peer,
               uint32_t tag, const ftc_pg_op_opts *opts, ftc_work **work)
{
    req r;
    int rc = begin(&r, pg, coll, opts, work);
    if (rc == 0) {
        rc = check_tensor(&r, buf, "buffer");
    }
    if (rc == 0) {
        rc = check_rank(&r, peer, coll == FTC__SEND ? "destination" : "source",
                        coll == FTC__RECV);
    }
    if (rc == 0 && peer == pg->rank) {
        rc =
            ftc__seterr(FTC_EINVAL, "%s: a rank cannot message itself", r.what);
    }
    if (rc == 0) {
        set_buffers(&r, buf, buf);
        r.op->count = buf->count;
        r.op->root = peer;
        r.op->tag = tag;
    }
    return finish(&r, rc, work);
}

int ftc_pg_send(ftc_pg *pg, const ftc_tensor *buf, int dst, uint32_t tag,
                const ftc_pg_op_opts *opts, ftc_work **work)
{
    return p2p(pg, FTC__SEND, buf, dst, tag, opts, work);
}

int ftc_pg_recv(ftc_pg *pg, const ftc_tensor *buf, int src, uint32_t tag,
                const ftc_pg_op_opts *opts, ftc_work **work)
{
    return p2p(pg, FTC__RECV, buf, src, tag, opts, work);
}
