/* The _ftc extension module: ftc's store, store server and control
 * collectives for Python (python/ftc/__init__.py re-exports them). */
#include "ext.h"

PyObject *ftcpy_alloc(PyTypeObject *type)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    return alloc(type, 0);
}

void ftcpy_free(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(obj);
    Py_DECREF(type); /* instances of heap types hold their type */
}

int ftcpy_add_type(PyObject *module, PyType_Spec *spec, const char *name,
                   PyObject **type)
{
    *type = PyType_FromSpec(spec);
    return *type != NULL ? PyModule_AddObjectRef(module, name, *type) : -1;
}

static PyObject *version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(ftc_version());
}

/* Tracing (FTC_TRACE, include/ftc/base.h); python/ftc/trace.py wraps
 * these. They never block but trace_flush, which releases the GIL. */
static PyObject *trace_enabled(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(ftc_trace_enabled());
}

/* begin or end of the span named by arg. */
static PyObject *trace_mark(PyObject *arg, int (*fn)(const char *))
{
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (name == NULL) {
        return NULL;
    }
    int rc = fn(name);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    Py_RETURN_NONE;
}

static PyObject *trace_begin(PyObject *self, PyObject *name)
{
    (void)self;
    return trace_mark(name, ftc_trace_begin);
}

static PyObject *trace_end(PyObject *self, PyObject *name)
{
    (void)self;
    return trace_mark(name, ftc_trace_end);
}

static PyObject *trace_set_step(PyObject *self, PyObject *arg)
{
    (void)self;
    long long step = PyLong_AsLongLong(arg);
    if (step == -1 && PyErr_Occurred()) {
        return NULL;
    }
    ftc_trace_set_step((int64_t)step);
    Py_RETURN_NONE;
}

static PyObject *trace_flush(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyThreadState *ts = PyEval_SaveThread();
    int rc = ftc_trace_flush();
    PyEval_RestoreThread(ts);
    if (rc != 0) {
        return ftcpy_raise(rc);
    }
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"version", version, METH_NOARGS, "version() -> str: libftc's version"},
    {"trace_enabled", trace_enabled, METH_NOARGS,
     "trace_enabled() -> bool: FTC_TRACE is recording"},
    {"trace_begin", trace_begin, METH_O,
     "trace_begin(name): opens a compute span on this thread"},
    {"trace_end", trace_end, METH_O,
     "trace_end(name): closes this thread's innermost span named name"},
    {"trace_set_step", trace_set_step, METH_O,
     "trace_set_step(step): the step recorded with later events (-1: none)"},
    {"trace_flush", trace_flush, METH_NOARGS,
     "trace_flush(): writes the trace file now"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ftc._ftc",
    .m_doc = "ftc's C library (use the ftc package)",
    .m_size = -1,
    .m_methods = functions,
};

PyMODINIT_FUNC PyInit__ftc(void);

PyMODINIT_FUNC PyInit__ftc(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (ftcpy_add_errors(m) != 0 || ftcpy_add_store(m) != 0 ||
        ftcpy_add_server(m) != 0 || ftcpy_add_control(m) != 0 ||
        ftcpy_add_pg(m) != 0 || ftcpy_add_manager(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
