/* Processes of `ftc bench ft` (fault, failover, partition): workers ("ftc
 * bench ft --worker ...") and other programs spawned with their stdout on
 * a pipe, read line by line, killed and reaped; programs spawned with
 * their output in a log file; the scratch folder those logs live in. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_ft.h"

extern char **environ;

int bench_ft_spawn_piped(bench_ft_proc *p, const char *path, char *const argv[],
                         bool stderr_too)
{
    int fds[2];
    memset(p, 0, sizeof(*p));
    p->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "bench ft: pipe: %s\n", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    if (stderr_too) {
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    }
    int rc = posix_spawnp(&p->pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    p->fd = fds[0];
    if (rc != 0) {
        close(fds[0]);
        p->fd = -1;
        p->pid = 0;
        fprintf(stderr, "bench ft: %s: %s\n", path, strerror(rc));
    }
    return rc == 0 ? 0 : -1;
}

int bench_ft_spawn_worker(bench_ft_proc *p, const char *lighthouse,
                          const char *store, int group, size_t floats,
                          const char *backend)
{
    char sg[16], sf[32];
    snprintf(sg, sizeof(sg), "%d", group);
    snprintf(sf, sizeof(sf), "%zu", floats);
    char *argv[] = {
        "ftc",         "bench", "ft", "--worker",      (char *)lighthouse,
        (char *)store, sg,      sf,   (char *)backend, NULL};
    return bench_ft_spawn_piped(p, "/proc/self/exe", argv, false);
}

void bench_ft_reap(bench_ft_proc *p)
{
    bench_ft_end(&p->pid);
    if (p->fd >= 0) {
        close(p->fd);
    }
    p->fd = -1;
}

int bench_ft_exit_status(bench_ft_proc *p)
{
    int st = 0;
    pid_t got;
    do {
        got = waitpid(p->pid, &st, 0);
    } while (got < 0 && errno == EINTR);
    if (p->fd >= 0) {
        close(p->fd);
    }
    p->fd = -1;
    p->pid = 0;
    return got > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void bench_ft_drain(bench_ft_proc *p, void (*on_line)(void *, const char *),
                    void *user)
{
    ssize_t k = read(p->fd, p->line + p->len, sizeof(p->line) - 1 - p->len);
    if (k <= 0) {
        if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
            close(p->fd);
            p->fd = -1;
        }
        return;
    }
    p->len += (size_t)k;
    p->line[p->len] = '\0';
    char *nl;
    while ((nl = strchr(p->line, '\n')) != NULL) {
        *nl = '\0';
        on_line(user, p->line);
        size_t used = (size_t)(nl + 1 - p->line);
        memmove(p->line, nl + 1, p->len - used + 1);
        p->len -= used;
    }
    if (p->len == sizeof(p->line) - 1) {
        p->len = 0; /* not a line of ours: dropped */
    }
}

/* ------------------------------------------------------- logged programs */

int bench_ft_spawn_logged(const char *dir, char *const argv[], const char *log,
                          pid_t *pid)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, log);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, path,
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        *pid = 0;
        fprintf(stderr, "bench ft: %s: %s\n", argv[0], strerror(rc));
    }
    return rc == 0 ? 0 : -1;
}

void bench_ft_end(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        kill(*pid, SIGCONT);
        while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    *pid = 0;
}

/* -------------------------------------------------------------- log dir */

int bench_ft_logdir_make(char *dir, size_t cap, const char *what)
{
    snprintf(dir, cap, "/tmp/ftc-%s-XXXXXX", what);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "bench ft %s: mkdtemp: %s\n", what, strerror(errno));
        dir[0] = '\0';
        return -1;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void bench_ft_logdir_close(const char *dir, bool keep, const char *what)
{
    if (dir[0] != '\0' && keep) {
        fprintf(stderr, "bench ft %s: the logs are in %s\n", what, dir);
    } else if (dir[0] != '\0') {
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}
