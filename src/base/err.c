/* Error codes, their names, and the thread-local detail message. */
#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

#define MSG_CAP FTC__ERR_MSG_MAX

static _Thread_local char last_msg[MSG_CAP];

/* Both switches cover FTC__ERR_CODES and have no default label: -Wswitch
 * (-Wall -Werror) then fails the build for an ftc_err value the table has
 * no row for, and a repeated row is a duplicate case label. */
#define FTC__ERR_TEXT_CASE(code, text)                                         \
    case code:                                                                 \
        return text;
const char *ftc_strerror(int code)
{
    switch ((ftc_err)code) {
        FTC__ERR_CODES(FTC__ERR_TEXT_CASE)
    }
    return FTC__ERR_UNKNOWN_TEXT;
}
#undef FTC__ERR_TEXT_CASE

#define FTC__ERR_NAME_CASE(code, text)                                         \
    case code:                                                                 \
        return #code;
const char *ftc_err_name(int code)
{
    switch ((ftc_err)code) {
        FTC__ERR_CODES(FTC__ERR_NAME_CASE)
    }
    return FTC__ERR_UNKNOWN_NAME;
}
#undef FTC__ERR_NAME_CASE

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
