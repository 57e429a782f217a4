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

static PyMethodDef functions[] = {
    {"version", version, METH_NOARGS, "version() -> str: libftc's version"},
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
