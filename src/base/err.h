/* Internal error reporting: set the thread-local detail message and return
 * the code in one step, so a failure is described where it is found. */
#ifndef FTC_BASE_ERR_H
#define FTC_BASE_ERR_H

#include "ftc/base.h"

/* Sets this thread's message to the formatted text and returns code. */
int ftc__seterr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Maps an errno value to an ftc code by meaning (reset -> FTC_EPEER, ...),
 * sets the message "<what>: <strerror>" and returns the code. */
int ftc__seterr_errno(int errnum, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepends "<context>: " to the current message; returns code unchanged. */
int ftc__adderr(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears this thread's message (public calls do this on entry). */
void ftc__clearerr(void);

/* For "impossible but survivable" branches: logs once per site in every
 * build, and evaluates to the condition so the caller can still recover. */
#define FTC_NEVER(cond)                                                        \
    ((cond) ? (ftc__never_hit(__FILE__, __LINE__, #cond), 1) : 0)
void ftc__never_hit(const char *file, int line, const char *what);

#endif
