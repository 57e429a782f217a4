/* ftc.ControlCollectives: small collectives of bytes over a store (the
 * control plane: rendezvous data, barriers, agreement), every rank with
 * its own ftc.Store connection. Each call names its instance with a key
 * used once per group (None: the next automatic key). */
#include "ext.h"

typedef struct control {
    PyObject_HEAD
    PyObject *store; /* ftc.Store, kept alive and marked in use per call */
    ftc_control *g;
    int world;
} control;

/* Runs stmt (which sets rc) without the GIL, the store marked in use. */
#define CALL(self, stmt)                                                       \
    do {                                                                       \
        if (ftcpy_store_enter((self)->store) == NULL) {                        \
            return NULL;                                                       \
        }                                                                      \
        PyThreadState *ts_ = PyEval_SaveThread();                              \
        stmt;                                                                  \
        PyEval_RestoreThread(ts_);                                             \
        ftcpy_store_leave((self)->store);                                      \
    } while (0)

static PyObject *control_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"store",      "rank",    "world_size",
                            "generation", "timeout", NULL};
    PyObject *st, *t = Py_None;
    int rank, world;
    long long generation = -1;
    int64_t ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oii|$LO", names, &st, &rank,
                                     &world, &generation, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    ftc_store_client *c = ftcpy_store_enter(st);
    if (c == NULL) {
        return NULL;
    }
    ftc_control_opts o;
    ftc_control_opts_init(&o);
    o.generation = generation;
    ftc_control *g = NULL;
    int rc;
    PyThreadState *ts_ = PyEval_SaveThread();
    rc = ftc_control_create(c, rank, world, &o, &g, ms);
    PyEval_RestoreThread(ts_);
    ftcpy_store_leave(st);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    control *self = (control *)ftcpy_alloc(type);
    if (self == NULL) {
        ftc_control_destroy(g);
        return NULL;
    }
    self->store = Py_NewRef(st);
    self->g = g;
    self->world = world;
    return (PyObject *)self;
}

static void control_dealloc(PyObject *obj)
{
    control *self = (control *)obj;
    ftc_control_destroy(self->g);
    Py_XDECREF(self->store);
    ftcpy_free(obj);
}

/* A call's arguments: (key=None, [data,] timeout=None). */
typedef struct call_args {
    const char *key, *data;
    Py_ssize_t len;
    int64_t ms;
} call_args;

static int parse(PyObject *args, PyObject *kw, int with_data, call_args *a)
{
    static char *plain[] = {"key", "timeout", NULL};
    static char *withd[] = {"key", "data", "timeout", NULL};
    PyObject *k = Py_None, *d = NULL, *t = Py_None;
    int ok =
        with_data
            ? PyArg_ParseTupleAndKeywords(args, kw, "OO|O", withd, &k, &d, &t)
            : PyArg_ParseTupleAndKeywords(args, kw, "|OO", plain, &k, &t);
    if (!ok || ftcpy_timeout_ms(t, &a->ms) != 0) {
        return -1;
    }
    a->key = NULL;
    if (k != Py_None && ftcpy_key(k, &a->key) != 0) {
        return -1;
    }
    return with_data ? ftcpy_bytes(d, &a->data, &a->len) : 0;
}

static PyObject *values_list(int rc, ftc_store_value *v, int n)
{
    PyObject *out = rc != 0 ? ftcpy_raise(rc) : ftcpy_values_list(v, n);
    if (rc == 0) {
        ftc_store_values_free(v, (size_t)n);
    }
    PyMem_Free(v);
    return out;
}

static PyObject *bytes_result(int rc, void *v, size_t len)
{
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    PyObject *out = PyBytes_FromStringAndSize(v, (Py_ssize_t)len);
    ftc_free(v);
    return out;
}

static PyObject *control_barrier(PyObject *obj, PyObject *args, PyObject *kw)
{
    control *self = (control *)obj;
    call_args a;
    int rc;
    if (parse(args, kw, 0, &a) != 0) {
        return NULL;
    }
    CALL(self, rc = ftc_control_barrier(self->g, a.key, a.ms));
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

/* The calls sending data and returning None (broadcast_send,
 * gather_send). */
typedef int (*send_fn)(ftc_control *, const char *, const void *, size_t,
                       int64_t);

static PyObject *send_call(PyObject *obj, PyObject *args, PyObject *kw,
                           send_fn fn)
{
    control *self = (control *)obj;
    call_args a;
    int rc;
    if (parse(args, kw, 1, &a) != 0) {
        return NULL;
    }
    CALL(self, rc = fn(self->g, a.key, a.data, (size_t)a.len, a.ms));
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

/* The calls receiving bytes (broadcast_recv, scatter_recv). */
typedef int (*recv_fn)(ftc_control *, const char *, void **, size_t *, int64_t);

static PyObject *recv_call(PyObject *obj, PyObject *args, PyObject *kw,
                           recv_fn fn)
{
    control *self = (control *)obj;
    call_args a;
    void *v = NULL;
    size_t len = 0;
    int rc;
    if (parse(args, kw, 0, &a) != 0) {
        return NULL;
    }
    CALL(self, rc = fn(self->g, a.key, &v, &len, a.ms));
    return bytes_result(rc, v, len);
}

static PyObject *control_broadcast_send(PyObject *obj, PyObject *args,
                                        PyObject *kw)
{
    return send_call(obj, args, kw, ftc_control_broadcast_send);
}

static PyObject *control_broadcast_recv(PyObject *obj, PyObject *args,
                                        PyObject *kw)
{
    return recv_call(obj, args, kw, ftc_control_broadcast_recv);
}

static PyObject *control_gather_send(PyObject *obj, PyObject *args,
                                     PyObject *kw)
{
    return send_call(obj, args, kw, ftc_control_gather_send);
}

/* gather_recv and all_gather: data in, every rank's data out. */
static PyObject *collect(PyObject *obj, PyObject *args, PyObject *kw,
                         int (*fn)(ftc_control *, const char *, const void *,
                                   size_t, ftc_store_value *, int64_t))
{
    control *self = (control *)obj;
    call_args a;
    int rc;
    if (parse(args, kw, 1, &a) != 0) {
        return NULL;
    }
    ftc_store_value *v = PyMem_Calloc((size_t)self->world, sizeof(*v));
    if (v == NULL) {
        return PyErr_NoMemory();
    }
    if (ftcpy_store_enter(self->store) == NULL) {
        PyMem_Free(v);
        return NULL;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    rc = fn(self->g, a.key, a.data, (size_t)a.len, v, a.ms);
    PyEval_RestoreThread(ts_);
    ftcpy_store_leave(self->store);
    return values_list(rc, v, self->world);
}

static PyObject *control_gather_recv(PyObject *obj, PyObject *args,
                                     PyObject *kw)
{
    return collect(obj, args, kw, ftc_control_gather_recv);
}

static PyObject *control_all_gather(PyObject *obj, PyObject *args, PyObject *kw)
{
    return collect(obj, args, kw, ftc_control_all_gather);
}

static PyObject *control_scatter_send(PyObject *obj, PyObject *args,
                                      PyObject *kw)
{
    control *self = (control *)obj;
    static char *names[] = {"key", "data", "timeout", NULL};
    PyObject *k, *d, *t = Py_None;
    const char *key = NULL;
    int64_t ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names, &k, &d, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0 ||
        (k != Py_None && ftcpy_key(k, &key) != 0)) {
        return NULL;
    }
    PyObject *list = PySequence_List(d);
    if (list == NULL) {
        return NULL;
    }
    if (PyList_Size(list) != self->world) {
        Py_DECREF(list);
        return PyErr_Format(PyExc_ValueError,
                            "scatter_send needs one item per rank (%d), got "
                            "%zd",
                            self->world, PyList_Size(list));
    }
    ftc_store_value *v = PyMem_Calloc((size_t)self->world, sizeof(*v));
    int ok = v != NULL;
    for (int i = 0; ok && i < self->world; i++) {
        const char *p;
        Py_ssize_t len;
        ok = ftcpy_bytes(PyList_GetItem(list, i), &p, &len) == 0;
        v[i] = (ftc_store_value){.data = (void *)p, .len = (size_t)len};
    }
    PyObject *out = NULL;
    if (ok && ftcpy_store_enter(self->store) != NULL) {
        void *mine = NULL;
        size_t len = 0;
        int rc;
        PyThreadState *ts_ = PyEval_SaveThread();
        rc = ftc_control_scatter_send(self->g, key, v, &mine, &len, ms);
        PyEval_RestoreThread(ts_);
        ftcpy_store_leave(self->store);
        out = bytes_result(rc, mine, len);
    } else if (v == NULL) {
        PyErr_NoMemory();
    }
    PyMem_Free(v);
    Py_DECREF(list);
    return out;
}

static PyObject *control_scatter_recv(PyObject *obj, PyObject *args,
                                      PyObject *kw)
{
    return recv_call(obj, args, kw, ftc_control_scatter_recv);
}

static PyObject *control_all_sum(PyObject *obj, PyObject *args, PyObject *kw)
{
    control *self = (control *)obj;
    static char *names[] = {"key", "value", "timeout", NULL};
    PyObject *k, *t = Py_None;
    long long value;
    const char *key = NULL;
    int64_t ms, sum = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|O", names, &k, &value, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0 ||
        (k != Py_None && ftcpy_key(k, &key) != 0)) {
        return NULL;
    }
    CALL(self, rc = ftc_control_all_sum(self->g, key, value, &sum, ms));
    return rc != 0 ? ftcpy_raise(rc) : PyLong_FromLongLong(sum);
}

static PyObject *control_generation(PyObject *obj, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(ftc_control_generation(((control *)obj)->g));
}

#define KW(name, fn, doc)                                                      \
    {                                                                          \
        name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,   \
            doc                                                                \
    }

static PyMethodDef methods[] = {
    KW("barrier", control_barrier, "barrier(key=None, timeout=None)"),
    KW("broadcast_send", control_broadcast_send,
       "broadcast_send(key, data, timeout=None): the root's side"),
    KW("broadcast_recv", control_broadcast_recv,
       "broadcast_recv(key=None, timeout=None) -> bytes"),
    KW("gather_send", control_gather_send,
       "gather_send(key, data, timeout=None): a non-root's side"),
    KW("gather_recv", control_gather_recv,
       "gather_recv(key, data, timeout=None) -> list of bytes, rank order"),
    KW("scatter_send", control_scatter_send,
       "scatter_send(key, items, timeout=None) -> bytes: the root sends "
       "items[r] to rank r and gets its own"),
    KW("scatter_recv", control_scatter_recv,
       "scatter_recv(key=None, timeout=None) -> bytes"),
    KW("all_gather", control_all_gather,
       "all_gather(key, data, timeout=None) -> list of bytes, rank order"),
    KW("all_sum", control_all_sum,
       "all_sum(key, value, timeout=None) -> int: the sum over ranks"),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef getset[] = {
    {"generation", control_generation, NULL,
     "the rendezvous round this group instance belongs to", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot slots[] = {
    {Py_tp_doc,
     "ControlCollectives(store, rank, world_size, *, generation=-1, "
     "timeout=None)\n\nCollectives of bytes through a store. Each rank uses "
     "its own ftc.Store; generation < 0: the ranks agree on one (the k-th "
     "creation of the whole group is generation k), and a rank that already "
     "joined a generation is refused (ftc.Error FTC_ESTALE)."},
    {Py_tp_new, control_new},
    {Py_tp_dealloc, control_dealloc},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {0, NULL},
};

static PyType_Spec spec = {
    .name = "ftc.ControlCollectives",
    .basicsize = sizeof(control),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = slots,
};

int ftcpy_add_control(PyObject *module)
{
    return ftcpy_add_type(module, &spec, "ControlCollectives",
                          &ftcpy.control_type);
}
