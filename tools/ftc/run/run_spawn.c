/* Rank processes: the command looked up once, then fork + exec with only
 * async-signal-safe calls in between (the launcher runs store and
 * lighthouse threads, so the child may not allocate or take locks). */
#include "run/run_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int executable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        return errno;
    }
    if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
        return EACCES;
    }
    return 0;
}

int run_spawn_resolve(const char *cmd, char *path, size_t cap)
{
    if (cmd[0] == '\0') {
        return ENOENT;
    }
    if (strchr(cmd, '/') != NULL) {
        int rc = executable(cmd);
        if (rc == 0 && (size_t)snprintf(path, cap, "%s", cmd) >= cap) {
            rc = ENAMETOOLONG;
        }
        return rc;
    }
    const char *dirs = getenv("PATH");
    if (dirs == NULL) {
        dirs = "/usr/local/bin:/usr/bin:/bin";
    }
    int found = ENOENT;
    while (found != 0) {
        size_t n = strcspn(dirs, ":");
        char candidate[4096];
        /* An empty PATH entry is the current directory, as in a shell. */
        int len = snprintf(candidate, sizeof(candidate), "%.*s%s%s", (int)n,
                           dirs, n == 0 ? "" : "/", cmd);
        int rc = len < 0 || (size_t)len >= sizeof(candidate)
                     ? ENAMETOOLONG
                     : executable(candidate);
        if (rc == 0) {
            if ((size_t)snprintf(path, cap, "%s", candidate) >= cap) {
                return ENAMETOOLONG;
            }
            found = 0;
        } else if (rc == EACCES) {
            found = EACCES; /* keep looking, but remember why */
        }
        if (dirs[n] == '\0') {
            break;
        }
        dirs += n + 1;
    }
    return found;
}

/* The child between fork and exec. Never returns. */
static void exec_child(pid_t parent, int null_fd, int out_fd, int err_fd,
                       const char *path, char *const argv[], char *const envp[])
{
    /* Its own process group: a terminal's Ctrl-C reaches only the
     * launcher, which then stops the ranks in order; and signalling the
     * group reaches whatever the rank started. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(127); /* the launcher died before prctl */
    }
    if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        _exit(127);
    }
    for (int sig = 1; sig < NSIG; sig++) {
        signal(sig, SIG_DFL); /* fails harmlessly for SIGKILL, SIGSTOP */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* No launcher descriptor (store or lighthouse sockets) leaks into the
     * trainer, whoever opened it. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(path, argv, envp);
    _exit(127);
}

int run_spawn(const char *path, char *const argv[], char *const envp[],
              run_child *out)
{
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
        pipe2(err_pipe, O_CLOEXEC) != 0) {
        int rc = errno;
        int fds[] = {null_fd, out_pipe[0], out_pipe[1], err_pipe[0],
                     err_pipe[1]};
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
            if (fds[i] >= 0) {
                close(fds[i]);
            }
        }
        return rc;
    }
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        exec_child(parent, null_fd, out_pipe[1], err_pipe[1], path, argv, envp);
    }
    int rc = pid < 0 ? errno : 0;
    close(null_fd);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        return rc;
    }
    /* Also here, so the group exists before the first kill(-pid); fails
     * harmlessly if the child already exec'd. */
    setpgid(pid, pid);
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    out->pid = pid;
    out->out_fd = out_pipe[0];
    out->err_fd = err_pipe[0];
    return 0;
}
