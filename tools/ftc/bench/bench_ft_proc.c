/* Worker processes of `ftc bench ft` (fault, failover): "ftc bench ft
 * --worker ..." spawned from this executable with its stdout on a pipe,
 * read line by line, killed and reaped. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_ft.h"

extern char **environ;

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
    int rc = posix_spawn(&p->pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    p->fd = fds[0];
    if (rc != 0) {
        close(fds[0]);
        p->fd = -1;
        p->pid = 0;
        fprintf(stderr, "bench ft: spawn: %s\n", strerror(rc));
    }
    return rc == 0 ? 0 : -1;
}

void bench_ft_reap(bench_ft_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    if (p->fd >= 0) {
        close(p->fd);
    }
    p->pid = 0;
    p->fd = -1;
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
