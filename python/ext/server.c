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

static PyObject *server_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {
        "host", "port", "max_value_bytes", "max_total_bytes", "max_connections",
        NULL};
    const char *host = NULL;
    int port = 0;
    PyObject *max_value = Py_None, *max_total = Py_None, *max_conn = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zi$OOO", names, &host, &port,
                                     &max_value, &max_total, &max_conn)) {
        return NULL;
    }
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = host;
    o.port = port;
    if (size_arg(max_value, &o.max_value_bytes) != 0 ||
        size_arg(max_total, &o.max_total_bytes) != 0 ||
        size_arg(max_conn, &o.max_connections) != 0) {
        return NULL;
    }
    ftc_store_server *s = NULL;
    int rc;
    PyThreadState *ts_ = PyEval_SaveThread();
    rc = ftc_store_server_create(&o, &s);
    PyEval_RestoreThread(ts_);
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
     "max_total_bytes=None, max_connections=None)\n\nftc's store server on a "
     "thread of this process; host None listens on every interface, port 0 "
     "takes a free one (see .port). PyTorch's TCPStore clients (1.13 and "
     "2.x) and ftc.Store connect to it."},
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
