/* Internal error reporting: set the thread-local detail message and return
 * the code in one step, so a failure is described where it is found. */
#ifndef FTC_BASE_ERR_H
#define FTC_BASE_ERR_H

#include "ftc/base.h"

/* The one table of codes: X(code, text) for every ftc_err, in order. The
 * name is the code's spelling (#code). ftc_strerror and ftc_err_name are
 * switches over ftc_err generated from it, so -Wswitch (-Wall -Werror)
 * fails the build when include/ftc/base.h gains a code this table lacks,
 * and a repeated row is a duplicate case label. */
#define FTC__ERR_CODES(X)                                                      \
    X(FTC_OK, "success")                                                       \
    X(FTC_EINVAL, "invalid argument")                                          \
    X(FTC_ENOMEM, "out of memory")                                             \
    X(FTC_ETIMEDOUT, "timed out")                                              \
    X(FTC_ECANCELED, "cancelled")                                              \
    X(FTC_ECLOSED, "closed")                                                   \
    X(FTC_EPROTO, "protocol error")                                            \
    X(FTC_EMSGSIZE, "message too large")                                       \
    X(FTC_EAUTH, "authentication failed")                                      \
    X(FTC_ESTALE, "stale epoch")                                               \
    X(FTC_EPEER, "peer failed")                                                \
    X(FTC_EMISUSE, "API misuse")                                               \
    X(FTC_ESYS, "system call failed")                                          \
    X(FTC_ENOTSUP, "not supported")                                            \
    X(FTC_EEXIST, "already exists")                                            \
    X(FTC_ENOENT, "not found")                                                 \
    X(FTC_EFINISHED, "job finished")

/* The lowest code of the table: a code read from a peer (a wire, a
 * record) is one of ours when it lies in [FTC__ERR_LOWEST, -1]. */
#define FTC__ERR_LOWEST FTC_EFINISHED

/* Bytes of this thread's message, NUL included (longer ones are cut). */
#define FTC__ERR_MSG_MAX 512

/* What ftc_strerror and ftc_err_name say of a code not in the table. */
#define FTC__ERR_UNKNOWN_TEXT "unknown error"
#define FTC__ERR_UNKNOWN_NAME "FTC_E?"

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
