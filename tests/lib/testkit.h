/* Test kit shared by every test: scaled deadlines, polling waits instead of
 * sleeps, and child processes that can never outlive the test. The
 * layers' kits (tests/lib/<layer>_kit) build on it.
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

/* Child processes. Every child starts in a process group of its own
 * (pgid = its pid), is registered, and dies with the parent
 * (PR_SET_PDEATHSIG). Reaping a child (tk_reap, tk_waitpid) also kills
 * what is left of its group and unregisters it. Whatever is still
 * registered when a test ends, passing or failing (cmocka's teardown,
 * installed by tk_main and tk_run_group), or when the process exits
 * (atexit: a failed assert outside a test exits), is killed as a group
 * and reaped, so no child outlives its test. Children started during a
 * group setup live until the group ends. */

/* A child process running a role of this test binary. */
typedef struct tk_child {
    pid_t pid;
    int status; /* waitpid status once done */
    int done;   /* 1 once reaped */
    char name[64];
} tk_child;

/* Starts "<self> --tk-role role args..." with extra environment entries
 * "K=V" (NULL-ended list, may be NULL). */
void tk_spawn(tk_child *c, const char *role, char *const args[],
              char *const env[]);

/* Starts an arbitrary program (argv[0] is looked up in PATH when it has no
 * '/') the same way. */
void tk_spawn_cmd(tk_child *c, char *const argv[], char *const env[]);

/* fork() for spawners that set up descriptors first: in the child (0
 * returned) a new process group and PR_SET_PDEATHSIG are set, and only
 * async-signal-safe calls may follow until exec; in the parent the child
 * is registered. Fails the test if fork fails. */
pid_t tk_fork(void);
/* Registers a child this process started otherwise (forkpty: its own
 * session, so its own group). */
void tk_adopt(pid_t pid);
/* waitpid() for registered children: when pid is reaped, kills what is
 * left of its group and unregisters it. Retries on EINTR. */
pid_t tk_waitpid(pid_t pid, int *status, int options);
/* Kills every registered group and reaps its leader (the teardown's and
 * atexit's cleanup; a test may call it too). Returns how many were left. */
int tk_kill_children(void);

/* Reaps children until all are done or tk_ms(timeout_ms) passed; then kills
 * the groups of the rest and reaps them. Returns how many had to be
 * killed. */
int tk_reap(tk_child *cs, int n, int64_t timeout_ms);
/* Exit code of a reaped child, or 128+signal if it was killed. */
int tk_exit_code(const tk_child *c);
/* Sends a signal to one child (not its group). */
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

/* cmocka_run_group_tests with the children's cleanup after every test
 * (chained after the test's own teardown) and after the group. */
#define tk_run_group(tests, setup, teardown)                                   \
    tk_run_group_impl(#tests, tests, sizeof(tests) / sizeof(tests[0]), setup,  \
                      teardown)
int tk_run_group_impl(const char *group, const struct CMUnitTest *tests,
                      size_t ntests, CMFixtureFunction setup,
                      CMFixtureFunction teardown);

/* The path of this test binary, for roles that need it. */
const char *tk_self(void);

#endif
