/* Test kit: deadlines, child processes, scratch directories. */
#include "testkit.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char self_path[PATH_MAX];
static char tmpdir[PATH_MAX];

int64_t tk_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tk_ms(int64_t ms)
{
    const char *m = getenv("FTC_TEST_TIMEOUT_MULTIPLIER");
    long k = m != NULL ? strtol(m, NULL, 10) : 1;
    return ms * (k > 0 ? k : 1);
}

void tk_write_line(int fd, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    n = n < (int)sizeof(line) - 1 ? n : (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
}

void tk_pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

const char *tk_self(void)
{
    if (self_path[0] == '\0') {
        ssize_t n =
            readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
        if (n < 0) {
            fail_msg("readlink(/proc/self/exe): %s", strerror(errno));
        }
        self_path[n] = '\0';
    }
    return self_path;
}

static void remove_tmpdir(void)
{
    if (tmpdir[0] != '\0') {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "testkit: could not remove %s\n", tmpdir);
        }
    }
}

const char *tk_tmpdir(void)
{
    if (tmpdir[0] == '\0') {
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/ftc-test-XXXXXX");
        if (mkdtemp(tmpdir) == NULL) {
            fail_msg("mkdtemp: %s", strerror(errno));
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

extern char **environ;

/* The current environment with the "K=V" entries of extra added or
 * replacing same-named ones, built before fork (the child may not
 * allocate). */
static char **merged_env(char *const extra[])
{
    size_t n = 0, k = 0;
    while (environ[n] != NULL) {
        n++;
    }
    while (extra != NULL && extra[k] != NULL) {
        k++;
    }
    char **env = calloc(n + k + 1, sizeof(*env));
    if (env == NULL) {
        fail_msg("out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int overridden = 0;
        for (size_t j = 0; j < k; j++) {
            size_t name = strcspn(extra[j], "=");
            if (strncmp(environ[i], extra[j], name) == 0 &&
                environ[i][name] == '=') {
                overridden = 1;
            }
        }
        if (!overridden) {
            env[m++] = environ[i];
        }
    }
    for (size_t j = 0; j < k; j++) {
        env[m++] = extra[j];
    }
    return env;
}

/* The registry of live children: the leaders of their process groups,
 * each marked with whether a test (rather than a group setup) started it.
 * owner is the process the entries belong to (a forked child inherits a
 * copy it must not act on). */
#define TK_MAX_CHILDREN 4096
static struct {
    pid_t pid;
    int in_test;
} live[TK_MAX_CHILDREN];
static int nlive;
static pid_t live_owner;
static int in_test; /* set between group setup and group teardown */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void kill_at_exit(void)
{
    tk_kill_children();
}

void tk_adopt(pid_t pid)
{
    static int atexit_done;
    pthread_mutex_lock(&live_lock);
    if (live_owner != getpid()) {
        live_owner = getpid();
        nlive = 0;
    }
    if (!atexit_done) {
        atexit_done = 1;
        atexit(kill_at_exit);
    }
    int full = nlive == TK_MAX_CHILDREN;
    if (!full) {
        live[nlive].pid = pid;
        live[nlive].in_test = in_test;
        nlive++;
    }
    pthread_mutex_unlock(&live_lock);
    if (full) {
        kill(-pid, SIGKILL);
        fail_msg("testkit: more than %d live children", TK_MAX_CHILDREN);
    }
}

/* Drops pid from the registry; 1 if it was there. */
static int unregister(pid_t pid)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (int i = 0; live_owner == getpid() && i < nlive; i++) {
        if (live[i].pid == pid) {
            live[i] = live[--nlive];
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    return found;
}

pid_t tk_waitpid(pid_t pid, int *status, int options)
{
    pid_t r;
    do {
        r = waitpid(pid, status, options);
    } while (r < 0 && errno == EINTR);
    if (r == pid && unregister(pid)) {
        /* The group's leader is gone; nothing of it may outlive it. The
         * pid stays unused while its group has members, so this cannot
         * reach another process's group. */
        kill(-pid, SIGKILL);
    } else if (r < 0 && errno == ECHILD) {
        unregister(pid); /* reaped elsewhere: its pid may be reused */
        errno = ECHILD;
    }
    return r;
}

/* Kills and reaps the registered groups (those a test started, or all). */
static int kill_live(int test_only)
{
    int killed = 0;
    pthread_mutex_lock(&live_lock);
    for (int i = nlive - 1; live_owner == getpid() && i >= 0; i--) {
        if (test_only && !live[i].in_test) {
            continue;
        }
        pid_t pid = live[i].pid;
        live[i] = live[--nlive];
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL); /* in case it had left its group */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        killed++;
    }
    pthread_mutex_unlock(&live_lock);
    if (killed > 0) {
        fprintf(stderr,
                "testkit: killed and reaped %d child process group(s) "
                "the test left running\n",
                killed);
    }
    return killed;
}

int tk_kill_children(void)
{
    return kill_live(0);
}

pid_t tk_fork(void)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fail_msg("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        return 0;
    }
    /* Also here, so the group exists before any kill(-pid); fails
     * harmlessly once the child has exec'd. */
    setpgid(pid, pid);
    tk_adopt(pid);
    return pid;
}

void tk_spawn_cmd(tk_child *c, char *const argv[], char *const env[])
{
    memset(c, 0, sizeof(*c));
    char **envp = merged_env(env);
    const char *base = strrchr(argv[0], '/');
    snprintf(c->name, sizeof(c->name), "%s", base != NULL ? base + 1 : argv[0]);
    pid_t pid = tk_fork();
    if (pid == 0) {
        execvpe(argv[0], argv, envp);
        _exit(127);
    }
    c->pid = pid;
    free(envp);
}

void tk_spawn(tk_child *c, const char *role, char *const args[],
              char *const env[])
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)tk_self();
    argv[n++] = "--tk-role";
    argv[n++] = (char *)role;
    for (int i = 0; args != NULL && args[i] != NULL && n < 63; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    tk_spawn_cmd(c, argv, env);
    snprintf(c->name, sizeof(c->name), "%s", role);
}

int tk_exit_code(const tk_child *c)
{
    if (WIFEXITED(c->status)) {
        return WEXITSTATUS(c->status);
    }
    if (WIFSIGNALED(c->status)) {
        return 128 + WTERMSIG(c->status);
    }
    return -1;
}

void tk_signal(tk_child *c, int sig)
{
    if (!c->done && c->pid > 0) {
        kill(c->pid, sig);
    }
}

static int reap_some(tk_child *cs, int n)
{
    int left = 0;
    for (int i = 0; i < n; i++) {
        if (cs[i].done) {
            continue;
        }
        pid_t r = tk_waitpid(cs[i].pid, &cs[i].status, WNOHANG);
        if (r == cs[i].pid || (r < 0 && errno == ECHILD)) {
            cs[i].done = 1;
        } else {
            left++;
        }
    }
    return left;
}

int tk_reap(tk_child *cs, int n, int64_t timeout_ms)
{
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    int pause = 1;
    while (reap_some(cs, n) > 0 && tk_now_ms() < end) {
        tk_pause_ms(pause);
        pause = pause < 20 ? pause * 2 : 20;
    }
    int killed = 0;
    for (int i = 0; i < n; i++) {
        if (!cs[i].done) {
            fprintf(stderr,
                    "testkit: child '%s' (pid %d) did not finish; "
                    "killing it\n",
                    cs[i].name, (int)cs[i].pid);
            kill(-cs[i].pid, SIGKILL);
            kill(cs[i].pid, SIGKILL);
            tk_waitpid(cs[i].pid, &cs[i].status, 0);
            cs[i].done = 1;
            killed++;
        }
    }
    return killed;
}

/* The group being run by tk_run_group_impl: each test's own fixtures, in
 * the order cmocka runs them (every test, in array order: the kit does
 * not support cmocka_set_test_filter). */
static const struct CMUnitTest *run_tests;
static size_t run_next;
static const struct CMUnitTest *run_current;
static CMFixtureFunction run_group_setup, run_group_teardown;

static void set_in_test(int v)
{
    pthread_mutex_lock(&live_lock);
    in_test = v;
    pthread_mutex_unlock(&live_lock);
}

static int test_setup(void **state)
{
    run_current = &run_tests[run_next++];
    return run_current->setup_func != NULL ? run_current->setup_func(state) : 0;
}

static int test_teardown(void **state)
{
    int rc = 0;
    if (run_current != NULL && run_current->teardown_func != NULL) {
        rc = run_current->teardown_func(state);
    }
    kill_live(1);
    return rc;
}

static int group_setup(void **state)
{
    int rc = run_group_setup != NULL ? run_group_setup(state) : 0;
    set_in_test(1);
    return rc;
}

static int group_teardown(void **state)
{
    set_in_test(0);
    return run_group_teardown != NULL ? run_group_teardown(state) : 0;
}

int tk_run_group_impl(const char *group, const struct CMUnitTest *tests,
                      size_t ntests, CMFixtureFunction setup,
                      CMFixtureFunction teardown)
{
    struct CMUnitTest *wrapped = calloc(ntests, sizeof(*wrapped));
    if (wrapped == NULL) {
        fprintf(stderr, "testkit: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < ntests; i++) {
        wrapped[i] = tests[i];
        wrapped[i].setup_func = test_setup;
        wrapped[i].teardown_func = test_teardown;
    }
    run_tests = tests;
    run_next = 0;
    run_current = NULL;
    run_group_setup = setup;
    run_group_teardown = teardown;
    int rc = _cmocka_run_group_tests(group, wrapped, ntests, group_setup,
                                     group_teardown);
    set_in_test(0);
    tk_kill_children();
    free(wrapped);
    return rc;
}

int tk_main_impl(int argc, char **argv, const tk_role *roles, size_t nroles,
                 const char *group, const struct CMUnitTest *tests,
                 size_t ntests)
{
    if (argc >= 3 && strcmp(argv[1], "--tk-role") == 0) {
        for (size_t i = 0; i < nroles; i++) {
            if (strcmp(argv[2], roles[i].name) == 0) {
                return roles[i].fn(argc - 2, argv + 2);
            }
        }
        fprintf(stderr, "testkit: unknown role '%s'\n", argv[2]);
        return 127;
    }
    return tk_run_group_impl(group, tests, ntests, NULL, NULL);
}
