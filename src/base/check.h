/* Error paths in the style of NCCL's checks.h. A function that acquires
 * things in steps declares `int rc = 0;`, checks each step with FTC__CHECK
 * (or fails with FTC__FAIL), and has exactly one cleanup label, `fail:`,
 * reached on success too by falling through, which releases what was
 * acquired (each release NULL-safe) and returns rc:
 *
 *     int rc = 0;
 *     FTC__CHECK(open_a(&a));
 *     FTC__CHECK_ADDERR(open_b(&b), "b on %s", where);
 *     if (n > max) {
 *         FTC__FAIL(FTC_EMSGSIZE, "%zu > %zu", n, max);
 *     }
 *     ...
 * fail:
 *     close_b(b);
 *     close_a(a);
 *     return rc;
 *
 * Every ftc call returns 0 or a negative FTC_E* code and has set this
 * thread's message (ftc_last_error) when it fails; these macros keep that
 * message unless they say otherwise. */
#ifndef FTC_BASE_CHECK_H
#define FTC_BASE_CHECK_H

#include <stdio.h>

#include "base/err.h"

/* Evaluates expr once; a negative result goes to rc and jumps to fail.
 * rc is left alone on success. */
#define FTC__CHECK(expr)                                                       \
    do {                                                                       \
        int ftc__check_rc = (expr);                                            \
        if (ftc__check_rc < 0) {                                               \
            rc = ftc__check_rc;                                                \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* The same, prefixing "<context>: " to the message (ftc__adderr) first. */
#define FTC__CHECK_ADDERR(expr, ...)                                           \
    do {                                                                       \
        int ftc__check_rc = (expr);                                            \
        if (ftc__check_rc < 0) {                                               \
            rc = ftc__adderr(ftc__check_rc, __VA_ARGS__);                      \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* Sets the message (ftc__seterr(code, fmt, ...)), code to rc, jumps to
 * fail. */
#define FTC__FAIL(code, ...)                                                   \
    do {                                                                       \
        rc = ftc__seterr((code), __VA_ARGS__);                                 \
        goto fail;                                                             \
    } while (0)

/* For cleanup: evaluates the int call expr once. If rc is still 0, a
 * negative result becomes rc (with its message); if rc already holds an
 * error, that first error and its message are kept, whatever expr does. */
#define FTC__KEEP_FIRST(rc, expr)                                              \
    do {                                                                       \
        if ((rc) == 0) {                                                       \
            int ftc__check_rc = (expr);                                        \
            if (ftc__check_rc < 0) {                                           \
                (rc) = ftc__check_rc;                                          \
            }                                                                  \
        } else {                                                               \
            FTC__KEEP_MESSAGE((void)(expr));                                   \
        }                                                                      \
    } while (0)

/* Runs a cleanup statement (a destroy that may set messages of its own)
 * and restores this thread's message as it was before. */
#define FTC__KEEP_MESSAGE(stmt)                                                \
    do {                                                                       \
        char ftc__check_msg[FTC__ERR_MSG_MAX];                                 \
        snprintf(ftc__check_msg, sizeof(ftc__check_msg), "%s",                 \
                 ftc_last_error());                                            \
        stmt;                                                                  \
        ftc__seterr(0, "%s", ftc__check_msg);                                  \
    } while (0)

#endif
