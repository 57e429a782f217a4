/* One replica group: its key-value store (kept across restarts), its M
 * rank processes of the current incarnation, and their output pipes. The
 * policy (when to restart, whom to hit) is run_job's. */
#ifndef FTC_TOOLS_RUN_GROUP_H
#define FTC_TOOLS_RUN_GROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "ftc/ftc.h"
#include "run/run_env.h"
#include "run/run_lines.h"

/* The pipes of a rank, by index: its stdout, its stderr, and the event
 * pipe its manager reports on (FTC_EVENT_FD). */
enum { RUN_STDOUT, RUN_STDERR, RUN_EVENTS, RUN_STREAMS };

typedef struct run_rank {
    pid_t pid;           /* also its process group; 0 once reaped */
    int status;          /* waitpid status of its exit */
    int fd[RUN_STREAMS]; /* read ends; -1 once closed */
    run_lines lines[RUN_STREAMS];
} run_rank;

typedef enum run_group_state {
    RUN_GROUP_WAITING,  /* to (re)start at restart_at_ms */
    RUN_GROUP_RUNNING,  /* ranks running (some may have exited 0) */
    RUN_GROUP_STOPPED,  /* SIGSTOPped until resume_at_ms */
    RUN_GROUP_DYING,    /* a rank died: the rest are being killed */
    RUN_GROUP_FINISHED, /* every rank exited 0 */
    RUN_GROUP_FAILED,   /* died more often than --max-restarts */
    RUN_GROUP_ENDED,    /* stopped by the launcher at the end of the job */
} run_group_state;

typedef struct run_group {
    int index;
    char id[32];     /* FTC_REPLICA_ID */
    int incarnation; /* of the ranks running now, or last */
    int started;     /* incarnation 0 was started */
    run_group_state state;
    int healthy;   /* committed a step since it (re)started or resumed */
    int stepped;   /* committed a step in this incarnation */
    int live;      /* ranks not reaped yet */
    int exited_ok; /* ranks of this incarnation that exited 0 */
    int hit;       /* this incarnation was killed by an injection */
    int job_over;  /* this incarnation said the job finished without it */
    int restarts;  /* all restarts */
    int crashes;   /* deaths not caused by an injection */
    int64_t restart_at_ms;
    int64_t resume_at_ms;
    char death[96]; /* why this incarnation died (its first rank) */
    ftc_store_server *store;
    char store_addr[64];
    int nranks;
    run_rank *ranks;
} run_group;

/* Allocates the ranks and starts the group's store on host (a free port),
 * with the job's token (NULL: none) and PyTorch's keys open.
 * index: its place in the job's table; replica_index: the job-wide one
 * its id says (replica_<replica_index>). Returns 0, or -1 after printing
 * why to stderr. */
int run_group_init(run_group *g, int index, int replica_index, int nranks,
                   const char *host, const char *token);
/* Stops the store and frees. The ranks must be reaped. */
void run_group_free(run_group *g);

/* What every rank of every group shares. */
typedef struct run_launch {
    const char *path;     /* resolved command */
    char *const *argv;    /* the command and its arguments */
    char *const *environ; /* inherited environment */
    const char *job, *lighthouse, *run_dir;
    const char *trace_dir;       /* --trace, absolute; NULL: none */
    const char *const *user_env; /* --env */
    int n_user_env;
    const char *host;  /* bound and advertised (--host) */
    const char *token; /* the job's (run_token.h); NULL: open */
    int first_replica; /* replica index of groups[0] */
    int num_replicas;  /* of the whole job */
} run_launch;

/* Starts every rank of the current incarnation. Returns 0, or an errno
 * value after killing and reaping the ranks it had started. */
int run_group_spawn(run_group *g, const run_launch *l);

/* Sends sig to the process group of every live rank. */
void run_group_signal(const run_group *g, int sig);

/* The rank with this pid, or -1. */
int run_group_rank_of(const run_group *g, pid_t pid);

/* Records the exit of rank r (already reaped with status): kills what it
 * left in its process group, closes its pipes (the caller drained them
 * first). */
void run_group_reaped(run_group *g, int r, int status);

/* "exited with code 3", "killed by SIGKILL" into buf. */
void run_group_describe_status(int status, char *buf, size_t cap);

#endif
