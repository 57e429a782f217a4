/* ftc.ProcessGroup's C half (_ftc.ProcessGroup, _ftc.Work): a process
 * group over an ftc.Store and one generic submit that starts any
 * operation on raw buffers (address, element count, dtype code). The
 * Python half (ftc/process_group.py) turns tensors and arrays into those
 * and keeps them alive in the Work until it is released. */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "ext.h"

typedef struct pgobj {
    PyObject_HEAD
    PyObject *store; /* the ftc.Store it was created over */
    ftc_pg *pg;
} pgobj;

typedef struct work {
    PyObject_HEAD
    ftc_work *w;
    PyObject *keep; /* the buffers, alive until the work is released */
    size_t *counts; /* alltoallv/allgatherv counts, freed with the work */
    PyObject *group;
    struct work *next_done; /* in the completion queue */
} work;

/* Works started with notify=True are queued here by libftc's completion
 * callback (on a library thread, without the GIL: it only links the work
 * in) and handed out by next_completed() to the one thread that completes
 * their futures (ftc.torch). Each queued work holds a reference, taken at
 * submit and passed to the caller of next_completed(). */
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static work *done_head, *done_tail;

static void on_done(void *arg, ftc_work *fw, int rc)
{
    (void)fw;
    (void)rc;
    work *w = arg;
    pthread_mutex_lock(&done_mu);
    w->next_done = NULL;
    if (done_tail != NULL) {
        done_tail->next_done = w;
    } else {
        done_head = w;
    }
    done_tail = w;
    pthread_cond_signal(&done_cv);
    pthread_mutex_unlock(&done_mu);
}

/* The oldest completed work; NULL when none came within ms (< 0: no
 * limit). */
static work *take_done(int64_t ms)
{
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += (time_t)(ms / 1000);
    end.tv_nsec += (long)(ms % 1000) * 1000000;
    if (end.tv_nsec >= 1000000000) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&done_mu);
    int rc = 0;
    while (done_head == NULL && rc == 0) {
        rc = ms < 0 ? pthread_cond_wait(&done_cv, &done_mu)
                    : pthread_cond_timedwait(&done_cv, &done_mu, &end);
    }
    work *w = done_head;
    if (w != NULL) {
        done_head = w->next_done;
        if (done_head == NULL) {
            done_tail = NULL;
        }
    }
    pthread_mutex_unlock(&done_mu);
    return w;
}

static PyObject *next_completed(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"timeout", NULL};
    PyObject *t = Py_None;
    int64_t ms;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    work *w = take_done(ms == FTC_TIMEOUT_DEFAULT ? -1 : ms);
    PyEval_RestoreThread(ts_);
    return w != NULL ? (PyObject *)w : Py_NewRef(Py_None);
}

static const char *const colls[] = {
    "allreduce", "broadcast", "reduce",     "allgather", "reduce_scatter",
    "alltoall",  "gather",    "scatter",    "barrier",   "send",
    "recv",      "alltoallv", "allgatherv", NULL,
};

/* One operation's arguments. */
typedef struct call {
    int coll; /* index in colls */
    const ftc_tensor *in, *out;
    int op, root;
    unsigned tag;
    const size_t *counts, *recv_counts; /* the v variants */
} call;

static PyObject *pg_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {
        "store",   "prefix",          "rank", "size", "backend",
        "timeout", "connect_timeout", "host", NULL};
    PyObject *st, *t = Py_None, *ct = Py_None;
    const char *prefix, *backend = NULL, *host = NULL;
    int rank, size;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Osii|$zOOz", names, &st,
                                     &prefix, &rank, &size, &backend, &t, &ct,
                                     &host) ||
        ftcpy_timeout_ms(t, &o.timeout_ms) != 0 ||
        ftcpy_timeout_ms(ct, &o.connect_timeout_ms) != 0) {
        return NULL;
    }
    o.backend = backend;
    o.host = host;
    ftc_store_client *c = ftcpy_store_enter(st);
    if (c == NULL) {
        return NULL;
    }
    ftc_pg *pg = NULL;
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_pg_create(c, prefix, rank, size, &o, &pg);
    PyEval_RestoreThread(ts_);
    ftcpy_store_leave(st);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    pgobj *self = (pgobj *)ftcpy_alloc(type);
    if (self == NULL) {
        ftc_pg_destroy(pg);
        return NULL;
    }
    self->store = Py_NewRef(st);
    self->pg = pg;
    return (PyObject *)self;
}

static void destroy(pgobj *self)
{
    if (self->pg != NULL) {
        ftc_pg *pg = self->pg;
        self->pg = NULL;
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_pg_destroy(pg);
        PyEval_RestoreThread(ts_);
    }
}

static void pg_dealloc(PyObject *obj)
{
    pgobj *self = (pgobj *)obj;
    destroy(self); /* no Work is left: each holds the group */
    Py_XDECREF(self->store);
    ftcpy_free(obj);
}

static ftc_pg *live(pgobj *self)
{
    if (self->pg == NULL) {
        ftcpy_raise_msg(FTC_ECLOSED, "this ftc.ProcessGroup is closed");
    }
    return self->pg;
}

/* A buffer argument: (address, count), or count < 0 for none. */
static ftc_tensor tensor(unsigned long long addr, long long count, int dtype)
{
    return ftc_tensor_cpu((void *)(uintptr_t)addr, (size_t)count, dtype);
}

static int start(ftc_pg *pg, const call *c, const ftc_pg_op_opts *o,
                 ftc_work **w)
{
    const ftc_tensor *in = c->in, *out = c->out;
    int op = c->op, root = c->root;
    unsigned tag = c->tag;
    switch (c->coll) {
    case 0:
        return ftc_pg_allreduce(pg, in, out, op, o, w);
    case 1:
        return ftc_pg_broadcast(pg, out, root, o, w);
    case 2:
        return ftc_pg_reduce(pg, in, out, op, root, o, w);
    case 3:
        return ftc_pg_allgather(pg, in, out, o, w);
    case 4:
        return ftc_pg_reduce_scatter(pg, in, out, op, o, w);
    case 5:
        return ftc_pg_alltoall(pg, in, out, o, w);
    case 6:
        return ftc_pg_gather(pg, in, out, root, o, w);
    case 7:
        return ftc_pg_scatter(pg, in, out, root, o, w);
    case 8:
        return ftc_pg_barrier(pg, o, w);
    case 9:
        return ftc_pg_send(pg, in, root, tag, o, w);
    case 10:
        return ftc_pg_recv(pg, out, root, tag, o, w);
    case 11:
        return ftc_pg_alltoallv(pg, in, c->counts, out, c->recv_counts, o, w);
    default:
        return ftc_pg_allgatherv(pg, in, out, c->counts, o, w);
    }
}

/* A sequence of counts (None: none) into a new array of n size_t. */
static int counts_arg(PyObject *seq, int n, size_t **out)
{
    *out = NULL;
    if (seq == Py_None) {
        return 0;
    }
    PyObject *list = PySequence_List(seq);
    if (list == NULL) {
        return -1;
    }
    if (PyList_Size(list) != n) {
        Py_DECREF(list);
        PyErr_Format(PyExc_ValueError, "%d counts are needed (one per rank)",
                     n);
        return -1;
    }
    *out = PyMem_Calloc((size_t)n, sizeof(size_t));
    for (int i = 0; *out != NULL && i < n; i++) {
        long long v = PyLong_AsLongLong(PyList_GetItem(list, i));
        if (v < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "a count is negative");
            }
            PyMem_Free(*out);
            *out = NULL;
            break;
        }
        (*out)[i] = (size_t)v;
    }
    Py_DECREF(list);
    return *out != NULL ? 0 : (PyErr_Occurred() ? -1 : (PyErr_NoMemory(), -1));
}

static PyObject *pg_submit(PyObject *obj, PyObject *args, PyObject *kw)
{
    static char *names[] = {"coll",      "in_addr",     "in_count", "out_addr",
                            "out_count", "dtype",       "op",       "root",
                            "tag",       "timeout",     "keep",     "notify",
                            "counts",    "recv_counts", NULL};
    pgobj *self = (pgobj *)obj;
    const char *name;
    unsigned long long in_addr, out_addr;
    long long in_count, out_count;
    int dtype, op, root;
    unsigned int tag;
    PyObject *t, *keep, *counts = Py_None, *recv_counts = Py_None;
    int notify = 0;
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sKLKLiiiIOO|pOO", names, &name,
                                     &in_addr, &in_count, &out_addr, &out_count,
                                     &dtype, &op, &root, &tag, &t, &keep,
                                     &notify, &counts, &recv_counts) ||
        ftcpy_timeout_ms(t, &o.timeout_ms) != 0) {
        return NULL;
    }
    int coll = 0;
    while (colls[coll] != NULL && strcmp(colls[coll], name) != 0) {
        coll++;
    }
    if (colls[coll] == NULL) {
        return PyErr_Format(PyExc_ValueError, "no operation '%s'", name);
    }
    ftc_pg *pg = live(self);
    if (pg == NULL) {
        return NULL;
    }
    ftc_tensor in = tensor(in_addr, in_count, dtype);
    ftc_tensor out = tensor(out_addr, out_count, dtype);
    work *w = (work *)ftcpy_alloc((PyTypeObject *)ftcpy.work_type);
    if (w == NULL) {
        return NULL;
    }
    w->keep = Py_NewRef(keep);
    w->group = Py_NewRef(obj);
    size_t *rc_counts = NULL;
    int size = ftc_pg_size(pg);
    if (counts_arg(counts, size, &w->counts) != 0 ||
        counts_arg(recv_counts, size, &rc_counts) != 0) {
        Py_DECREF(w);
        return NULL;
    }
    bool with_recv = rc_counts != NULL;
    if (with_recv && w->counts == NULL) {
        PyMem_Free(rc_counts);
        Py_DECREF(w);
        return PyErr_Format(PyExc_ValueError, "recv_counts without counts");
    }
    if (with_recv) { /* one allocation for both, freed with w */
        size_t *both =
            PyMem_Realloc(w->counts, 2 * (size_t)size * sizeof(size_t));
        if (both == NULL) {
            PyMem_Free(rc_counts);
            Py_DECREF(w);
            return PyErr_NoMemory();
        }
        memcpy(both + size, rc_counts, (size_t)size * sizeof(size_t));
        PyMem_Free(rc_counts);
        w->counts = both;
    }
    if (notify) {
        /* the queue's reference: the callback may run before start returns */
        Py_INCREF(w);
        o.done = on_done;
        o.done_arg = w;
    }
    /* Starting an operation does not wait for peers. */
    call c = {
        .coll = coll,
        .in = in_count >= 0 ? &in : NULL,
        .out = out_count >= 0 ? &out : NULL,
        .op = op,
        .root = root,
        .tag = tag,
        .counts = w->counts,
        .recv_counts = with_recv ? w->counts + size : NULL,
    };
    int rc = start(pg, &c, &o, &w->w);
    if (rc != 0) {
        if (notify) {
            Py_DECREF(w); /* nothing started: no callback */
        }
        Py_DECREF(w);
        return ftcpy_raise(rc);
    }
    return (PyObject *)w;
}

static PyObject *pg_abort(PyObject *obj, PyObject *unused)
{
    (void)unused;
    ftc_pg *pg = live((pgobj *)obj);
    if (pg == NULL) {
        return NULL;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    ftc_pg_abort(pg);
    PyEval_RestoreThread(ts_);
    Py_RETURN_NONE;
}

static PyObject *pg_status(PyObject *obj, PyObject *unused)
{
    (void)unused;
    ftc_pg *pg = live((pgobj *)obj);
    int rc = pg != NULL ? ftc_pg_status(pg) : -1;
    return pg == NULL ? NULL : rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *pg_close(PyObject *obj, PyObject *unused)
{
    (void)unused;
    destroy((pgobj *)obj);
    Py_RETURN_NONE;
}

static PyObject *pg_rank(PyObject *obj, void *closure)
{
    ftc_pg *pg = live((pgobj *)obj);
    if (pg == NULL) {
        return NULL;
    }
    return PyLong_FromLong(closure != NULL ? ftc_pg_size(pg) : ftc_pg_rank(pg));
}

#define KW(name, fn, doc)                                                      \
    {                                                                          \
        name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,   \
            doc                                                                \
    }

static PyMethodDef pg_methods[] = {
    KW("submit", pg_submit,
       "submit(coll, in_addr, in_count, out_addr, out_count, dtype, op, "
       "root, tag, timeout, keep, notify=False) -> Work: starts an "
       "operation on raw buffers (count < 0: none); keep stays alive in the "
       "Work; notify: next_completed() hands the Work out once done"),
    {"abort", pg_abort, METH_NOARGS,
     "abort(): fails every pending operation at once (on every member)"},
    {"status", pg_status, METH_NOARGS,
     "status(): raises the group's failure, if it failed"},
    {"close", pg_close, METH_NOARGS, "close(): destroys the group"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef pg_getset[] = {
    {"rank", pg_rank, NULL, "this member's rank", NULL},
    {"size", pg_rank, NULL, "the number of members", (void *)1},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot pg_slots[] = {
    {Py_tp_doc, "_ProcessGroup(store, prefix, rank, size, *, backend=None, "
                "timeout=None, connect_timeout=None, host=None): use "
                "ftc.ProcessGroup"},
    {Py_tp_new, pg_new},
    {Py_tp_dealloc, pg_dealloc},
    {Py_tp_methods, pg_methods},
    {Py_tp_getset, pg_getset},
    {0, NULL},
};

static PyType_Spec pg_spec = {
    .name = "ftc._ProcessGroup",
    .basicsize = sizeof(pgobj),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = pg_slots,
};

/* ------------------------------------------------------------------ work */

static void work_dealloc(PyObject *obj)
{
    work *self = (work *)obj;
    if (self->w != NULL) {
        /* The buffers in keep must outlive the operation. */
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_work_wait(self->w, FTC_TIMEOUT_INFINITE);
        ftc_work_release(self->w);
        PyEval_RestoreThread(ts_);
    }
    PyMem_Free(self->counts);
    Py_XDECREF(self->keep);
    Py_XDECREF(self->group);
    ftcpy_free(obj);
}

static PyObject *work_wait(PyObject *obj, PyObject *args, PyObject *kw)
{
    static char *names[] = {"timeout", NULL};
    work *self = (work *)obj;
    PyObject *t = Py_None;
    int64_t ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_work_wait(self->w, ms);
    PyEval_RestoreThread(ts_);
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *work_is_completed(PyObject *obj, PyObject *unused)
{
    (void)unused;
    int done = 0;
    (void)ftc_work_test(((work *)obj)->w, &done);
    return PyBool_FromLong(done);
}

static PyObject *work_source(PyObject *obj, PyObject *unused)
{
    (void)unused;
    int src = -1;
    int rc = ftc_work_source(((work *)obj)->w, &src);
    return rc != 0 ? ftcpy_raise(rc) : PyLong_FromLong(src);
}

static PyObject *work_keep(PyObject *obj, void *closure)
{
    (void)closure;
    work *self = (work *)obj;
    return Py_NewRef(self->keep != NULL ? self->keep : Py_None);
}

static PyGetSetDef work_getset[] = {
    {"keep", work_keep, NULL, "what submit was given to keep alive", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef work_methods[] = {
    KW("wait", work_wait,
       "wait(timeout=None): until the operation completes; raises its error "
       "(ftc.TimeoutError when timeout passes first: the operation goes on)"),
    {"is_completed", work_is_completed, METH_NOARGS,
     "is_completed() -> bool (failed or not)"},
    {"source", work_source, METH_NOARGS,
     "source() -> int: the sender of a completed recv"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot work_slots[] = {
    {Py_tp_doc, "Work: one started operation (ftc.ProcessGroup's calls "
                "return it). Dropping a running Work waits for it: its "
                "buffers must outlive it."},
    {Py_tp_dealloc, work_dealloc},
    {Py_tp_methods, work_methods},
    {Py_tp_getset, work_getset},
    {0, NULL},
};

static PyType_Spec work_spec = {
    .name = "ftc.Work",
    .basicsize = sizeof(work),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = work_slots,
};

static PyMethodDef functions[] = {
    KW("next_completed", next_completed,
       "next_completed(timeout=None) -> Work or None: the oldest completed "
       "Work started with notify=True (None after timeout; timeout None "
       "waits without a limit)"),
    {NULL, NULL, 0, NULL},
};

int ftcpy_add_pg(PyObject *module)
{
    if (PyModule_AddFunctions(module, functions) != 0) {
        return -1;
    }
    return ftcpy_add_type(module, &pg_spec, "_ProcessGroup", &ftcpy.pg_type) !=
                       0 ||
                   ftcpy_add_type(module, &work_spec, "Work",
                                  &ftcpy.work_type) != 0
               ? -1
               : 0;
}
