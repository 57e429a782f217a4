/* Percentiles and worker processes for the ftc bench subcommands. */
#include "bench/bench_stats.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_percentile(double *samples, size_t n, double p)
{
    if (n == 0) {
        return 0;
    }
    qsort(samples, n, sizeof(*samples), cmp_double);
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.5);
    if (rank < 1) {
        rank = 1;
    }
    return samples[(rank > n ? n : rank) - 1];
}

pid_t bench_spawn_self(char *const args[])
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len < 0) {
        return -1;
    }
    self[len] = '\0';
    char *argv[64];
    int n = 0;
    argv[n++] = self;
    for (int i = 0; args[i] != NULL && n < 63; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    pid_t pid;
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) {
        return -1;
    }
    return pid;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int bench_wait_all(const pid_t *pids, int n, int64_t timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    int failed = 0, left = n;
    char *done = calloc((size_t)n, 1);
    if (done == NULL) {
        return n;
    }
    while (left > 0 && now_ms() < end) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            struct timespec pause = {0, 2000000};
            nanosleep(&pause, NULL);
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (pids[i] == pid && !done[i]) {
                done[i] = 1;
                left--;
                failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (!done[i]) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            failed++;
        }
    }
    free(done);
    return failed;
}

int bench_fd_room(long need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 0;
    }
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)need > rl.rlim_cur) {
        fprintf(stderr,
                "ftc bench: %ld file descriptors needed, the limit is %llu "
                "(raise the hard limit: ulimit -Hn)\n",
                need, (unsigned long long)rl.rlim_cur);
        return -1;
    }
    return 0;
}
