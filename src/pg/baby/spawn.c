/* Starting a Baby group's child: finding the helper binary and spawning
 * it from one long-lived thread.
 *
 * Why a thread of its own: the child asks for SIGKILL when its parent
 * dies (PR_SET_PDEATHSIG), and Linux sends it when the *thread* that
 * forked it exits, not the process. Groups are created from any thread
 * (the manager's, a short-lived one in a test), so every child is spawned
 * by this one thread, which lives as long as the process does. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pg/baby/baby.h"
#include "pg/pg_int.h"

extern char **environ;

typedef struct spawn_req {
    const char *path;
    const char *label;
    int fd; /* becomes the child's descriptor 3 */
    int done;
    int err; /* posix_spawn's */
    pid_t pid;
} spawn_req;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static spawn_req *pending; /* the one request the thread serves next */
static int started;

static void run(spawn_req *r)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, r->fd, FTC__BABY_CHILD_FD);
    /* Library threads block every signal (base/thread.c): the child starts
     * with none blocked and every handler at its default. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)"ftc-baby", (char *)r->label, NULL};
    r->err = posix_spawn(&r->pid, r->path, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
}

static void *spawner(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (pending == NULL) {
            pthread_cond_wait(&cv, &mu);
        }
        run(pending);
        pending->done = 1;
        pending = NULL;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

int ftc__baby_spawn(const char *path, const char *label, int fd, pid_t *pid)
{
    spawn_req r = {.path = path, .label = label, .fd = fd};
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (!started) {
        pthread_t t;
        rc = ftc__thread_start(&t, "ftc-baby-spawn", spawner, NULL);
        if (rc == 0) {
            pthread_detach(t);
            started = 1;
        }
    }
    while (rc == 0 && pending != NULL) {
        pthread_cond_wait(&cv, &mu);
    }
    if (rc == 0) {
        pending = &r;
        pthread_cond_broadcast(&cv);
        while (!r.done) {
            pthread_cond_wait(&cv, &mu);
        }
    }
    pthread_mutex_unlock(&mu);
    if (rc == 0 && r.err != 0) {
        rc = ftc__seterr_errno(r.err, "baby: cannot start %s", path);
    }
    *pid = rc == 0 ? r.pid : -1;
    return rc;
}

/* The helper next to an installed libftc: <libdir>/../libexec/ftc/. */
static int beside_library(char *out, size_t cap)
{
    Dl_info info;
    if (dladdr((void *)ftc__baby_spawn, &info) == 0 || info.dli_fname == NULL) {
        return -1;
    }
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", info.dli_fname);
    snprintf(out, cap, "%s/../libexec/ftc/ftc-baby", dirname(dir));
    return access(out, X_OK);
}

int ftc__baby_helper(char *out, size_t cap)
{
    ftc__pg_env e;
    ftc__pg_env_read(&e);
    const char *env = e.baby_helper;
    if (env != NULL && env[0] != '\0') {
        snprintf(out, cap, "%s", env);
        if (access(out, X_OK) == 0) {
            return 0;
        }
        return ftc__seterr(FTC_ENOTSUP,
                           "baby: FTC_PG_BABY_HELPER=%s is not an executable",
                           env);
    }
    if (beside_library(out, cap) == 0) {
        return 0;
    }
    char installed[1024];
    snprintf(installed, sizeof(installed), "%s", out);
    snprintf(out, cap, "%s", FTC__BABY_BUILD_HELPER);
    if (access(out, X_OK) == 0) {
        return 0;
    }
    return ftc__seterr(FTC_ENOTSUP,
                       "baby: the helper ftc-baby is not installed (looked "
                       "for %s and %s); set FTC_PG_BABY_HELPER to its path",
                       installed[0] != '\0' ? installed : "<libdir>/../libexec",
                       FTC__BABY_BUILD_HELPER);
}
