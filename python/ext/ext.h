/* The _ftc extension's shared parts: errors as Python exceptions, argument
 * conversions, and the types each file defines. Built against Python's
 * limited API (one abi3 module for every CPython >= 3.10). */
#ifndef FTC_PYTHON_EXT_H
#define FTC_PYTHON_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "ftc/ftc.h"

/* The module's exception classes and types (one interpreter: the module
 * is initialised once per process). */
typedef struct ftcpy_state {
    PyObject *error;      /* ftc.Error */
    PyObject *timeout;    /* ftc.TimeoutError (also builtins.TimeoutError) */
    PyObject *peer;       /* ftc.PeerError (also builtins.ConnectionError) */
    PyObject *store_type; /* ftc.Store */
    PyObject *server_type;
    PyObject *control_type;
    PyObject *pg_type; /* ftc._ProcessGroup (ftc.ProcessGroup wraps it) */
    PyObject *work_type;
    PyObject *manager_type; /* ftc._Manager (ftc.Manager wraps it) */
    PyObject *mwork_type;
} ftcpy_state;

extern ftcpy_state ftcpy;

/* Raises the exception for ftc code rc (< 0) with ftc_last_error() as its
 * message and .code / .name set; returns NULL. Read ftc_last_error on the
 * thread that made the call (it is thread-local). */
PyObject *ftcpy_raise(int rc);
/* The same with a message of the binding's own. */
PyObject *ftcpy_raise_msg(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ftcpy_add_errors(PyObject *module);

/* A timeout argument: None (the handle's default), a number of seconds,
 * a datetime.timedelta, or math.inf (no deadline), into milliseconds under
 * the timeout rule of ftc/base.h. 0 on success; -1 with ValueError or
 * TypeError set. */
int ftcpy_timeout_ms(PyObject *o, int64_t *ms);

/* bytes, bytearray or str (UTF-8) as a borrowed pointer and length, valid
 * while o lives and is not changed. -1 with TypeError set. */
int ftcpy_bytes(PyObject *o, const char **p, Py_ssize_t *len);
/* A key: str without NUL (a C string). -1 with TypeError/ValueError. */
int ftcpy_key(PyObject *o, const char **key);
/* A sequence of keys into a new array of borrowed C strings (free with
 * PyMem_Free); *refs keeps the items alive (Py_DECREF it). */
int ftcpy_keys(PyObject *seq, const char ***keys, Py_ssize_t *n,
               PyObject **refs);

/* A list of bytes with copies of n values (NULL with an error set). */
PyObject *ftcpy_values_list(const ftc_store_value *v, Py_ssize_t n);

/* Store internals the control collectives share: calls mark the client in
 * use so that close() never frees it under a running call. */
ftc_store_client *ftcpy_store_enter(PyObject *store);
void ftcpy_store_leave(PyObject *store);

/* A new instance of a type made by PyType_FromSpec, and its release (the
 * end of each type's dealloc). */
PyObject *ftcpy_alloc(PyTypeObject *type);
void ftcpy_free(PyObject *obj);
/* Creates the type of spec into *type and adds it to module as name. */
int ftcpy_add_type(PyObject *module, PyType_Spec *spec, const char *name,
                   PyObject **type);

int ftcpy_add_store(PyObject *module);
int ftcpy_add_server(PyObject *module);
int ftcpy_add_control(PyObject *module);
int ftcpy_add_pg(PyObject *module);
int ftcpy_add_manager(PyObject *module);

#endif
