/* Work items: the handle an asynchronous operation returns. Two
 * references (the caller's and the engine's); the result is written once
 * and published with a release store, so waiters can read it without the
 * group's lock. */
#include "pg/pg_int.h"

static _Thread_local bool in_callback;

bool ftc__in_callback(void)
{
    return in_callback;
}

void ftc__set_in_callback(bool on)
{
    in_callback = on;
}

ftc_work *ftc__work_new(ftc_pg *pg, int coll, const ftc_pg_op_opts *o)
{
    ftc_work *w = ftc__calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->magic = FTC__WORK_MAGIC;
    atomic_init(&w->refs, 2);
    atomic_init(&w->done, 0);
    w->coll = coll;
    w->source = -1;
    w->pg = pg;
    if (o != NULL) {
        w->cb = o->done;
        w->cb_arg = o->done_arg;
    }
    return w;
}

void ftc__work_trace_submit(ftc_work *w, const ftc__op *op)
{
    w->trace_t0 = ftc__trace_clock();
    if (w->trace_t0 == 0) {
        return;
    }
    size_t n = op->desc.send_count > op->desc.recv_count ? op->desc.send_count
                                                         : op->desc.recv_count;
    w->trace_bytes = op->coll == FTC__BARRIER ? 0 : n * op->elem;
    w->trace_dtype = op->dtype;
    w->trace_op = op->op;
    w->trace_device = op->desc.device;
    w->trace_step = ftc__trace_step();
}

/* The collective's span, from its submission to now: one async event
 * (collectives of a group overlap when pipelined). The group is still
 * valid: its work is not done yet. */
static void trace_done(ftc_work *w, int rc)
{
    const ftc_pg *pg = w->pg;
    bool reducing = w->coll == FTC__ALLREDUCE || w->coll == FTC__REDUCE ||
                    w->coll == FTC__REDUCE_SCATTER;
    bool cpu = w->trace_device == FTC_DEVICE_CPU;
    char stream[40];
    if (!cpu) {
        snprintf(stream, sizeof(stream), "%s:backend",
                 ftc_device_kind_name(w->trace_device));
    }
    const ftc__trace_arg args[] = {
        FTC__TRACE_ARG_UINT("bytes", w->trace_bytes),
        FTC__TRACE_ARG_STR("backend", pg->backend),
        FTC__TRACE_ARG_STR("dtype", w->coll == FTC__BARRIER
                                        ? "-"
                                        : ftc_dtype_name(w->trace_dtype)),
        FTC__TRACE_ARG_STR("op", reducing ? ftc_op_name(w->trace_op) : "-"),
        FTC__TRACE_ARG_STR("device", ftc_device_kind_name(w->trace_device)),
        FTC__TRACE_ARG_STR("stream", cpu ? "cpu" : stream),
        FTC__TRACE_ARG_UINT("seq", w->trace_seq),
        FTC__TRACE_ARG_UINT("epoch", pg->opts.epoch),
        FTC__TRACE_ARG_INT("rank", pg->rank),
        FTC__TRACE_ARG_INT("size", pg->size),
        FTC__TRACE_ARG_INT("rc", rc),
    };
    ftc__trace_async("collective", ftc__coll_name(w->coll), w->trace_t0,
                     ftc__now_ns(), w->trace_step, args,
                     sizeof(args) / sizeof(args[0]));
}

void ftc__work_finish(ftc_work *w, int rc, const char *msg)
{
    w->rc = rc;
    snprintf(w->msg, sizeof(w->msg), "%s", rc != 0 && msg ? msg : "");
    if (w->trace_t0 != 0) {
        trace_done(w, rc); /* after msg (it may be this thread's error) */
    }
    atomic_store_explicit(&w->done, 1, memory_order_release);
}

void ftc__work_unref(ftc_work *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1) {
        w->magic = 0;
        ftc__free(w);
    }
}

static int check(const ftc_work *w)
{
    if (w == NULL || w->magic != FTC__WORK_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a work handle");
    }
    return 0;
}

static bool is_done(const ftc_work *w)
{
    return atomic_load_explicit(&w->done, memory_order_acquire) != 0;
}

/* The result of a finished work, with its message in this thread. */
static int result(const ftc_work *w)
{
    if (w->rc != 0) {
        return ftc__seterr(w->rc, "%s", w->msg);
    }
    return 0;
}

int ftc_work_wait(ftc_work *w, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = check(w);
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_work_wait");
    if (rc != 0) {
        return rc;
    }
    if (in_callback) {
        return ftc__seterr(FTC_EMISUSE,
                           "ftc_work_wait inside a completion callback would "
                           "block the thread that completes works");
    }
    if (is_done(w)) {
        return result(w);
    }
    ftc_pg *pg = w->pg;
    int64_t dl =
        ftc__deadline_from_timeout(timeout_ms, FTC_TIMEOUT_INFINITE).ns;
    rc = pg->ops->wait != NULL ? pg->ops->wait(pg->impl, w, dl)
                               : ftc__pg_wait_completion(pg, w, dl);
    return rc != 0 ? rc : result(w);
}

int ftc_work_test(ftc_work *w, int *done)
{
    ftc__clearerr();
    int rc = check(w);
    if (rc != 0 || done == NULL) {
        return rc != 0 ? rc : ftc__seterr(FTC_EINVAL, "done is NULL");
    }
    *done = is_done(w);
    return *done ? result(w) : 0;
}

int ftc_work_error(ftc_work *w)
{
    ftc__clearerr();
    int rc = check(w);
    if (rc != 0) {
        return rc;
    }
    return is_done(w) ? result(w) : 0;
}

int ftc_work_source(ftc_work *w, int *rank)
{
    ftc__clearerr();
    int rc = check(w);
    if (rc != 0) {
        return rc;
    }
    if (w->coll != FTC__RECV || !is_done(w) || w->rc != 0) {
        return ftc__seterr(FTC_EINVAL,
                           "source is known only for a completed recv");
    }
    *rank = w->source;
    return 0;
}

void ftc_work_release(ftc_work *w)
{
    if (w != NULL && w->magic == FTC__WORK_MAGIC) {
        ftc__work_unref(w);
    }
}
