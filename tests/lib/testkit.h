/* Test kit shared by every test: scaled deadlines, polling waits instead of
 * sleeps, and child processes that can never outlive the test.
 *
 * Child processes are the test binary itself re-executed with
 * "--tk-role NAME [args...]"; tk_main() dispatches to the role. */
#ifndef FTC_TESTKIT_H
#define FTC_TESTKIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "ftc/ftc.h"

/* Scales a duration by FTC_TEST_TIMEOUT_MULTIPLIER (default 1; sanitizer
 * and valgrind runs set it higher). */
int64_t tk_ms(int64_t ms);
int64_t tk_now_ms(void);

/* Polls cond with growing pauses (up to 20 ms) until it is true or
 * tk_ms(timeout_ms) passed; fails the test naming the condition. */
#define TK_WAIT_UNTIL(cond, timeout_ms)                                        \
    do {                                                                       \
        int64_t tk_end_ = tk_now_ms() + tk_ms(timeout_ms);                     \
        int tk_pause_ = 1;                                                     \
        while (!(cond)) {                                                      \
            if (tk_now_ms() > tk_end_) {                                       \
                fail_msg("condition '%s' not met within %lld ms", #cond,       \
                         (long long)tk_ms(timeout_ms));                        \
            }                                                                  \
            tk_pause_ms(tk_pause_);                                            \
            tk_pause_ = tk_pause_ < 20 ? tk_pause_ * 2 : 20;                   \
        }                                                                      \
    } while (0)

/* Asserts an ftc call returns the exact code, printing ftc_last_error(). */
#define TK_EXPECT(call, code)                                                  \
    do {                                                                       \
        int tk_rc_ = (call);                                                   \
        if (tk_rc_ != (code)) {                                                \
            fail_msg("%s returned %s (%d), expected %s: %s", #call,            \
                     ftc_err_name(tk_rc_), tk_rc_, ftc_err_name(code),         \
                     ftc_last_error());                                        \
        }                                                                      \
    } while (0)
#define TK_OK(call) TK_EXPECT(call, 0)

/* A pause for the polling loop above; not for synchronisation. */
void tk_pause_ms(int ms);

/* A child process running a role of this test binary. */
typedef struct tk_child {
    pid_t pid;
    int status; /* waitpid status once done */
    int done;   /* 1 once reaped */
    char name[64];
} tk_child;

/* Starts "<self> --tk-role role args..." in this test's process group
 * (created on first use) with extra environment entries "K=V" (NULL-ended
 * list, may be NULL). The child dies with the parent (PR_SET_PDEATHSIG). */
void tk_spawn(tk_child *c, const char *role, char *const args[],
              char *const env[]);

/* Starts an arbitrary program (argv[0] is looked up in PATH when it has no
 * '/') the same way: it dies with the parent and is reaped by tk_reap. */
void tk_spawn_cmd(tk_child *c, char *const argv[], char *const env[]);

/* Reaps children until all are done or tk_ms(timeout_ms) passed; then kills
 * and reaps the rest. Returns how many had to be killed. */
int tk_reap(tk_child *cs, int n, int64_t timeout_ms);
/* Exit code of a reaped child, or 128+signal if it was killed. */
int tk_exit_code(const tk_child *c);
/* Sends a signal to one child. */
void tk_signal(tk_child *c, int sig);

/* Appends one formatted line ('\n' added) to fd in a single write, so
 * the lines of processes sharing an O_APPEND file never interleave. */
void tk_write_line(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A fresh scratch directory removed at exit. */
const char *tk_tmpdir(void);

typedef int (*tk_role_fn)(int argc, char **argv);
typedef struct tk_role {
    const char *name;
    tk_role_fn fn;
} tk_role;

/* Runs a role if argv asks for one (its return is the exit code), else the
 * cmocka group. Use as: return tk_main(argc, argv, roles, nroles, tests). */
#define tk_main(argc, argv, roles, nroles, tests)                              \
    tk_main_impl(argc, argv, roles, nroles, #tests, tests,                     \
                 sizeof(tests) / sizeof(tests[0]))
int tk_main_impl(int argc, char **argv, const tk_role *roles, size_t nroles,
                 const char *group, const struct CMUnitTest *tests,
                 size_t ntests);

/* The path of this test binary, for roles that need it. */
const char *tk_self(void);

#endif
