/* What the launcher learns while a job runs: per replica group progress
 * from its FTC_EVENT lines, every failure, and how long each took to
 * recover. Pure bookkeeping: times are passed in. */
#ifndef FTC_TOOLS_RUN_STATS_H
#define FTC_TOOLS_RUN_STATS_H

#include <stdint.h>

#include "run/run_event.h"

/* Failures recorded; later ones are counted but not kept. */
#define RUN_MAX_FAILURES 100000

typedef struct run_failure {
    int injected;         /* 1: the launcher hit it; 0: it died on its own */
    int stop;             /* 1: SIGSTOP then SIGCONT; 0: killed or died */
    int victim;           /* replica index */
    int incarnation;      /* the victim's incarnation that was hit */
    int64_t at_ms;        /* since the job started */
    int64_t step;         /* the job's highest committed step then */
    int64_t resumed_ms;   /* stop: when SIGCONT was sent; -1 before */
    int64_t survivors_ms; /* to another group's next committed step; -1 */
    int64_t victim_ms;    /* to the victim's first committed step back */
    int noted;            /* bits the caller uses to print each once */
    char detail[96];      /* e.g. "rank 1 exited with code 3" */
} run_failure;

/* Who reported an event: the trainer on its stdout, or libftc's manager
 * on the launcher's event socket (FTC_EVENT_FD). Both may report the same
 * steps; each keeps its own counts and results, and the summary takes the
 * manager's counts and the trainer's checksums when both are there
 * (docs/decisions.md, "Two reporters"). */
typedef enum run_source {
    RUN_SOURCE_TRAINER = 0,
    RUN_SOURCE_MANAGER = 1,
    RUN_SOURCES
} run_source;

typedef struct run_rank_result {
    int have;
    char checksum[RUN_EVENT_TEXT_MAX];
    double final_loss; /* NAN if not reported */
    int64_t steps;     /* -1 if not reported */
} run_rank_result;

/* One reporter's counts for a group. */
typedef struct run_tally {
    int64_t committed; /* step events with committed true */
    int64_t uncommitted;
    int64_t heals;
} run_tally;

typedef struct run_replica_stats {
    int64_t last_step; /* highest committed step reported; 0 */
    double last_loss;  /* loss of the latest step event; NAN */
    run_tally tally[RUN_SOURCES];
    int64_t errors, bad_events;
    /* One per rank and reporter, latest incarnation only. */
    run_rank_result *results[RUN_SOURCES];
} run_replica_stats;

typedef struct run_stats {
    int n, m; /* replica groups, ranks per group */
    run_replica_stats *replicas;
    run_failure *failures;
    int n_failures;       /* kept */
    int64_t injected;     /* failures the launcher injected, kept or not */
    int64_t failed;       /* all failures, kept or not */
    int64_t max_step;     /* highest committed step of any group; 0 */
    int64_t participants; /* of the latest committed step event; -1 */
    double loss;          /* of the latest step event; NAN */
} run_stats;

/* Returns 0 or FTC_ENOMEM. */
int run_stats_init(run_stats *s, int n, int m);
void run_stats_free(run_stats *s);

/* Records a failure of group victim now; returns the record (valid until
 * the next call), or NULL when RUN_MAX_FAILURES are kept already or memory
 * ran out. */
run_failure *run_stats_failure(run_stats *s, int injected, int stop, int victim,
                               int incarnation, int64_t now_ms);
/* A SIGSTOPped group was continued. */
void run_stats_resumed(run_stats *s, int victim, int64_t now_ms);
/* A group restarts: its rank results belonged to the dead incarnation. */
void run_stats_restarted(run_stats *s, int g);

/* An event from rank r of group g (now in incarnation inc) reported by
 * src. Step events count from group rank 0 only (the contract: it reports
 * for the group); they also complete recovery measurements. */
void run_stats_event(run_stats *s, int g, int r, int inc, run_source src,
                     const run_event *ev, int64_t now_ms);

/* The counts of group g: its manager's once it reported a step or heal,
 * else its trainer's. */
const run_tally *run_stats_tally(const run_stats *s, int g);

/* Summary over recoveries measured so far. */
typedef struct run_recovery_summary {
    int survivors_n, victim_n;
    int64_t survivors_mean_ms, survivors_max_ms;
    int64_t victim_mean_ms, victim_max_ms;
} run_recovery_summary;
void run_stats_recovery(const run_stats *s, run_recovery_summary *out);

/* Whose results the groups with counted[g] set are compared by: the
 * trainers' if every rank of those groups reported one, else the
 * managers' if every rank did, else -1 (nothing to compare). */
int run_stats_result_source(const run_stats *s, const int *counted);

/* 1 if run_stats_result_source finds a source and, for each group rank,
 * the checksums of the counted groups (at least one) are equal. */
int run_stats_checksums_identical(const run_stats *s, const int *counted);

#endif
