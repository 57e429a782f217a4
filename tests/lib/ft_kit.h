/* The manager's multi-process tests: a job of N replica groups x M ranks
 * on loopback (the lighthouse and one store per group in the test
 * process, each rank a child running the "ftk-rank" role: a small
 * deterministic trainer through ftc_manager), fault injection, and the
 * checks every test ends with (bit-identical final state, no committed
 * step lost or applied twice). */
#ifndef FTC_TEST_FT_KIT_H
#define FTC_TEST_FT_KIT_H

#include <stdbool.h>
#include <stdint.h>

#include "testkit.h"

#define FTK_MAX_GROUPS 4
#define FTK_MAX_RANKS 4
#define FTK_MAX_INC 4

/* The role every rank runs; list it in the test's roles. */
int ftk_rank_role(int argc, char **argv);
#define FTK_ROLES                                                              \
    {                                                                          \
        "ftk-rank", ftk_rank_role                                              \
    }

typedef struct ftk_job {
    int groups, ranks;
    int steps;        /* each replica trains until its committed step is this */
    const char *algo; /* "ddp" (default) or "diloco" */
    int floats;       /* state size per rank */
    int64_t min_replicas;
    const char *token; /* the lighthouse's and the stores' (ftk_set_token) */
    ftc_lighthouse *lh;
    char lh_addr[64];
    int lh_port;
    ftc_store_server *store[FTK_MAX_GROUPS];
    int inc[FTK_MAX_GROUPS]; /* current incarnation of each group */
    bool dead[FTK_MAX_GROUPS][FTK_MAX_INC];
    tk_child child[FTK_MAX_GROUPS][FTK_MAX_INC][FTK_MAX_RANKS];
    bool spawned[FTK_MAX_GROUPS][FTK_MAX_INC];
    char dir[256]; /* this job's logs */
} ftk_job;

/* Starts the lighthouse (min_replicas, 500 ms heartbeat timeout) and one
 * store per group; spawns nothing. */
void ftk_start(ftk_job *j, int groups, int ranks, int steps,
               int64_t min_replicas);
/* Gives the lighthouse and every group's store a token (both restarted:
 * before any group is spawned). */
void ftk_set_token(ftk_job *j, const char *token);
/* Spawns the next incarnation of group g (the first is 0), its ranks
 * getting extra environment entries "K=V" (NULL-ended, may be NULL). */
void ftk_spawn(ftk_job *j, int g, char *const extra_env[]);
/* Sends sig to every rank of group g's current incarnation. */
void ftk_signal(ftk_job *j, int g, int sig);
/* Kills (SIGKILL) group g's current incarnation and reaps it. */
void ftk_kill(ftk_job *j, int g);
/* Waits until a replica of group g (any incarnation) waits for the
 * lighthouse's next quorum or is in the current one. */
void ftk_wait_participant(ftk_job *j, int g, int64_t timeout_ms);
/* Ranks spawned with "FTK_GATE_AT=s" stop before step s until this is
 * called (the gate is a file in j->dir). */
void ftk_open_gate(ftk_job *j);
/* Stops the lighthouse and starts a new one on the same port. */
void ftk_restart_lighthouse(ftk_job *j);
/* Stops the lighthouse (its port stays the job's: restart it with
 * ftk_restart_lighthouse). */
void ftk_stop_lighthouse(ftk_job *j);
/* Waits until rank 0 of group g's current incarnation committed step
 * `step` or a later one (its log has "commit s", s >= step); returns the
 * last step it committed. */
int64_t ftk_wait_commit(ftk_job *j, int g, int64_t step, int64_t timeout_ms);
/* The monotonic time (ns) of the first commit of a step >= min_step by
 * any rank of group g (any incarnation) after t_ns, or -1. */
int64_t ftk_first_commit_after(ftk_job *j, int g, int64_t min_step,
                               int64_t t_ns);
/* The monotonic time (ns) of the first commit after t_ns by a rank of
 * any group but g, in a quorum that no rank of g's incarnation i was in
 * (never logged a round or a commit in it: a quorum with a member that
 * did not reach its collectives cannot commit); -1 if none yet. Sets
 * *step and *quorum_id to that commit's. */
int64_t ftk_first_commit_without(ftk_job *j, int g, int i, int64_t t_ns,
                                 int64_t *step, int64_t *quorum_id);
/* Reaps every live rank (they exit once trained) and checks each exited
 * 0, then runs ftk_check. */
void ftk_finish(ftk_job *j, int64_t timeout_ms);
/* The checks on the logs: each incarnation's commits are consecutive
 * (after a heal, from the healed step); every step below `steps` was
 * committed by some replica; every group's last incarnation reached
 * `steps` and ends with the same state hash per group rank. */
void ftk_check(ftk_job *j);
/* Stops the lighthouse and stores. */
void ftk_stop(ftk_job *j);

/* The replica_id group g's current incarnation logged ("id ..."), waited
 * for up to timeout_ms. */
void ftk_replica_id(ftk_job *j, int g, char *buf, size_t cap,
                    int64_t timeout_ms);
/* Reaps group g's current incarnation (which must exit on its own) and
 * marks it dead (not checked at the end). */
void ftk_reap_dead(ftk_job *j, int g, int64_t timeout_ms);

/* The rank's state (ft_kit_state.c): registers x and momentum (n floats
 * each) with m as FTK_STATE says: "borrowed" (default), "cb" (both through
 * save/load callbacks) or "mixed" (x borrowed, momentum through
 * callbacks). Each callback logs "save|load NAME ON_MAIN TID" to fd
 * (ON_MAIN 1 on the thread that registered). FTK_SAVE_FAIL_AT=s fails the
 * first save in a round started at step s (logged "savefail s"),
 * FTK_LOAD_FAIL_AT=s the first such load ("loadfail s"). */
int ftk_register_state(ftc_manager *m, float *x, float *v, int n, int fd);
/* The step the rank's next round starts at (before start_quorum). */
void ftk_state_round(int64_t step);

/* The log of rank r of incarnation i of group g (a path in j->dir). */
void ftk_log_path(const ftk_job *j, int g, int i, int r, char *buf, size_t cap);
/* How many lines of that log start with prefix. */
int ftk_count(const ftk_job *j, int g, int i, int r, const char *prefix);
/* The monotonic clock in ns, as the ranks log it. */
int64_t ftk_now_ns(void);

#endif
