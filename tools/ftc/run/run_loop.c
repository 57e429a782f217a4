/* The event loop of `ftc run`. Output is read as it comes; a reaped
 * rank's pipes are drained before its exit is handled, so its last lines
 * (its result) are never lost to the race between exit and read. */
#include "run/run_loop.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base_int.h"

/* Reads at most this much from one pipe per turn, and this many turns
 * when draining a reaped rank (its leftovers were killed with it). */
#define RUN_READ_BYTES 65536
#define RUN_DRAIN_READS 64

/* A rank's pipes in the order they are read: its manager's events before
 * its stdout, so that a manager's step event is taken before the
 * trainer's report of the same step (the manager wrote it first). */
static const int read_order[RUN_STREAMS] = {RUN_EVENTS, RUN_STDOUT, RUN_STDERR};

/* The signals the loop takes from its signalfd. */
static void loop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP); /* the terminal went away: stop like SIGTERM */
    sigaddset(set, SIGCHLD);
}

void run_loop_block_signals(sigset_t *old)
{
    sigset_t set;
    loop_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, old);
    /* A closed stdout must not kill the launcher before it stops the
     * ranks; ranks get SIGPIPE back at its default (run_spawn). */
    signal(SIGPIPE, SIG_IGN);
}

typedef struct line_ctx {
    run_job *job;
    int g, r, stream;
} line_ctx;

static void on_line(void *arg, char *line, size_t len)
{
    line_ctx *c = arg;
    run_job_line(c->job, c->g, c->r, c->stream, line, len);
}

/* One read from a rank's pipe. Returns 1 if more may follow now. */
static int read_pipe(run_job *job, int g, int r, int stream)
{
    run_rank *rk = &job->groups[g].ranks[r];
    int fd = rk->fd[stream];
    if (fd < 0) {
        return 0;
    }
    char buf[RUN_READ_BYTES];
    ssize_t n = read(fd, buf, sizeof(buf));
    line_ctx c = {job, g, r, stream};
    if (n > 0) {
        run_lines_feed(&rk->lines[stream], buf, (size_t)n, on_line, &c);
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    /* End of output (or a broken pipe): the rank may still run. */
    run_lines_flush(&rk->lines[stream], on_line, &c);
    close(fd);
    rk->fd[stream] = -1;
    return 0;
}

static void reap(run_job *job)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int g = 0; g < job->n; g++) {
            int r = run_group_rank_of(&job->groups[g], pid);
            if (r < 0) {
                continue;
            }
            for (int k = 0; k < RUN_STREAMS; k++) {
                int s = read_order[k];
                for (int i = 0; i < RUN_DRAIN_READS && read_pipe(job, g, r, s);
                     i++) {
                }
                line_ctx c = {job, g, r, s};
                run_lines_flush(&job->groups[g].ranks[r].lines[s], on_line, &c);
            }
            run_job_exited(job, g, r, status);
            break;
        }
    }
}

static void take_signals(run_job *job, int sfd)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            reap(job);
        } else {
            run_job_signal(job, (int)si.ssi_signo);
        }
    }
}

typedef struct slot {
    int g, r, stream;
} slot;

int run_loop(run_job *job)
{
    sigset_t set;
    loop_signals(&set);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    size_t cap = 1 + RUN_STREAMS * (size_t)job->n * (size_t)job->opts->ranks;
    struct pollfd *pfds = ftc__calloc(cap, sizeof(*pfds));
    slot *slots = ftc__calloc(cap, sizeof(*slots));
    int rc = 0;
    if (sfd < 0 || pfds == NULL || slots == NULL) {
        fprintf(stderr, "ftc run: cannot start the event loop: %s\n",
                strerror(sfd < 0 ? errno : ENOMEM));
        rc = -1;
    }
    while (rc == 0) {
        int64_t wake = run_job_tick(job);
        if (job->phase == RUN_PHASE_DONE) {
            break;
        }
        size_t n = 1;
        pfds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        for (int g = 0; g < job->n; g++) {
            for (int r = 0; r < job->groups[g].nranks; r++) {
                for (int k = 0; k < RUN_STREAMS; k++) {
                    int s = read_order[k];
                    int fd = job->groups[g].ranks[r].fd[s];
                    if (fd >= 0) {
                        slots[n] = (slot){g, r, s};
                        pfds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                    }
                }
            }
        }
        int64_t left = wake - run_job_now(job);
        int timeout = wake == INT64_MAX ? -1
                      : left <= 0       ? 0
                      : left > INT_MAX  ? INT_MAX
                                        : (int)left;
        if (poll(pfds, n, timeout) < 0 && errno != EINTR) {
            fprintf(stderr, "ftc run: poll: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        for (size_t i = 1; i < n; i++) {
            if (pfds[i].revents != 0) {
                read_pipe(job, slots[i].g, slots[i].r, slots[i].stream);
            }
        }
        if (pfds[0].revents != 0) {
            take_signals(job, sfd);
        }
    }
    if (rc != 0) {
        /* Nothing may outlive the launcher: kill and reap what is left. */
        for (int g = 0; g < job->n; g++) {
            run_group_signal(&job->groups[g], SIGKILL);
            for (int r = 0; r < job->groups[g].nranks; r++) {
                pid_t pid = job->groups[g].ranks[r].pid;
                int status;
                if (pid > 0 && waitpid(pid, &status, 0) == pid) {
                    run_group_reaped(&job->groups[g], r, status);
                }
            }
        }
    }
    ftc__free(pfds);
    ftc__free(slots);
    if (sfd >= 0) {
        close(sfd);
    }
    return rc;
}
