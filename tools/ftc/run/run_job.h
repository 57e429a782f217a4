/* The job's policy: what `ftc run` does when a rank prints an event or
 * exits, when a timer falls due, or when it is interrupted: restarting
 * groups, injecting failures, stopping, and the exit code. */
#ifndef FTC_TOOLS_RUN_JOB_H
#define FTC_TOOLS_RUN_JOB_H

#include <stdint.h>

#include "run/run_group.h"
#include "run/run_inject.h"
#include "run/run_opts.h"
#include "run/run_out.h"
#include "run/run_stats.h"

typedef enum run_phase {
    RUN_PHASE_RUNNING,  /* groups run and restart */
    RUN_PHASE_STOPPING, /* ranks were sent SIGTERM; waiting for them */
    RUN_PHASE_DONE,     /* every rank reaped */
} run_phase;

typedef enum run_outcome {
    RUN_OUTCOME_FINISHED,    /* every group finished: exit 0 */
    RUN_OUTCOME_DURATION,    /* --duration ended it: exit 0 */
    RUN_OUTCOME_FAILED,      /* a group ran out of restarts: exit 1 */
    RUN_OUTCOME_INTERRUPTED, /* SIGINT: exit 130 */
    RUN_OUTCOME_TERMINATED,  /* SIGTERM or SIGHUP: exit 143 */
} run_outcome;

typedef struct run_job {
    const run_opts *opts;
    run_launch launch;
    int64_t t0_ms; /* monotonic ms at start; job times are relative */
    run_group *groups;
    int n;
    run_stats stats;
    run_inject inject;
    run_out out;
    run_health *health; /* scratch for run_inject_poll */
    run_phase phase;
    run_outcome outcome;
    int64_t end_at_ms;  /* --duration */
    int64_t kill_at_ms; /* stopping: SIGKILL whatever is left then */
    /* A group finished: the others are stopped then if still running. */
    int64_t wind_down_at_ms;
    int64_t progress_at_ms;
    int64_t stopped_at_ms; /* when the job ended */
} run_job;

/* Allocates the groups and starts their stores. launch must be filled
 * except num_replicas. Returns 0, or -1 after printing why. */
int run_job_init(run_job *job, const run_opts *opts, const run_launch *l);
/* Stops the stores and frees; every rank must be reaped. */
void run_job_free(run_job *job);

/* Job time: ms since the job started. */
int64_t run_job_now(const run_job *job);

/* One line from rank r of group g: stream RUN_STDOUT, RUN_STDERR, or
 * RUN_EVENTS (its manager's event socket, never printed unless
 * --show-events). */
void run_job_line(run_job *job, int g, int r, int stream, char *line,
                  size_t len);
/* Rank r of group g was reaped with status (its pipes drained). */
void run_job_exited(run_job *job, int g, int r, int status);
/* SIGINT, SIGTERM or SIGHUP (handled as SIGTERM) reached the launcher. */
void run_job_signal(run_job *job, int sig);
/* Does what is due now (starts, restarts, resumes, injections, the end);
 * returns the job time at which it next needs to run. */
int64_t run_job_tick(run_job *job);

int run_job_exit_code(const run_job *job);
const char *run_job_outcome_name(run_outcome outcome);

#endif
