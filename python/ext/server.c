/* ftc.StoreServer: ftc's store server on a thread of this process (both
 * PyTorch dialects on one port), as TCPStore(is_master=True) would be. */
#include "ext.h"

typedef struct server {
    PyObject_HEAD
    ftc_store_server *s;
} server;

/* An optional size limit: None keeps the default. */
static int size_arg(PyObject *o, size_t *out)
{
    if (o == Py_None) {
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (v == 0) {
        PyErr_SetString(PyExc_ValueError, "a size limit must be positive");
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* open (None or a sequence of str) as C strings that live as long as
 * *keep (a list the caller releases, like *out with PyMem_Free). */
static int open_prefixes(PyObject *open, PyObject **keep, const char ***out,
                         size_t *n)
{
    *keep = NULL;
    *out = NULL;
    *n = 0;
    if (open == NULL || open == Py_None) {
        return 0;
    }
    if (PyUnicode_Check(open)) {
        PyErr_SetString(PyExc_TypeError,
                        "open_prefixes is a sequence of str, not one str");
        return -1;
    }
    *keep = PySequence_List(open);
    if (*keep == NULL) {
        return -1;
    }
    Py_ssize_t len = PyList_Size(*keep);
    *out = PyMem_Calloc((size_t)len + 1, sizeof(**out));
    if (*out == NULL) {
        Py_CLEAR(*keep);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        const char *p = PyUnicode_AsUTF8AndSize(PyList_GetItem(*keep, i), NULL);
        if (p == NULL) {
            PyMem_Free(*out);
            *out = NULL;
            Py_CLEAR(*keep);
            return -1;
        }
        (*out)[i] = p;
    }
    *n = (size_t)len;
    return 0;
}

static PyObject *server_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"host",
                            "port",
                            "max_value_bytes",
                            "max_total_bytes",
                            "max_connections",
                            "token",
                            "open_prefixes",
                            NULL};
    const char *host = NULL;
    int port = 0;
    PyObject *max_value = Py_None, *max_total = Py_None, *max_conn = Py_None;
    PyObject *open = NULL;
    const char *token = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zi$OOOzO", names, &host, &port,
                                     &max_value, &max_total, &max_conn, &token,
                                     &open)) {
        return NULL;
    }
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = host;
    o.port = port;
    o.token = token;
    if (size_arg(max_value, &o.max_value_bytes) != 0 ||
        size_arg(max_total, &o.max_total_bytes) != 0 ||
        size_arg(max_conn, &o.max_connections) != 0) {
        return NULL;
    }
    PyObject *prefixes = NULL;
    const char **names_c = NULL;
    if (open_prefixes(open, &prefixes, &names_c, &o.n_open_prefixes) != 0) {
        return NULL;
    }
    o.open_prefixes = names_c;
    ftc_store_server *s = NULL;
    int rc;
    PyThreadState *ts_ = PyEval_SaveThread();
    rc = ftc_store_server_create(&o, &s);
    PyEval_RestoreThread(ts_);
    PyMem_Free(names_c);
    Py_XDECREF(prefixes);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    server *self = (server *)ftcpy_alloc(type);
    if (self == NULL) {
        ftc_store_server_destroy(s);
        return NULL;
    }
    self->s = s;
    return (PyObject *)self;
}

static void stop(server *self)
{
    if (self->s != NULL) {
        ftc_store_server *s = self->s;
        self->s = NULL;
        PyThreadState *ts_ = PyEval_SaveThread();
        ftc_store_server_destroy(s);
        PyEval_RestoreThread(ts_);
    }
}

static void server_dealloc(PyObject *obj)
{
    stop((server *)obj);
    ftcpy_free(obj);
}

static PyObject *server_close(PyObject *obj, PyObject *unused)
{
    (void)unused;
    stop((server *)obj);
    Py_RETURN_NONE;
}

static PyObject *server_enter(PyObject *obj, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(obj);
}

static PyObject *server_exit(PyObject *obj, PyObject *args)
{
    (void)args;
    return server_close(obj, NULL);
}

static PyObject *server_port(PyObject *obj, void *closure)
{
    (void)closure;
    server *self = (server *)obj;
    if (self->s == NULL) {
        return ftcpy_raise_msg(FTC_ECLOSED, "this ftc.StoreServer is closed");
    }
    return PyLong_FromLong(ftc_store_server_port(self->s));
}

static PyObject *server_stats(PyObject *obj, PyObject *unused)
{
    (void)unused;
    server *self = (server *)obj;
    if (self->s == NULL) {
        return ftcpy_raise_msg(FTC_ECLOSED, "this ftc.StoreServer is closed");
    }
    ftc_store_server_stats st;
    int rc = ftc_store_server_stats_get(self->s, &st);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "connections",
                         (unsigned long long)st.connections, "keys",
                         (unsigned long long)st.keys, "bytes",
                         (unsigned long long)st.bytes, "requests",
                         (unsigned long long)st.requests, "protocol_errors",
                         (unsigned long long)st.protocol_errors, "slow_drops",
                         (unsigned long long)st.slow_drops, "refused",
                         (unsigned long long)st.refused);
}

static PyMethodDef methods[] = {
    {"close", server_close, METH_NOARGS,
     "close(): stops the server (its clients' calls fail)"},
    {"stats", server_stats, METH_NOARGS,
     "stats() -> dict: connections, keys, bytes, requests, "
     "protocol_errors, slow_drops, refused"},
    {"__enter__", server_enter, METH_NOARGS, NULL},
    {"__exit__", server_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef getset[] = {
    {"port", server_port, NULL, "the port it listens on", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot slots[] = {
    {Py_tp_doc,
     "StoreServer(host=None, port=0, *, max_value_bytes=None, "
     "max_total_bytes=None, max_connections=None, token=None, "
     "open_prefixes=None)\n\nftc's store server on a thread of this "
     "process; host None listens on every interface with a token, on "
     "127.0.0.1 without one ('*': every interface); port 0 takes a free one "
     "(see .port). PyTorch's TCPStore clients (1.13 and 2.x) and ftc.Store "
     "connect to it. With a token, a client must authenticate "
     "(ftc.Store(token=...)) to touch any key outside open_prefixes (a "
     "sequence of str such as ['torch/']), the only keys clients that "
     "cannot (PyTorch's) may use or see."},
    {Py_tp_new, server_new},
    {Py_tp_dealloc, server_dealloc},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {0, NULL},
};

static PyType_Spec spec = {
    .name = "ftc.StoreServer",
    .basicsize = sizeof(server),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = slots,
};

int ftcpy_add_server(PyObject *module)
{
    return ftcpy_add_type(module, &spec, "StoreServer", &ftcpy.server_type);
}
