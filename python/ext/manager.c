/* _ftc._Manager and ftc.ManagerWork: the fault-tolerance manager of one
 * rank (quorum rounds, healing into registered buffers, allreduce across
 * replica groups, the commit vote) on raw buffers; ftc/manager.py turns
 * tensors into (address, count, dtype) and keeps them alive. */
#include "ext.h"

#include <stdatomic.h> /* after Python.h, which comes first */

typedef struct manager {
    PyObject_HEAD
    ftc_manager *m;
    /* set_adopt's callable (None: off). ftc/manager.py passes one that
     * holds its Manager weakly, so no cycle needs the GC. */
    PyObject *adopt;
    /* set_prepare's callable (None: off), held the same way; released
     * once the manager is closed (no thread calls it then). */
    PyObject *prepare;
} manager;

/* Set by ftc.Manager's exit hook before it closes its manager: from then
 * on no quorum thread calls into Python, which may be finalizing (taking
 * the GIL then hangs or ends the thread). */
static atomic_bool finalizing;

typedef struct mwork {
    PyObject_HEAD
    ftc_manager_work *w;
    PyObject *owner; /* the manager, alive while the work is */
} mwork;

/* Options from the environment `ftc run` sets, then the keywords given. */
static PyObject *manager_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"lighthouse",
                            "replica_id",
                            "group_rank",
                            "group_size",
                            "store_addr",
                            "store_prefix",
                            "min_replica_size",
                            "timeout",
                            "quorum_timeout",
                            "connect_timeout",
                            "advertise_host",
                            "from_env",
                            "backend",
                            "heartbeat_interval",
                            NULL};
    const char *lighthouse = NULL, *replica_id = NULL, *store_addr = NULL;
    const char *store_prefix = NULL, *advertise = NULL, *backend = NULL;
    int group_rank = -1, group_size = -1, from_env = 1;
    long long min_replicas = -1;
    PyObject *t = Py_None, *qt = Py_None, *ct = Py_None, *hb = Py_None;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "|$zziizzLOOOzpzO", names, &lighthouse, &replica_id,
            &group_rank, &group_size, &store_addr, &store_prefix, &min_replicas,
            &t, &qt, &ct, &advertise, &from_env, &backend, &hb)) {
        return NULL;
    }
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    ftc_pg_opts pg; /* the cross-replica group's backend, when named */
    ftc_pg_opts_init(&pg);
    pg.backend = backend;
    o.pg_opts = backend != NULL ? &pg : NULL;
    if ((t != Py_None && ftcpy_timeout_ms(t, &o.timeout_ms) != 0) ||
        (qt != Py_None && ftcpy_timeout_ms(qt, &o.quorum_timeout_ms) != 0) ||
        (ct != Py_None && ftcpy_timeout_ms(ct, &o.connect_timeout_ms) != 0) ||
        (hb != Py_None &&
         ftcpy_timeout_ms(hb, &o.heartbeat_interval_ms) != 0)) {
        return NULL;
    }
    if (from_env && ftc_manager_opts_from_env(&o) != 0) {
        return ftcpy_raise(FTC_EINVAL);
    }
    o.lighthouse = lighthouse != NULL ? lighthouse : o.lighthouse;
    o.replica_id = replica_id != NULL ? replica_id : o.replica_id;
    o.store_addr = store_addr != NULL ? store_addr : o.store_addr;
    o.store_prefix = store_prefix != NULL ? store_prefix : o.store_prefix;
    o.advertise_host = advertise != NULL ? advertise : o.advertise_host;
    o.group_rank = group_rank >= 0 ? group_rank : o.group_rank;
    o.group_size = group_size >= 0 ? group_size : o.group_size;
    o.min_replica_size = min_replicas >= 0 ? min_replicas : o.min_replica_size;
    ftc_manager *m = NULL;
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_manager_create(&o, &m);
    PyEval_RestoreThread(ts_);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    manager *self = (manager *)ftcpy_alloc(type);
    if (self == NULL) {
        ftc_manager_destroy(m);
        return NULL;
    }
    self->m = m;
    return (PyObject *)self;
}

static void stop(manager *self)
{
    if (self->m != NULL) {
        ftc_manager *m = self->m;
        self->m = NULL;
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_manager_destroy(m);
        PyEval_RestoreThread(ts_);
    }
    Py_CLEAR(self->prepare);
}

static void manager_dealloc(PyObject *obj)
{
    stop((manager *)obj); /* no work is left: each holds the manager */
    Py_CLEAR(((manager *)obj)->adopt);
    ftcpy_free(obj);
}

static ftc_manager *live(PyObject *obj)
{
    manager *self = (manager *)obj;
    if (self->m == NULL) {
        ftcpy_raise_msg(FTC_ECLOSED, "this ftc.Manager is closed");
    }
    return self->m;
}

static PyObject *manager_close(PyObject *obj, PyObject *unused)
{
    (void)unused;
    stop((manager *)obj);
    Py_RETURN_NONE;
}

/* shape: None (one dimension of count) or a sequence of at most 8 sizes
 * whose product is count. */
static int shape_arg(PyObject *o, long long count, int64_t *dims, int *ndim)
{
    if (o == Py_None) {
        dims[0] = count;
        *ndim = 1;
        return 0;
    }
    Py_ssize_t n = PySequence_Size(o);
    long long product = 1;
    for (Py_ssize_t i = 0; i < n && i < 8; i++) {
        PyObject *d = PySequence_GetItem(o, i);
        dims[i] = d != NULL ? PyLong_AsLongLong(d) : -1;
        Py_XDECREF(d);
        product *= dims[i];
    }
    if (n < 0 || PyErr_Occurred()) {
        return -1;
    }
    if (n > 8 || product != count) {
        PyErr_Format(PyExc_ValueError,
                     "shape: %zd sizes of product %lld for %lld elements "
                     "(at most 8 sizes, their product the count)",
                     n, product, count);
        return -1;
    }
    *ndim = (int)n;
    return 0;
}

static PyObject *manager_register(PyObject *obj, PyObject *args, PyObject *kw)
{
    static char *names[] = {"name", "addr", "count", "dtype", "shape", NULL};
    const char *name;
    unsigned long long addr;
    long long count;
    int dtype, ndim;
    PyObject *shape_obj = Py_None;
    int64_t shape[8];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sKLi|O", names, &name, &addr,
                                     &count, &dtype, &shape_obj) ||
        shape_arg(shape_obj, count, shape, &ndim) != 0) {
        return NULL;
    }
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    int rc = ftc_manager_register(m, name, dtype, shape, ndim,
                                  (void *)(uintptr_t)addr);
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *manager_clear_state(PyObject *obj, PyObject *unused)
{
    (void)unused;
    ftc_manager *m = live(obj);
    int rc = m != NULL ? ftc_manager_clear_state(m) : -1;
    return rc != 0 ? (m != NULL ? ftcpy_raise(rc) : NULL) : Py_NewRef(Py_None);
}

static PyObject *manager_finish(PyObject *obj, PyObject *unused)
{
    (void)unused;
    ftc_manager *m = live(obj);
    int rc = m != NULL ? ftc_manager_finish(m) : -1;
    return rc != 0 ? (m != NULL ? ftcpy_raise(rc) : NULL) : Py_NewRef(Py_None);
}

static PyObject *manager_set_step(PyObject *obj, PyObject *args)
{
    long long step = 0, batches = 0;
    if (!PyArg_ParseTuple(args, "LL", &step, &batches)) {
        return NULL;
    }
    ftc_manager *m = live(obj);
    int rc = m != NULL ? ftc_manager_set_step(m, step, batches) : -1;
    return rc != 0 ? (m != NULL ? ftcpy_raise(rc) : NULL) : Py_NewRef(Py_None);
}

#ifndef PyBUF_READ /* outside the limited API's headers before 3.12 */
#define PyBUF_READ 0x100
#endif

/* A healed state's buffers as [(name, dtype, shape, memoryview)], the
 * views read-only over the manager's staging, released once the callable
 * returns (touching one later raises ValueError). */
static PyObject *views_list(const ftc_manager_buffer_view *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *shape = PyTuple_New(v[i].ndim);
        for (int d = 0; shape != NULL && d < v[i].ndim; d++) {
            PyTuple_SetItem(shape, d, PyLong_FromLongLong(v[i].shape[d]));
        }
        PyObject *mv = PyMemoryView_FromMemory(
            (char *)(uintptr_t)v[i].data, (Py_ssize_t)v[i].nbytes, PyBUF_READ);
        PyObject *item =
            shape != NULL && mv != NULL
                ? Py_BuildValue("(siNN)", v[i].name, v[i].dtype, shape, mv)
                : NULL;
        if (item == NULL) {
            Py_XDECREF(shape);
            Py_XDECREF(mv);
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    return list;
}

static void release_views(PyObject *list)
{
    for (Py_ssize_t i = 0; i < PyList_Size(list); i++) {
        PyObject *mv = PyTuple_GetItem(PyList_GetItem(list, i), 3);
        PyObject *r = PyObject_CallMethod(mv, "release", NULL);
        Py_XDECREF(r);
    }
}

/* ftc_manager_adopt_fn: runs on the training thread inside a manager call
 * that released the GIL; an exception is printed and fails the adopt. */
static int adopt_trampoline(void *user, const ftc_manager_buffer_view *v,
                            size_t n)
{
    manager *self = user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *list = views_list(v, n);
    PyObject *r = list != NULL
                      ? PyObject_CallFunctionObjArgs(self->adopt, list, NULL)
                      : NULL;
    if (list != NULL) {
        release_views(list);
    }
    int rc = r != NULL ? 0 : 1;
    if (r == NULL) {
        PyErr_WriteUnraisable(self->adopt);
    }
    Py_XDECREF(r);
    Py_XDECREF(list);
    PyGILState_Release(g);
    return rc;
}

/* A callback argument: a callable or None; else TypeError naming what. */
static bool callable_or_none(PyObject *fn, const char *what)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s: a callable or None", what);
        return false;
    }
    return true;
}

/* Holds fn (None: nothing) in *slot, the C side's callback now set,
 * releasing the one held before. */
static PyObject *keep_callback(PyObject **slot, PyObject *fn)
{
    PyObject *old = *slot;
    *slot = fn != Py_None ? Py_NewRef(fn) : NULL;
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static PyObject *manager_set_adopt(PyObject *obj, PyObject *fn)
{
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    if (!callable_or_none(fn, "set_adopt")) {
        return NULL;
    }
    int rc =
        ftc_manager_set_adopt(m, fn != Py_None ? adopt_trampoline : NULL, obj);
    return rc != 0 ? ftcpy_raise(rc)
                   : keep_callback(&((manager *)obj)->adopt, fn);
}

/* ftc_manager_prepare_fn: runs on the quorum thread, or on the training
 * thread inside should_commit, which released the GIL; an exception is
 * printed and fails the preparing. */
static int prepare_trampoline(void *user)
{
    manager *self = user;
    if (atomic_load(&finalizing)) {
        return -1;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r =
        self->prepare != NULL ? PyObject_CallObject(self->prepare, NULL) : NULL;
    if (r == NULL && self->prepare != NULL) {
        PyErr_WriteUnraisable(self->prepare);
    }
    int rc = r != NULL ? 0 : -1;
    Py_XDECREF(r);
    PyGILState_Release(g);
    return rc;
}

static PyObject *manager_set_prepare(PyObject *obj, PyObject *fn)
{
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    if (!callable_or_none(fn, "set_prepare")) {
        return NULL;
    }
    int rc = ftc_manager_set_prepare(
        m, fn != Py_None ? prepare_trampoline : NULL, obj);
    return rc != 0 ? ftcpy_raise(rc)
                   : keep_callback(&((manager *)obj)->prepare, fn);
}

static PyObject *set_finalizing(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    atomic_store(&finalizing, true);
    Py_RETURN_NONE;
}

static PyObject *manager_start_quorum(PyObject *obj, PyObject *args,
                                      PyObject *kw)
{
    static char *names[] = {"shrink_only", "allow_heal", "heal_in_place",
                            "timeout", NULL};
    int shrink = 0, heal = 1, in_place = 0;
    PyObject *t = Py_None;
    ftc_manager_quorum_opts o;
    ftc_manager_quorum_opts_init(&o);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$pppO", names, &shrink, &heal,
                                     &in_place, &t) ||
        ftcpy_timeout_ms(t, &o.timeout_ms) != 0) {
        return NULL;
    }
    o.shrink_only = shrink;
    o.no_heal = !heal;
    o.heal_in_place = in_place;
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    /* It may wait for the works of the step before (bounded). */
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_manager_start_quorum(m, &o);
    PyEval_RestoreThread(ts_);
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

/* The calls taking only (timeout=None). */
static int timeout_arg(PyObject *args, PyObject *kw, int64_t *ms)
{
    static char *names[] = {"timeout", NULL};
    PyObject *t = Py_None;
    return PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &t) &&
                   ftcpy_timeout_ms(t, ms) == 0
               ? 0
               : -1;
}

static PyObject *manager_wait_quorum(PyObject *obj, PyObject *args,
                                     PyObject *kw)
{
    int64_t ms;
    ftc_manager *m = timeout_arg(args, kw, &ms) == 0 ? live(obj) : NULL;
    if (m == NULL) {
        return NULL;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_manager_wait_quorum(m, ms);
    PyEval_RestoreThread(ts_);
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *manager_should_commit(PyObject *obj, PyObject *args,
                                       PyObject *kw)
{
    int64_t ms;
    ftc_manager *m = timeout_arg(args, kw, &ms) == 0 ? live(obj) : NULL;
    if (m == NULL) {
        return NULL;
    }
    int commit = 0;
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_manager_should_commit(m, &commit, ms);
    PyEval_RestoreThread(ts_);
    return rc != 0 ? ftcpy_raise(rc) : PyBool_FromLong(commit);
}

static PyObject *manager_allreduce(PyObject *obj, PyObject *args, PyObject *kw)
{
    static char *names[] = {"addr", "count", "dtype", "op", "timeout", NULL};
    unsigned long long addr;
    long long count;
    int dtype, op;
    PyObject *t = Py_None;
    int64_t ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "KLii|O", names, &addr, &count,
                                     &dtype, &op, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    mwork *w = (mwork *)ftcpy_alloc((PyTypeObject *)ftcpy.mwork_type);
    if (w == NULL) {
        return NULL;
    }
    ftc_tensor buf =
        ftc_tensor_cpu((void *)(uintptr_t)addr, (size_t)count, dtype);
    PyThreadState *ts_ = PyEval_SaveThread(); /* may wait for the round */
    int rc = ftc_manager_allreduce(m, &buf, op, &w->w, ms);
    PyEval_RestoreThread(ts_);
    if (rc != 0) {
        Py_DECREF(w);
        return ftcpy_raise(rc);
    }
    w->owner = Py_NewRef(obj);
    return (PyObject *)w;
}

static PyObject *manager_report_error(PyObject *obj, PyObject *args)
{
    const char *msg;
    ftc_manager *m = PyArg_ParseTuple(args, "s", &msg) ? live(obj) : NULL;
    if (m == NULL) {
        return NULL;
    }
    ftc_manager_report_error(m, FTC_EPEER, msg);
    Py_RETURN_NONE;
}

static PyObject *manager_errored(PyObject *obj, PyObject *unused)
{
    (void)unused;
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    char msg[512];
    int rc = ftc_manager_errored(m, msg, sizeof(msg));
    return rc == 0 ? Py_NewRef(Py_None) : PyUnicode_FromString(msg);
}

/* The state getters: closure picks one. */
enum {
    STEP,
    BATCHES,
    PARTICIPANTS,
    PARTICIPATING,
    HEALING,
    RRANK,
    RSIZE,
    QUORUM_ID,
    REPLICA_ID
};

static PyObject *manager_get(PyObject *obj, void *closure)
{
    ftc_manager *m = live(obj);
    if (m == NULL) {
        return NULL;
    }
    char id[256];
    switch ((int)(intptr_t)closure) {
    case STEP:
        return PyLong_FromLongLong(ftc_manager_current_step(m));
    case BATCHES:
        return PyLong_FromLongLong(ftc_manager_batches_committed(m));
    case PARTICIPANTS:
        return PyLong_FromLongLong(ftc_manager_num_participants(m));
    case PARTICIPATING:
        return PyBool_FromLong(ftc_manager_is_participating(m));
    case HEALING:
        return PyBool_FromLong(ftc_manager_is_healing(m));
    case RRANK:
        return PyLong_FromLongLong(ftc_manager_replica_rank(m));
    case RSIZE:
        return PyLong_FromLongLong(ftc_manager_replica_world_size(m));
    case QUORUM_ID:
        return PyLong_FromLongLong(ftc_manager_quorum_id(m));
    default:
        ftc_manager_replica_id(m, id, sizeof(id));
        return PyUnicode_FromString(id);
    }
}

#define KW(name, fn, doc)                                                      \
    {                                                                          \
        name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,   \
            doc                                                                \
    }
#define GET(name, which, doc)                                                  \
    {                                                                          \
        name, manager_get, NULL, doc, (void *)(intptr_t)(which)                \
    }

static PyMethodDef manager_methods[] = {
    KW("register", manager_register,
       "register(name, addr, count, dtype, shape=None): a state buffer "
       "healing fills"),
    {"clear_state", manager_clear_state, METH_NOARGS,
     "clear_state(): forgets every registered buffer (between steps)"},
    {"set_step", manager_set_step, METH_VARARGS,
     "set_step(step, batches_committed): progress restored from a "
     "checkpoint (between steps)"},
    {"set_adopt", manager_set_adopt, METH_O,
     "set_adopt(fn or None): fn([(name, dtype, shape, memoryview)]) takes a "
     "healed state in its source's layout instead of the registered buffers"},
    {"set_prepare", manager_set_prepare, METH_O,
     "set_prepare(fn or None): fn() registers the state right before the "
     "manager reads it (on the quorum thread when serving a healer)"},
    KW("start_quorum", manager_start_quorum,
       "start_quorum(*, shrink_only=False, allow_heal=True, "
       "heal_in_place=False, timeout=None)"),
    KW("wait_quorum", manager_wait_quorum, "wait_quorum(timeout=None)"),
    KW("allreduce", manager_allreduce,
       "allreduce(addr, count, dtype, op, timeout=None) -> ManagerWork"),
    KW("should_commit", manager_should_commit,
       "should_commit(timeout=None) -> bool: the step's vote"),
    {"report_error", manager_report_error, METH_VARARGS,
     "report_error(message): this step votes no"},
    {"errored", manager_errored, METH_NOARGS,
     "errored() -> str or None: the step's latched error"},
    {"finish", manager_finish, METH_NOARGS,
     "finish(): the run reached its end; close() then tells the lighthouse "
     "the job finished at this step"},
    {"close", manager_close, METH_NOARGS,
     "close(): leaves the job and frees everything"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef manager_getset[] = {
    GET("current_step", STEP, "committed steps"),
    GET("batches_committed", BATCHES, "batches of committed steps"),
    GET("num_participants", PARTICIPANTS, "replicas the averages count"),
    GET("participating", PARTICIPATING, "whether this replica contributes"),
    GET("healing", HEALING, "whether it healed in this round"),
    GET("replica_rank", RRANK, "its rank among the quorum's replicas"),
    GET("replica_world_size", RSIZE, "replicas in the quorum"),
    GET("quorum_id", QUORUM_ID, "the current quorum's id"),
    GET("replica_id", REPLICA_ID, "this incarnation's id"),
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot manager_slots[] = {
    {Py_tp_doc, "_Manager(**options): use ftc.Manager"},
    {Py_tp_new, manager_new},
    {Py_tp_dealloc, manager_dealloc},
    {Py_tp_methods, manager_methods},
    {Py_tp_getset, manager_getset},
    {0, NULL},
};

static PyType_Spec manager_spec = {
    .name = "ftc._Manager",
    .basicsize = sizeof(manager),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = manager_slots,
};

/* ----------------------------------------------------------------- work */

static void mwork_dealloc(PyObject *obj)
{
    mwork *self = (mwork *)obj;
    /* ftc_manager_destroy (close) released every work already; a work
     * kept past close must not be released again */
    if (self->w != NULL && self->owner != NULL &&
        ((manager *)self->owner)->m != NULL) {
        ftc_manager_work_release(self->w); /* should_commit waits for it */
    }
    Py_XDECREF(self->owner);
    ftcpy_free(obj);
}

static PyObject *mwork_wait(PyObject *obj, PyObject *args, PyObject *kw)
{
    mwork *self = (mwork *)obj;
    int64_t ms;
    if (timeout_arg(args, kw, &ms) != 0) {
        return NULL;
    }
    if (self->w == NULL || ((manager *)self->owner)->m == NULL) {
        return ftcpy_raise_msg(FTC_EMISUSE, "this work was waited for "
                                            "already, or its manager closed");
    }
    ftc_manager_work *w = self->w;
    self->w = NULL; /* waited once: released below */
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = ftc_manager_work_wait(w, ms);
    ftc_manager_work_release(w);
    PyEval_RestoreThread(ts_);
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyMethodDef mwork_methods[] = {
    KW("wait", mwork_wait,
       "wait(timeout=None): the allreduce's result is in the buffer; raises "
       "its (latched) error"),
    {NULL, NULL, 0, NULL},
};

static PyType_Slot mwork_slots[] = {
    {Py_tp_doc, "ManagerWork: an allreduce across replica groups"},
    {Py_tp_dealloc, mwork_dealloc},
    {Py_tp_methods, mwork_methods},
    {0, NULL},
};

static PyType_Spec mwork_spec = {
    .name = "ftc.ManagerWork",
    .basicsize = sizeof(mwork),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = mwork_slots,
};

static PyMethodDef functions[] = {
    {"set_finalizing", set_finalizing, METH_NOARGS,
     "set_finalizing(): no prepare function is called from now on (at "
     "exit)"},
    {NULL, NULL, 0, NULL},
};

int ftcpy_add_manager(PyObject *module)
{
    return ftcpy_add_type(module, &manager_spec, "_Manager",
                          &ftcpy.manager_type) != 0 ||
                   ftcpy_add_type(module, &mwork_spec, "ManagerWork",
                                  &ftcpy.mwork_type) != 0 ||
                   PyModule_AddFunctions(module, functions) != 0
               ? -1
               : 0;
}
