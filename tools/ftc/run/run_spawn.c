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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run_env.h"

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
static void exec_child(pid_t parent, int null_fd, const int fds[3],
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
    if (dup2(null_fd, 0) < 0 || dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0) {
        _exit(127);
    }
    /* dup2 onto itself would keep close-on-exec: clear it instead. */
    if (fds[2] == RUN_EVENT_FD ? fcntl(RUN_EVENT_FD, F_SETFD, 0) != 0
                               : dup2(fds[2], RUN_EVENT_FD) < 0) {
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
    close_range(RUN_EVENT_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(path, argv, envp);
    _exit(127);
}

int run_spawn(const char *path, char *const argv[], char *const envp[],
              run_child *out)
{
    /* stdout, stderr and events: [0] the launcher's ends, [1] the
     * child's. Events go over a socket pair, not a pipe: a reporter's
     * send can then be non-blocking and never raise SIGPIPE without
     * changing anything the trainer's process shares. */
    int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int rc = null_fd < 0 ? errno : 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        rc = pipe2(pipes[i], O_CLOEXEC) != 0 ? errno : 0;
    }
    if (rc == 0 &&
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipes[2]) != 0) {
        rc = errno;
    }
    pid_t pid = -1;
    if (rc == 0) {
        fflush(NULL); /* nothing buffered may be written twice */
        pid_t parent = getpid();
        int child_fds[3] = {pipes[0][1], pipes[1][1], pipes[2][1]};
        pid = fork();
        if (pid == 0) {
            exec_child(parent, null_fd, child_fds, path, argv, envp);
        }
        rc = pid < 0 ? errno : 0;
    }
    if (null_fd >= 0) {
        close(null_fd);
    }
    for (int i = 0; i < 3; i++) {
        for (int end = rc == 0 ? 1 : 0; end < 2; end++) {
            if (pipes[i][end] >= 0) {
                close(pipes[i][end]);
            }
        }
    }
    if (rc != 0) {
        return rc;
    }
    /* Also here, so the group exists before the first kill(-pid); fails
     * harmlessly if the child already exec'd. */
    setpgid(pid, pid);
    for (int i = 0; i < 3; i++) {
        fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
    }
    out->pid = pid;
    out->out_fd = pipes[0][0];
    out->err_fd = pipes[1][0];
    out->event_fd = pipes[2][0];
    return 0;
}
