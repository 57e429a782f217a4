/* ftc's error codes as Python exceptions: ftc.Error carries .code (the
 * negative ftc code) and .name ("FTC_ETIMEDOUT"); timeouts are also
 * builtins.TimeoutError and a dead peer or closed connection also
 * builtins.ConnectionError, so generic handlers catch them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ext.h"

ftcpy_state ftcpy;

static PyObject *class_for(int rc)
{
    switch (rc) {
    case FTC_ETIMEDOUT:
        return ftcpy.timeout;
    case FTC_EPEER:
    case FTC_ECLOSED:
        return ftcpy.peer;
    default:
        return ftcpy.error;
    }
}

static PyObject *raise_text(int rc, const char *text)
{
    PyObject *cls = class_for(rc);
    /* a message may quote a peer's bytes: never fail on bad UTF-8 */
    PyObject *msg =
        PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
    PyObject *exc =
        msg != NULL ? PyObject_CallFunctionObjArgs(cls, msg, NULL) : NULL;
    Py_XDECREF(msg);
    if (exc == NULL) {
        return NULL;
    }
    PyObject *code = PyLong_FromLong(rc);
    PyObject *name = PyUnicode_FromString(ftc_err_name(rc));
    if (code == NULL || name == NULL ||
        PyObject_SetAttrString(exc, "code", code) != 0 ||
        PyObject_SetAttrString(exc, "name", name) != 0) {
        Py_XDECREF(code);
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(name);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *ftcpy_raise(int rc)
{
    const char *msg = ftc_last_error();
    return raise_text(rc,
                      msg != NULL && msg[0] != '\0' ? msg : ftc_strerror(rc));
}

PyObject *ftcpy_raise_msg(int rc, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return raise_text(rc, text);
}

static PyObject *subclass(const char *name, const char *doc, PyObject *also)
{
    PyObject *bases = PyTuple_Pack(2, ftcpy.error, also);
    if (bases == NULL) {
        return NULL;
    }
    PyObject *cls = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    Py_DECREF(bases);
    return cls;
}

int ftcpy_add_errors(PyObject *module)
{
    ftcpy.error = PyErr_NewExceptionWithDoc(
        "ftc.Error",
        "A failed ftc call: str() is ftc's message, .code the ftc error code "
        "(negative), .name its name (e.g. 'FTC_EINVAL').",
        PyExc_Exception, NULL);
    if (ftcpy.error == NULL) {
        return -1;
    }
    ftcpy.timeout =
        subclass("ftc.TimeoutError", "The deadline passed (FTC_ETIMEDOUT).",
                 PyExc_TimeoutError);
    ftcpy.peer = subclass("ftc.PeerError",
                          "The peer or server went away (FTC_EPEER, "
                          "FTC_ECLOSED).",
                          PyExc_ConnectionError);
    if (ftcpy.timeout == NULL || ftcpy.peer == NULL) {
        return -1;
    }
    /* PyModule_AddObjectRef is 3.10's; the module keeps its own reference */
    if (PyModule_AddObjectRef(module, "Error", ftcpy.error) != 0 ||
        PyModule_AddObjectRef(module, "TimeoutError", ftcpy.timeout) != 0 ||
        PyModule_AddObjectRef(module, "PeerError", ftcpy.peer) != 0) {
        return -1;
    }
    return 0;
}
