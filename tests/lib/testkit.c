/* Test kit: deadlines, child processes, scratch directories. */
#include "testkit.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
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

void tk_spawn_cmd(tk_child *c, char *const argv[], char *const env[])
{
    memset(c, 0, sizeof(*c));
    char **envp = merged_env(env);
    const char *base = strrchr(argv[0], '/');
    snprintf(c->name, sizeof(c->name), "%s", base != NULL ? base + 1 : argv[0]);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fail_msg("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Only async-signal-safe calls between fork and exec. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
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
        pid_t r = waitpid(cs[i].pid, &cs[i].status, WNOHANG);
        if (r == cs[i].pid) {
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
            kill(cs[i].pid, SIGCONT);
            kill(cs[i].pid, SIGKILL);
            waitpid(cs[i].pid, &cs[i].status, 0);
            cs[i].done = 1;
            killed++;
        }
    }
    return killed;
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
    return _cmocka_run_group_tests(group, tests, ntests, NULL, NULL);
}
