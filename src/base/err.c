/* Error codes, their names, and the thread-local detail message. */
#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

#define MSG_CAP 512

static _Thread_local char last_msg[MSG_CAP];

static const struct {
    int code;
    const char *name;
    const char *text;
} codes[] = {
    {FTC_OK, "FTC_OK", "success"},
    {FTC_EINVAL, "FTC_EINVAL", "invalid argument"},
    {FTC_ENOMEM, "FTC_ENOMEM", "out of memory"},
    {FTC_ETIMEDOUT, "FTC_ETIMEDOUT", "timed out"},
    {FTC_ECANCELED, "FTC_ECANCELED", "cancelled"},
    {FTC_ECLOSED, "FTC_ECLOSED", "closed"},
    {FTC_EPROTO, "FTC_EPROTO", "protocol error"},
    {FTC_EMSGSIZE, "FTC_EMSGSIZE", "message too large"},
    {FTC_EAUTH, "FTC_EAUTH", "authentication failed"},
    {FTC_ESTALE, "FTC_ESTALE", "stale epoch"},
    {FTC_EPEER, "FTC_EPEER", "peer failed"},
    {FTC_EMISUSE, "FTC_EMISUSE", "API misuse"},
    {FTC_ESYS, "FTC_ESYS", "system call failed"},
    {FTC_ENOTSUP, "FTC_ENOTSUP", "not supported"},
    {FTC_EEXIST, "FTC_EEXIST", "already exists"},
    {FTC_ENOENT, "FTC_ENOENT", "not found"},
};

const char *ftc_strerror(int code)
{
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (codes[i].code == code) {
            return codes[i].text;
        }
    }
    return "unknown error";
}

const char *ftc_err_name(int code)
{
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (codes[i].code == code) {
            return codes[i].name;
        }
    }
    return "FTC_E?";
}

const char *ftc_last_error(void)
{
    return last_msg;
}

void ftc__clearerr(void)
{
    last_msg[0] = '\0';
}

int ftc__seterr(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    return code;
}

static int code_of_errno(int errnum)
{
    switch (errnum) {
    case ENOMEM:
        return FTC_ENOMEM;
    case ETIMEDOUT:
        return FTC_ETIMEDOUT;
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNREFUSED:
        return FTC_EPEER;
    case EINVAL:
        return FTC_EINVAL;
    case ECANCELED:
        return FTC_ECANCELED;
    case EMSGSIZE:
        return FTC_EMSGSIZE;
    default:
        return FTC_ESYS;
    }
}

int ftc__seterr_errno(int errnum, const char *fmt, ...)
{
    char what[MSG_CAP / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    int code = code_of_errno(errnum);
    snprintf(last_msg, sizeof(last_msg), "%s: %s", what, strerror(errnum));
    return code;
}

int ftc__adderr(int code, const char *fmt, ...)
{
    char prefix[MSG_CAP / 2];
    char old[MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, last_msg, sizeof(old));
    if (old[0] != '\0') {
        snprintf(last_msg, sizeof(last_msg), "%s: %s", prefix, old);
    } else {
        snprintf(last_msg, sizeof(last_msg), "%s: %s", prefix,
                 ftc_strerror(code));
    }
    return code;
}

void ftc__never_hit(const char *file, int line, const char *what)
{
    FTC_LOG_ERROR("base.never", "%s:%d: impossible condition '%s'", file, line,
                  what);
}
