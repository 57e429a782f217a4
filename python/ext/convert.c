/* Python arguments into ftc's C types: timeouts, byte strings, keys. */
#include <math.h>
#include <string.h>

#include "ext.h"

int ftcpy_timeout_ms(PyObject *o, int64_t *ms)
{
    if (o == NULL || o == Py_None) {
        *ms = FTC_TIMEOUT_DEFAULT;
        return 0;
    }
    double s;
    if (PyFloat_Check(o) || PyLong_Check(o)) {
        s = PyFloat_AsDouble(o);
    } else {
        /* datetime.timedelta, or anything else with total_seconds() */
        PyObject *v = PyObject_CallMethod(o, "total_seconds", NULL);
        if (v == NULL) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "timeout must be None, seconds or a timedelta, got "
                         "%R",
                         o);
            return -1;
        }
        s = PyFloat_AsDouble(v);
        Py_DECREF(v);
    }
    if (s == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    if (isinf(s) && s > 0) {
        *ms = FTC_TIMEOUT_INFINITE;
        return 0;
    }
    if (!(s >= 0) || s > 9.2e15) {
        PyErr_Format(PyExc_ValueError,
                     "timeout must be >= 0 seconds (or math.inf), got %R", o);
        return -1;
    }
    *ms = (int64_t)ceil(s * 1000.0);
    return 0;
}

int ftcpy_bytes(PyObject *o, const char **p, Py_ssize_t *len)
{
    if (PyBytes_Check(o)) {
        char *b;
        if (PyBytes_AsStringAndSize(o, &b, len) != 0) {
            return -1;
        }
        *p = b;
        return 0;
    }
    if (PyByteArray_Check(o)) {
        *p = PyByteArray_AsString(o);
        *len = PyByteArray_Size(o);
        return 0;
    }
    if (PyUnicode_Check(o)) {
        *p = PyUnicode_AsUTF8AndSize(o, len);
        return *p != NULL ? 0 : -1;
    }
    PyErr_SetString(PyExc_TypeError, "a value must be bytes, bytearray or str");
    return -1;
}

int ftcpy_key(PyObject *o, const char **key)
{
    Py_ssize_t len;
    const char *p;
    if (PyUnicode_Check(o)) {
        p = PyUnicode_AsUTF8AndSize(o, &len);
    } else if (PyBytes_Check(o)) {
        char *b;
        p = PyBytes_AsStringAndSize(o, &b, &len) == 0 ? b : NULL;
    } else {
        PyErr_SetString(PyExc_TypeError, "a key must be str or bytes");
        return -1;
    }
    if (p == NULL) {
        return -1;
    }
    if (strlen(p) != (size_t)len) {
        PyErr_SetString(PyExc_ValueError, "a key must not contain NUL");
        return -1;
    }
    *key = p;
    return 0;
}

int ftcpy_keys(PyObject *seq, const char ***keys, Py_ssize_t *n,
               PyObject **refs)
{
    if (PyUnicode_Check(seq) || PyBytes_Check(seq)) {
        PyErr_SetString(PyExc_TypeError, "keys must be a list of keys");
        return -1;
    }
    PyObject *list = PySequence_List(seq);
    if (list == NULL) {
        return -1;
    }
    *n = PyList_Size(list);
    *keys = PyMem_Calloc((size_t)(*n > 0 ? *n : 1), sizeof(char *));
    if (*keys == NULL) {
        Py_DECREF(list);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (ftcpy_key(PyList_GetItem(list, i), &(*keys)[i]) != 0) {
            PyMem_Free(*keys);
            Py_DECREF(list);
            return -1;
        }
    }
    *refs = list;
    return 0;
}

PyObject *ftcpy_values_list(const ftc_store_value *v, Py_ssize_t n)
{
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *b =
            PyBytes_FromStringAndSize(v[i].data, (Py_ssize_t)v[i].len);
        if (b == NULL) {
            Py_CLEAR(out);
        } else {
            PyList_SetItem(out, i, b); /* steals b */
        }
    }
    return out;
}
