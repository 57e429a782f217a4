/* ftc.Store: a client of ftc's store or of PyTorch's TCPStore (one
 * connection, many threads; every call releases the GIL while it waits).
 * close() never frees the connection under a running call: it cancels
 * that call and the last call to leave closes the connection. */
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "ext.h"

/* How long close() keeps cancelling the calls still running. */
#define CLOSE_WAIT_NS 10000000000LL

typedef struct store {
    PyObject_HEAD
    ftc_store_client *c;
    int inflight; /* calls running without the GIL (changed with it) */
    int closed;
} store;

ftc_store_client *ftcpy_store_enter(PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, (PyTypeObject *)ftcpy.store_type)) {
        PyErr_SetString(PyExc_TypeError, "an ftc.Store is needed");
        return NULL;
    }
    store *s = (store *)obj;
    if (s->closed) {
        ftcpy_raise_msg(FTC_ECLOSED, "this ftc.Store is closed");
        return NULL;
    }
    s->inflight++;
    return s->c;
}

void ftcpy_store_leave(PyObject *obj)
{
    store *s = (store *)obj;
    if (--s->inflight == 0 && s->closed && s->c != NULL) {
        ftc_store_client *c = s->c;
        s->c = NULL;
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_store_client_close(c);
        PyEval_RestoreThread(ts_);
    }
}

/* Runs stmt (which sets rc) on the client c without the GIL. */
#define CALL(self, c, stmt)                                                    \
    do {                                                                       \
        ftc_store_client *c = ftcpy_store_enter(self);                         \
        if (c == NULL) {                                                       \
            return NULL;                                                       \
        }                                                                      \
        PyThreadState *ts_ = PyEval_SaveThread();                              \
        stmt;                                                                  \
        PyEval_RestoreThread(ts_);                                             \
        ftcpy_store_leave(self);                                               \
    } while (0)

static PyObject *result_bytes(int rc, void *v, size_t len)
{
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    PyObject *out = PyBytes_FromStringAndSize(v, (Py_ssize_t)len);
    ftc_free(v);
    return out;
}

static PyObject *store_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"host",    "port",  "timeout", "connect_timeout",
                            "dialect", "token", NULL};
    const char *host;
    PyObject *port = Py_None, *timeout = Py_None, *connect = Py_None;
    const char *dialect = "v2";
    const char *token = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|O$OOsz", names, &host, &port,
                                     &timeout, &connect, &dialect, &token)) {
        return NULL;
    }
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.token = token;
    if (ftcpy_timeout_ms(timeout, &o.timeout_ms) != 0 ||
        ftcpy_timeout_ms(connect, &o.connect_timeout_ms) != 0) {
        return NULL;
    }
    if (strcmp(dialect, "v1") == 0) {
        o.dialect = FTC_STORE_DIALECT_V1;
    } else if (strcmp(dialect, "v2") != 0) {
        PyErr_Format(PyExc_ValueError,
                     "dialect must be 'v2' (PyTorch >= 2.1, ftc) or 'v1' "
                     "(PyTorch 1.13), got '%s'",
                     dialect);
        return NULL;
    }
    char addr[1100];
    if (port == Py_None) {
        snprintf(addr, sizeof(addr), "%s", host); /* "host:port" */
    } else {
        long p = PyLong_AsLong(port);
        if (p == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (p < 1 || p > 65535) {
            PyErr_Format(PyExc_ValueError, "port %ld is not in 1..65535", p);
            return NULL;
        }
        bool v6 = strchr(host, ':') != NULL;
        snprintf(addr, sizeof(addr), "%s%s%s:%ld", v6 ? "[" : "", host,
                 v6 ? "]" : "", p);
    }
    ftc_store_client *c = NULL;
    int rc;
    PyThreadState *ts_ = PyEval_SaveThread();
    rc = ftc_store_client_connect(addr, &o, &c);
    PyEval_RestoreThread(ts_);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    store *s = (store *)ftcpy_alloc(type);
    if (s == NULL) {
        ftc_store_client_close(c);
        return NULL;
    }
    s->c = c;
    return (PyObject *)s;
}

static void store_dealloc(PyObject *self)
{
    store *s = (store *)self;
    if (s->c != NULL) {
        ftc_store_client_close(s->c); /* no call runs: it would hold self */
    }
    ftcpy_free(self);
}

static PyObject *store_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    store *s = (store *)self;
    if (s->closed) {
        Py_RETURN_NONE;
    }
    s->closed = 1;
    /* A cancel reaches only a call that has begun inside libftc, so it is
     * repeated, with backoff, until the running calls have left (for up to
     * CLOSE_WAIT_NS; after that the last of them closes the connection). */
    int64_t waited = 0;
    for (long ns = 100000; s->inflight > 0 && waited < CLOSE_WAIT_NS;
         waited += ns, ns = ns < 10000000 ? ns * 2 : ns) {
        ftc_store_client_cancel(s->c);
        struct timespec ts = {0, ns};
        PyThreadState *ts_ = PyEval_SaveThread();
        nanosleep(&ts, NULL);
        PyEval_RestoreThread(ts_);
    }
    if (s->inflight == 0 && s->c != NULL) {
        ftc_store_client *c = s->c;
        s->c = NULL;
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_store_client_close(c);
        PyEval_RestoreThread(ts_);
    }
    Py_RETURN_NONE;
}

static PyObject *store_cancel(PyObject *self, PyObject *unused)
{
    (void)unused;
    store *s = (store *)self;
    if (s->c != NULL) {
        ftc_store_client_cancel(s->c);
    }
    Py_RETURN_NONE;
}

static PyObject *store_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *store_exit(PyObject *self, PyObject *args)
{
    (void)args;
    return store_close(self, NULL);
}

/* The calls taking (key, value, timeout=None) and returning None. */
typedef int (*key_value_fn)(ftc_store_client *, const char *, const void *,
                            size_t, int64_t);

static PyObject *key_value_call(PyObject *self, PyObject *args, PyObject *kw,
                                key_value_fn fn)
{
    static char *names[] = {"key", "value", "timeout", NULL};
    PyObject *k, *v, *t = Py_None;
    const char *key, *val;
    Py_ssize_t len;
    int64_t ms;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names, &k, &v, &t) ||
        ftcpy_key(k, &key) != 0 || ftcpy_bytes(v, &val, &len) != 0 ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = fn(c, key, val, (size_t)len, ms));
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *store_set(PyObject *self, PyObject *args, PyObject *kw)
{
    return key_value_call(self, args, kw, ftc_store_client_set);
}

static PyObject *store_append(PyObject *self, PyObject *args, PyObject *kw)
{
    return key_value_call(self, args, kw, ftc_store_client_append);
}

static PyObject *store_queue_push(PyObject *self, PyObject *args, PyObject *kw)
{
    return key_value_call(self, args, kw, ftc_store_client_queue_push);
}

/* The methods taking (key, timeout=None). */
static int key_args(PyObject *args, PyObject *kw, const char **key, int64_t *ms)
{
    static char *names[] = {"key", "timeout", NULL};
    PyObject *k, *t = Py_None;
    return PyArg_ParseTupleAndKeywords(args, kw, "O|O", names, &k, &t) &&
                   ftcpy_key(k, key) == 0 && ftcpy_timeout_ms(t, ms) == 0
               ? 0
               : -1;
}

static PyObject *store_get(PyObject *self, PyObject *args, PyObject *kw)
{
    const char *key;
    int64_t ms;
    void *v = NULL;
    size_t len = 0;
    int rc;
    if (key_args(args, kw, &key, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_get(c, key, &v, &len, ms));
    return result_bytes(rc, v, len);
}

static PyObject *store_add(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"key", "amount", "timeout", NULL};
    PyObject *k, *t = Py_None;
    long long amount = 1;
    const char *key;
    int64_t ms, out = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|LO", names, &k, &amount,
                                     &t) ||
        ftcpy_key(k, &key) != 0 || ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_add(c, key, amount, &out, ms));
    return rc != 0 ? ftcpy_raise(rc) : PyLong_FromLongLong(out);
}

static PyObject *store_compare_set(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"key", "expected", "desired", "timeout", NULL};
    PyObject *k, *e, *d, *t = Py_None;
    const char *key, *ev, *dv;
    Py_ssize_t elen, dlen;
    int64_t ms;
    void *v = NULL;
    size_t len = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O", names, &k, &e, &d,
                                     &t) ||
        ftcpy_key(k, &key) != 0 || ftcpy_bytes(e, &ev, &elen) != 0 ||
        ftcpy_bytes(d, &dv, &dlen) != 0 || ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c,
         rc = ftc_store_client_compare_set(c, key, ev, (size_t)elen, dv,
                                           (size_t)dlen, &v, &len, ms));
    return result_bytes(rc, v, len);
}

static PyObject *store_delete_key(PyObject *self, PyObject *args, PyObject *kw)
{
    const char *key;
    int64_t ms;
    int deleted = 0, rc;
    if (key_args(args, kw, &key, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_delete(c, key, &deleted, ms));
    return rc != 0 ? ftcpy_raise(rc) : PyBool_FromLong(deleted);
}

static PyObject *store_queue_len(PyObject *self, PyObject *args, PyObject *kw)
{
    const char *key;
    int64_t ms, n = 0;
    int rc;
    if (key_args(args, kw, &key, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_queue_len(c, key, &n, ms));
    return rc != 0 ? ftcpy_raise(rc) : PyLong_FromLongLong(n);
}

static PyObject *store_queue_pop(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"key", "block", "timeout", NULL};
    PyObject *k, *t = Py_None;
    int block = 1;
    const char *key;
    int64_t ms;
    void *v = NULL;
    size_t len = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pO", names, &k, &block, &t) ||
        ftcpy_key(k, &key) != 0 || ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_queue_pop(c, key, block, &v, &len, ms));
    return result_bytes(rc, v, len);
}

/* The arguments (keys, timeout=None); keys_done releases them. */
typedef struct keys_arg {
    const char **keys;
    Py_ssize_t n;
    PyObject *refs;
    int64_t ms;
} keys_arg;

static int keys_args(PyObject *args, PyObject *kw, keys_arg *a)
{
    static char *names[] = {"keys", "timeout", NULL};
    PyObject *k, *t = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", names, &k, &t) ||
        ftcpy_timeout_ms(t, &a->ms) != 0) {
        return -1;
    }
    return ftcpy_keys(k, &a->keys, &a->n, &a->refs);
}

static void keys_done(keys_arg *a)
{
    PyMem_Free(a->keys);
    Py_DECREF(a->refs);
}

/* The calls taking (keys, timeout=None); out is fn's result. */
typedef int (*keys_fn)(ftc_store_client *, const char *const *, size_t,
                       void *out, int64_t);

static int keys_call(PyObject *self, keys_arg *a, keys_fn fn, void *out)
{
    ftc_store_client *c = ftcpy_store_enter(self);
    if (c == NULL) {
        return -1;
    }
    PyThreadState *ts_ = PyEval_SaveThread();
    int rc = fn(c, a->keys, (size_t)a->n, out, a->ms);
    PyEval_RestoreThread(ts_);
    ftcpy_store_leave(self);
    return rc != 0 ? (ftcpy_raise(rc), -1) : 0;
}

static int check_keys(ftc_store_client *c, const char *const *keys, size_t n,
                      void *ready, int64_t ms)
{
    return ftc_store_client_check(c, keys, n, ready, ms);
}

static int wait_keys(ftc_store_client *c, const char *const *keys, size_t n,
                     void *unused, int64_t ms)
{
    (void)unused;
    return ftc_store_client_wait(c, keys, n, ms);
}

static int multi_get_keys(ftc_store_client *c, const char *const *keys,
                          size_t n, void *values, int64_t ms)
{
    return ftc_store_client_multi_get(c, keys, n, values, ms);
}

static PyObject *store_check(PyObject *self, PyObject *args, PyObject *kw)
{
    keys_arg a;
    int ready = 0;
    if (keys_args(args, kw, &a) != 0) {
        return NULL;
    }
    int rc = keys_call(self, &a, check_keys, &ready);
    keys_done(&a);
    return rc == 0 ? PyBool_FromLong(ready) : NULL;
}

static PyObject *store_wait(PyObject *self, PyObject *args, PyObject *kw)
{
    keys_arg a;
    if (keys_args(args, kw, &a) != 0) {
        return NULL;
    }
    int rc = keys_call(self, &a, wait_keys, NULL);
    keys_done(&a);
    return rc == 0 ? Py_NewRef(Py_None) : NULL;
}

static PyObject *store_multi_get(PyObject *self, PyObject *args, PyObject *kw)
{
    keys_arg a;
    if (keys_args(args, kw, &a) != 0) {
        return NULL;
    }
    ftc_store_value *v = PyMem_Calloc((size_t)(a.n > 0 ? a.n : 1), sizeof(*v));
    int rc = v != NULL ? keys_call(self, &a, multi_get_keys, v) : -1;
    PyObject *out = NULL;
    if (v == NULL) {
        PyErr_NoMemory();
    } else if (rc == 0) {
        out = ftcpy_values_list(v, a.n);
        ftc_store_values_free(v, (size_t)a.n);
    }
    PyMem_Free(v);
    keys_done(&a);
    return out;
}

static PyObject *store_multi_set(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"keys", "values", "timeout", NULL};
    PyObject *k, *vals, *t = Py_None;
    int64_t ms;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", names, &k, &vals, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    const char **keys;
    Py_ssize_t n;
    PyObject *refs;
    if (ftcpy_keys(k, &keys, &n, &refs) != 0) {
        return NULL;
    }
    PyObject *vlist = PySequence_List(vals);
    ftc_store_value *v = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(*v));
    int ok = vlist != NULL && v != NULL;
    if (ok && PyList_Size(vlist) != n) {
        PyErr_Format(PyExc_ValueError, "%zd keys but %zd values", n,
                     PyList_Size(vlist));
        ok = 0;
    }
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        const char *p;
        Py_ssize_t len;
        ok = ftcpy_bytes(PyList_GetItem(vlist, i), &p, &len) == 0;
        v[i] = (ftc_store_value){.data = (void *)p, .len = (size_t)len};
    }
    PyObject *out = NULL;
    if (ok) {
        int rc;
        ftc_store_client *c = ftcpy_store_enter(self);
        if (c != NULL) {
            PyThreadState *ts_ = PyEval_SaveThread();
            rc = ftc_store_client_multi_set(c, keys, v, (size_t)n, ms);
            PyEval_RestoreThread(ts_);
            ftcpy_store_leave(self);
            out = rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
        }
    } else if (v == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    PyMem_Free(v);
    Py_XDECREF(vlist);
    PyMem_Free(keys);
    Py_DECREF(refs);
    return out;
}

static PyObject *store_num_keys(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"timeout", NULL};
    PyObject *t = Py_None;
    int64_t ms, n = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_num_keys(c, &n, ms));
    return rc != 0 ? ftcpy_raise(rc) : PyLong_FromLongLong(n);
}

static PyObject *store_ping(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"timeout", NULL};
    PyObject *t = Py_None;
    int64_t ms;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &t) ||
        ftcpy_timeout_ms(t, &ms) != 0) {
        return NULL;
    }
    CALL(self, c, rc = ftc_store_client_ping(c, ms));
    return rc != 0 ? ftcpy_raise(rc) : Py_NewRef(Py_None);
}

#define KW(name, fn, doc)                                                      \
    {                                                                          \
        name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,   \
            doc                                                                \
    }

static PyMethodDef methods[] = {
    KW("set", store_set, "set(key, value, timeout=None): store value"),
    KW("get", store_get,
       "get(key, timeout=None) -> bytes: waits for key, returns its value"),
    KW("add", store_add,
       "add(key, amount=1, timeout=None) -> int: adds to a counter"),
    KW("compare_set", store_compare_set,
       "compare_set(key, expected, desired, timeout=None) -> bytes: sets "
       "desired if the value is expected (missing = empty); returns the "
       "value after"),
    KW("check", store_check,
       "check(keys, timeout=None) -> bool: whether every key exists now"),
    KW("wait", store_wait, "wait(keys, timeout=None): until every key exists"),
    KW("delete_key", store_delete_key,
       "delete_key(key, timeout=None) -> bool: whether it existed"),
    KW("num_keys", store_num_keys, "num_keys(timeout=None) -> int"),
    KW("append", store_append, "append(key, value, timeout=None)"),
    KW("multi_get", store_multi_get,
       "multi_get(keys, timeout=None) -> list of bytes (waits for all)"),
    KW("multi_set", store_multi_set, "multi_set(keys, values, timeout=None)"),
    KW("queue_push", store_queue_push, "queue_push(key, value, timeout=None)"),
    KW("queue_pop", store_queue_pop,
       "queue_pop(key, block=True, timeout=None) -> bytes"),
    KW("queue_len", store_queue_len, "queue_len(key, timeout=None) -> int"),
    KW("ping", store_ping, "ping(timeout=None): one round trip"),
    {"cancel", store_cancel, METH_NOARGS,
     "cancel(): the call in progress on the connection raises ftc.Error "
     "(FTC_ECANCELED)"},
    {"close", store_close, METH_NOARGS,
     "close(): cancels the calls in progress, waits for them to leave, "
     "closes the connection"},
    {"__enter__", store_enter, METH_NOARGS, NULL},
    {"__exit__", store_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot slots[] = {
    {Py_tp_doc,
     "Store(host, port=None, *, timeout=None, connect_timeout=None, "
     "dialect='v2', token=None)\n\nA client of ftc's store or of PyTorch's "
     "TCPStore (host may be 'host:port' when port is None). Timeouts are "
     "seconds, timedeltas or math.inf; None: 300 s per call, 30 s to "
     "connect. With a token, client and server prove to each other that "
     "they know it (ftc.Error FTC_EAUTH if the server cannot: another "
     "token or none; FTC_ENOTSUP for PyTorch's server); the environment is "
     "never read."},
    {Py_tp_new, store_new},
    {Py_tp_dealloc, store_dealloc},
    {Py_tp_methods, methods},
    {0, NULL},
};

static PyType_Spec spec = {
    .name = "ftc.Store",
    .basicsize = sizeof(store),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = slots,
};

int ftcpy_add_store(PyObject *module)
{
    return ftcpy_add_type(module, &spec, "Store", &ftcpy.store_type);
}
