/* Internals of the manager shared by its files: the handle, the round
 * handed from the training thread to the quorum thread and back, the
 * process group slot that pushed aborts reach, and the error latch.
 *
 * Files: manager.c (options, create, destroy, getters), manager_state.c
 * (the registered state: borrowed or behind callbacks; healed states),
 * manager_env.c (options from the launcher's environment), manager_round.c
 * (the quorum thread: one round), manager_push.c (heartbeat and watch
 * threads), manager_step.c (start/wait quorum, allreduce, should_commit),
 * manager_comm.c (the algo comm), manager_report.c (events for the
 * launcher), manager_suspects.c (whom this rank could not reach),
 * manager_plan.c and manager_wire.c (pure parts, ft/manager_plan.h). */
#ifndef FTC_FT_MANAGER_H
#define FTC_FT_MANAGER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "ft/manager/manager_plan.h"
#include "ft/quorum/quorum.h"
#include "ftc/ft.h"
#include "ftc/pg.h"
#include "ftc/store.h"

#define FTC__MGR_MAGIC 0x4d475231u /* "MGR1" */
#define FTC__MGR_MSG_MAX 512
/* Bytes of the base replica_id; the leader appends ":" and 8 hex. */
#define FTC__MGR_BASE_ID_MAX 200
/* A TLS file path the manager keeps. */
#define FTC__MGR_PATH_MAX 1024
#define FTC__MGR_LOST_MAX 32

/* Where the round stands. */
typedef enum ftc__manager_phase {
    FTC__MGR_IDLE = 0,    /* no round yet, or the last one voted/failed */
    FTC__MGR_RUNNING = 1, /* on the quorum thread */
    FTC__MGR_DONE = 2,    /* finished; wait_quorum takes it over */
    FTC__MGR_READY = 3,   /* taken over: allreduce and vote allowed */
} ftc__manager_phase;

/* What the quorum thread found, handed to the training thread. */
typedef struct ftc__manager_outcome {
    int rc;
    char msg[FTC__MGR_MSG_MAX];
    int64_t quorum_id, replica_rank, replica_world_size, max_step;
    ftc__manager_plan plan;
    bool healed; /* the state of max_step is in place or staged */
    bool staged; /* ... in m->staging, to apply in wait_quorum */
    int64_t heal_step, heal_batches;
    /* The transfer, counted in the stats once the state is applied. */
    int64_t heal_bytes;
    double heal_ms;
    char heal_source[FTC_LIGHTHOUSE_STR_MAX];
    double ms;
} ftc__manager_outcome;

/* An allreduce issued through the manager. */
struct ftc_manager_work {
    ftc_manager *m;
    ftc_work *work; /* NULL when it failed at once (rc) */
    int rc;
    ftc_tensor t;
    int op;
    int64_t divisor;
    bool waited, released;
    struct ftc_manager_work *next, *prev; /* m->works while unwaited */
};

/* Locks (each guards the fields listed under it below):
 *   mu       the round: phase, stop, round, qo, arrival, round_dl,
 *            round_start_ns, out, quorum_known, watch_primed, watch_epoch,
 *            watch_since, leader_joined, voted,
 *            replica_id, and state's list while registering; with cv.
 *   pg_mu    the process group slot: pg, pg_users, pg_quorum_id,
 *            pg_blamed_quorum_id, pg_members, pg_n, rdv_store, rdv_seq,
 *            rdv_why, lost, n_lost; with pg_cv.
 *   err_mu   the error latch: err_code, err_msg, err_quorum_id, killed,
 *            and the suspects.
 *   work_mu  the list of unwaited works (works).
 *   stats_mu stats.
 * Order: mu before err_mu (start_quorum clears the latch as it starts a
 * round); pg_mu before a store client's fd_lock (join_quorum_thread
 * cancels rdv_store: a flag and a shutdown(2), never blocking) and before
 * a process group's own lock (ftc__manager_note_pg_failure reads the
 * group's status and blame, which never block); no other nesting. A new one
 * keeps mu, pg_mu, err_mu, work_mu, stats_mu. No blocking call (network I/O,
 * ftc_pg_abort, a thread join, a work wait) runs under any of them; the one
 * wait is pg_cv's, which releases pg_mu. The atomics need no lock. Fields set
 * in create and read only afterwards (o, the strings, the endpoints) need none
 * either. */
struct ftc_manager {
    uint32_t magic;
    ftc_manager_opts o; /* strings point at the copies below */
    char lighthouse[FTC_LIGHTHOUSE_ADDR_MAX], job[FTC_LIGHTHOUSE_JOB_MAX];
    char base_id[FTC__MGR_BASE_ID_MAX + 1];
    char store_addr[FTC_HOST_MAX + 16], store_prefix[FTC__MGR_BASE_ID_MAX + 64];
    char host[FTC_HOST_MAX], token[FTC_HOST_MAX];
    char tls_cert[FTC__MGR_PATH_MAX], tls_key[FTC__MGR_PATH_MAX];
    char tls_ca[FTC__MGR_PATH_MAX];
    /* With a token: the group records are sealed with its key. */
    bool seal;
    uint8_t seal_key[FTC__AUTH_KEY];
    ftc_pg_opts pg_opts; /* backend points at pg_backend */
    char pg_backend[32]; /* a pg backend name is at most 31 characters */
    bool init_sync;

    ftc_store_client *store_conn; /* the group store */
    ftc_store_client *store;      /* its view under store_prefix */
    ftc_lighthouse_client *lh;
    ftc__heal_server *heal_srv;
    ftc__heal_client *heal_cli;
    ftc__heal_state state;
    uint8_t *staging; /* a healed state until wait_quorum copies it */
    /* ftc_manager_set_adopt (under mu; read by the round and the training
     * thread between steps), and the layout of the state being adopted:
     * its buffers point into staging. */
    ftc_manager_adopt_fn adopt_fn;
    void *adopt_user;
    ftc__heal_state adopted;
    /* ftc_manager_set_prepare (under mu), called by ftc__manager_prepare. */
    ftc_manager_prepare_fn prepare_fn;
    void *prepare_user;

    /* The id the lighthouse knows: the leader's from create, the other
     * ranks' from their first round. Under mu. */
    char replica_id[FTC__QUORUM_STR_MAX];

    /* The cross-replica process group, reachable by pushed aborts.
     *
     * A group is used outside pg_mu (ftc_pg_abort may block up to 1 s,
     * so it must not run under the lock) only while borrowed: the
     * borrower takes it from the slot and counts itself in pg_users
     * under pg_mu, unlocks, uses it, and gives it back (pg_give_back:
     * pg_users--, pg_cv broadcast at 0). A group is destroyed only after
     * ftc__manager_pg_take_out: under pg_mu it empties the slot (no new
     * borrower can find the group) and waits on pg_cv until pg_users is
     * 0 (every earlier borrower has returned it). pg_users counts borrows
     * of the group in the slot, or of the one being taken out: the slot
     * is refilled only by the thread that took the old group out, after
     * that wait. So no group is destroyed while a borrower uses it. The
     * quorum thread, the only one that replaces the group, uses its own
     * new group without borrowing it. */
    pthread_mutex_t pg_mu;
    pthread_cond_t pg_cv;
    int pg_users;
    ftc_pg *pg;
    int64_t pg_quorum_id;
    int64_t pg_blamed_quorum_id; /* whose failure was reported */
    char (*pg_members)[FTC__QUORUM_STR_MAX];
    size_t pg_n;
    /* The quorum that last left this group out as unreachable, and until
     * when (0: none); the quorum thread's only. Its next join waits until
     * shortly before then and reports whom of that quorum it cannot
     * reach. */
    ftc_lighthouse_quorum left_out_q;
    int64_t left_out_until_ns;
    /* The primary's store while a process group meets on it (destroy
     * and the watch cancel its calls), which build that is (rdv_seq),
     * and why the watch cancelled it ("" if it did not). */
    ftc_store_client *rdv_store;
    uint64_t rdv_seq;
    char rdv_why[FTC__MGR_MSG_MAX];
    /* Members lost recently (a ring): a process group installed after
     * the event still learns of it. Cleared when the lighthouse's epoch
     * changes. */
    struct {
        char id[FTC__QUORUM_STR_MAX];
        int64_t quorum_id;
    } lost[FTC__MGR_LOST_MAX];
    size_t n_lost;

    /* The error latch of the current step; killed is for good. An error
     * pushed about a process group (err_quorum_id, else -1) no longer
     * counts once the round replaced that group. */
    pthread_mutex_t err_mu;
    int err_code;
    char err_msg[FTC__MGR_MSG_MAX];
    int64_t err_quorum_id;
    bool killed;
    /* Replica groups this rank could not reach since its last round
     * (manager_suspects.c); under err_mu. */
    char suspects[FTC__QUORUM_SUSPECTS_MAX][FTC__QUORUM_STR_MAX];
    size_t n_suspects;

    /* The round: the training thread asks, the quorum thread answers. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ftc__manager_phase phase;
    bool stop;
    int64_t round;                /* rounds started; keys are r/<round> */
    ftc_manager_quorum_opts qo;   /* of the round in flight */
    ftc__manager_arrival arrival; /* what this rank reports in it */
    ftc__deadline round_dl;
    int64_t round_start_ns;
    ftc__manager_outcome out;
    bool quorum_known; /* a round got its quorum: the watch starts then */
    /* Where the job's events stood before the first round (the quorum
     * thread asks once): the watch starts from there. 0, 0: unknown. */
    bool watch_primed;
    uint32_t watch_epoch;
    uint64_t watch_since;
    bool leader_joined; /* the heartbeat thread starts then */
    bool voted;         /* the round in READY voted already */

    /* Committed state. The training thread writes; getters read. */
    _Atomic int64_t step, batches;
    _Atomic int64_t quorum_id, replica_rank, replica_world_size;
    _Atomic int64_t num_participants;
    atomic_bool participating, healing;
    atomic_bool finished;    /* ftc_manager_finish: the run reached its end */
    int64_t step0, batches0; /* at the round's start */
    int64_t commit_failures; /* in a row */
    /* A pushed abort hit a process group between steps: report a
     * failure in the next arrival, so that the lighthouse gives the next
     * quorum a new id (and every replica a new process group). */
    atomic_bool force_new_quorum;

    /* Allreduces not yet waited for. */
    pthread_mutex_t work_mu;
    ftc_manager_work *works;

    pthread_t quorum_thr, watch_thr, hb_thr;
    bool quorum_started, watch_started, hb_started;

    pthread_mutex_t stats_mu;
    ftc_manager_stats stats;
    /* For the lighthouse (the leader's heartbeats), under stats_mu: all
     * heal transfers' time, and the heal in progress (heal_from[0] !=
     * '\0'), whose bytes the fetch counts in heal_progress. */
    double heal_seconds_total;
    char heal_from[FTC_LIGHTHOUSE_STR_MAX];
    int64_t heal_started_wall_ms;
    ftc__heal_progress heal_progress;

    /* The launcher's event socket (FTC_EVENT_FD), or -1 (not ours: never
     * closed); the XXH3 of the registered state at the last committed
     * vote and the step it committed (-1: none). Training thread only. */
    int report_fd;
    uint64_t report_sum;
    int64_t report_steps;
};

/* Every environment variable the manager reads (docs/operations.md,
 * "Environment variables"), an index into what ftc__manager_env_read
 * (manager_env.c) fills. That function is the manager's only getenv: it
 * reads them all when called, NULL for those unset, and names them (in
 * this order) in one table. ftc_manager_opts_from_env parses them;
 * resolve_opts (manager.c) falls back to ADVERTISE_HOST, TOKEN and the
 * TLS ones. */
enum {
    FTC__MANAGER_ENV_LIGHTHOUSE,
    FTC__MANAGER_ENV_REPLICA_ID,
    FTC__MANAGER_ENV_STORE_ADDR,
    FTC__MANAGER_ENV_GROUP_SIZE,
    FTC__MANAGER_ENV_GROUP_RANK,
    FTC__MANAGER_ENV_JOB,
    FTC__MANAGER_ENV_STORE_PREFIX,
    FTC__MANAGER_ENV_MIN_REPLICA_SIZE,
    FTC__MANAGER_ENV_QUORUM_TIMEOUT_MS,
    FTC__MANAGER_ENV_TIMEOUT_MS,
    FTC__MANAGER_ENV_ADVERTISE_HOST,
    FTC__MANAGER_ENV_TOKEN,
    FTC__MANAGER_ENV_EVENT_FD,
    FTC__MANAGER_ENV_TLS_CERT,
    FTC__MANAGER_ENV_TLS_KEY,
    FTC__MANAGER_ENV_TLS_CA,
    FTC__MANAGER_ENV_INSECURE,
    FTC__MANAGER_ENV_COUNT
};
void ftc__manager_env_read(const char *values[FTC__MANAGER_ENV_COUNT]);

/* The error latch: keeps the first error of a step (any thread). */
/* Suspects (manager_suspects.c): replica_id could not be reached (each
 * once, at most FTC__QUORUM_SUSPECTS_MAX; a bad id is ignored); the
 * members at ranks of a group whose members were ids; the peers the
 * installed process group blamed, if it failed (takes pg_mu: call with no
 * lock held, and not during a round); and the report for an arrival,
 * which empties the list (FTC_ENOMEM keeps it). */
void ftc__manager_suspect(ftc_manager *m, const char *replica_id);
void ftc__manager_suspect_ranks(ftc_manager *m, const int *ranks, int n,
                                const char (*ids)[FTC__QUORUM_STR_MAX],
                                size_t n_ids);
void ftc__manager_note_pg_failure(ftc_manager *m);
/* Which of q's members (at most FTC__QUORUM_SUSPECTS_MAX, own_id
 * skipped) this host reaches, by TCP connects to their healing servers
 * until dl: the replica_ids of the silent ones go to silent (pointers
 * into q); returns how many. A refused connection counts as reached. */
size_t ftc__manager_probe(const ftc_lighthouse_quorum *q, const char *own_id,
                          ftc__deadline dl, const char **silent);
int ftc__manager_take_suspects(ftc_manager *m, ftc__manager_arrival *a);

void ftc__manager_latch(ftc_manager *m, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for an error that concerns only the process group of quorum
 * quorum_id (a pushed loss of one of its members). */
void ftc__manager_latch_for(ftc_manager *m, int64_t quorum_id, int code,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The group store key of round k: "ftc/r/<k>/<what>" or, with g >= 0,
 * "ftc/r/<k>/<what>/<g>" (docs/protocol.md, "Manager group keys"). */
void ftc__manager_key(char *buf, size_t cap, int64_t k, const char *what,
                      int g);
/* Waits until the "ftc/r/<k>/<what>/<g>" of every rank g >= from exists
 * and fetches them into vals[g] (vals: group_size entries, those below
 * from left alone; release with ftc_store_values_free), each unsealed
 * (its len the record's text; FTC_EAUTH naming the rank). */
int ftc__manager_gather(ftc_manager *m, int64_t k, const char *what,
                        size_t from, int64_t timeout_ms, ftc_store_value *vals);
/* Writes a group record under key, sealed with the job's token when there
 * is one (docs/protocol.md "Signed records"). */
int ftc__manager_put(ftc_manager *m, const char *key, const char *text,
                     size_t len, int64_t timeout_ms);
/* The text of a record read from key: 0 with *len its length, or
 * FTC_EAUTH when the manager has a token and the record is not sealed
 * with it for this group and key. */
int ftc__manager_unseal(const ftc_manager *m, const char *key, const void *rec,
                        size_t *len);
/* A group of one rank: its rounds and votes have nobody to tell, so
 * they skip the group store (11 store round trips a step). */
static inline bool ftc__manager_alone(const ftc_manager *m)
{
    return m->o.group_size == 1;
}
/* Milliseconds left of dl as a timeout argument (never: infinite). */
int64_t ftc__manager_left_ms(ftc__deadline dl);
/* dl plus the time the other ranks of the group still wait for a record
 * the leader writes at dl at the latest (its answer to the round, its
 * vote): 5 s. */
ftc__deadline ftc__manager_leader_grace(ftc__deadline dl);

/* Where each registered buffer receives a healed state (dest: state.n
 * pointers): its memory when heal_in_place and it is borrowed, else
 * m->staging (allocated here; *staged says whether anything goes there).
 * FTC_ENOMEM. */
int ftc__manager_heal_destinations(ftc_manager *m, bool heal_in_place,
                                   void **dest, bool *staged);
/* Runs the prepare function, if any, on this thread without mu held,
 * letting this thread (only) register inside it while a round is in
 * flight. 0, or FTC_ECANCELED when it returned non-zero (what names
 * the reading the state is prepared for). */
int ftc__manager_prepare(ftc_manager *m, const char *what);
/* The heal client's adopt hook (ftc__heal_fetch.adopt; user is the
 * manager): lays m->adopted out as meta says, in a new m->staging. */
int ftc__manager_heal_adopt_layout(void *user, const ftc__heal_meta *meta,
                                   const ftc__heal_state **layout,
                                   void *const **dest);
/* Applies a staged healed state on the training thread: copies the
 * borrowed buffers' bytes, calls each load callback (in registration
 * order, stopping at the first non-zero return: FTC_ECANCELED naming the
 * buffer), and frees the staging. */
int ftc__manager_heal_apply(ftc_manager *m, bool heal_in_place);

/* Aborts the process group (if any), any thread: borrowed, so the abort
 * runs without pg_mu held. */
void ftc__manager_abort_pg(ftc_manager *m);
/* Borrows the group in the slot (NULL when none; then nothing to give
 * back). Called with pg_mu held; use the group after unlocking. */
ftc_pg *ftc__manager_pg_borrow_locked(ftc_manager *m);
/* Gives a borrowed group back (takes pg_mu). */
void ftc__manager_pg_give_back(ftc_manager *m);
/* Aborts a group borrowed (or owned) by the caller; pg_mu not held. */
void ftc__manager_pg_abort_unlocked(ftc_pg *pg);
/* Empties the slot and waits until no borrower uses the group that was
 * in it; returns that group (the caller destroys it). Called with pg_mu
 * held, returns with it held (it is released during the wait). */
ftc_pg *ftc__manager_pg_take_out_locked(ftc_manager *m);

#ifdef FTC_TESTING
/* Called by ftc__manager_pg_abort_unlocked before each ftc_pg_abort
 * (NULL: none). Tests make aborts slow with it. */
extern void (*_Atomic ftc__manager_testing_before_abort)(void);
/* Called by the watch thread before its first call (NULL: none). Tests
 * hold the watch back with it. */
extern void (*_Atomic ftc__manager_testing_before_watch)(void);
#endif

/* Reports to the launcher (manager_report.c). open takes FTC_EVENT_FD's
 * value (NULL: none); the others do nothing without a valid one. step:
 * after each vote (a committed one also takes the state's checksum; only
 * group rank 0 sends); heal: after a healed state is adopted; result: in
 * destroy, the checksum taken at the last committed vote. */
void ftc__manager_report_open(ftc_manager *m, const char *fd_text);
void ftc__manager_report_step(ftc_manager *m, bool committed);
void ftc__manager_report_heal(ftc_manager *m, int64_t step, const char *from,
                              double ms);
void ftc__manager_report_result(ftc_manager *m);

/* Trace events (manager_trace.c, FTC_TRACE): a quorum round from t0_ns
 * with its outcome; a heal from t0_ns; a commit vote from t0_ns (0: not
 * tracing, as ftc__trace_clock returns). Nothing when not tracing. */
void ftc__manager_trace_round(const ftc_manager *m, int64_t round,
                              const ftc__manager_outcome *out, int64_t t0_ns);
void ftc__manager_trace_heal(const ftc_manager *m, int64_t t0_ns, int rc,
                             int64_t step, const char *from, uint64_t bytes);
void ftc__manager_trace_vote(const ftc_manager *m, int64_t t0_ns, int rc,
                             bool commit);

/* The quorum thread (manager_round.c). */
void *ftc__manager_quorum_main(void *arg);
/* The watch and heartbeat threads (manager_push.c). */
void *ftc__manager_watch_main(void *arg);
void *ftc__manager_heartbeat_main(void *arg);
/* Starts the heartbeat thread once (the leader, at its first join). */
void ftc__manager_start_heartbeat(ftc_manager *m);

/* Waits on m->cv until `until` or a signal; returns false once m->stop. */
bool ftc__manager_pause(ftc_manager *m, ftc__deadline until);

/* Adds to a counter of the stats. */
#define FTC_MGR_STAT(m, field, delta)                                          \
    do {                                                                       \
        pthread_mutex_lock(&(m)->stats_mu);                                    \
        (m)->stats.field += (delta);                                           \
        pthread_mutex_unlock(&(m)->stats_mu);                                  \
    } while (0)

#endif
