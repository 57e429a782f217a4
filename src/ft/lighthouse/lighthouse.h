/* Internals shared by the lighthouse's files: the server, its jobs, and the
 * requests that wait in a long-poll (docs/design-lighthouse.md). */
#ifndef FTC_FT_LIGHTHOUSE_H
#define FTC_FT_LIGHTHOUSE_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base_int.h"
#include "ft/http_admit.h"
#include "ft/http_tls.h"
#include "ft/http_util.h"
#include "ft/lighthouse/lighthouse_history.h"
#include "ft/lighthouse/lighthouse_replicas.h"
#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* An answer's bytes, shared by every request it answers (a quorum goes to
 * all its members) and released by the last response that sent it. */
typedef struct ftc__lighthouse_blob {
    atomic_size_t refs;
    size_t len;
    char data[];
} ftc__lighthouse_blob;

/* A new blob with the compact text of j; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_blob_json(const json_t *j);
/* A new blob with the live bytes of buf; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_blob_buf(const ftc__buf *buf);
ftc__lighthouse_blob *ftc__lighthouse_blob_ref(ftc__lighthouse_blob *b);
/* Drops one reference (NULL ok); an MHD free callback. */
void ftc__lighthouse_blob_unref(void *b);

typedef enum ftc__lighthouse_kind {
    FTC__LH_PLAIN = 0, /* answered in the handler */
    FTC__LH_JOIN,
    FTC__LH_WATCH,
    FTC__LH_REQ_KINDS
} ftc__lighthouse_kind;

/* Request latency histogram bounds, in seconds (Prometheus le). */
#define FTC__LH_REQ_BUCKETS 12
extern const double ftc__lighthouse_req_bounds[FTC__LH_REQ_BUCKETS];

typedef enum ftc__lighthouse_state {
    FTC__LH_READING = 0, /* headers and body arriving */
    FTC__LH_WAITING,     /* a long-poll in its job's list */
    FTC__LH_ANSWERED,    /* status and answer set */
} ftc__lighthouse_state;

struct ftc__lighthouse_job;

/* One HTTP request (MHD's per-request pointer). Once it is linked to a job
 * (kind JOIN or WATCH) its state and answer are guarded by job->mu, and it
 * is freed by the clock thread (ftc__lighthouse_clock_reap), never by MHD's
 * thread: the clock thread may still hold it from an epoll event. */
typedef struct ftc__lighthouse_req {
    ftc_lighthouse *lh;
    struct MHD_Connection *conn;
    ftc__buf body;
    bool refused; /* answered before its body arrived: the body is dropped */
    int64_t start_ms;
    int64_t start_ns; /* for the request latency metric */
    ftc__lighthouse_kind kind;
    ftc__lighthouse_state state;
    /* Counted in job->refs while set. Atomic because the clock thread reads
     * it to find which lock guards the rest, from an epoll event. */
    struct ftc__lighthouse_job *_Atomic job;
    char replica_id[FTC__QUORUM_STR_MAX]; /* "" for an anonymous watch */
    bool suspended;      /* MHD_suspend_connection was called */
    int fd;              /* in the clock's epoll set while >= 0 */
    int64_t deadline_ms; /* monotonic */
    uint64_t since;      /* WATCH */
    /* JOIN: the roster version the client holds (0: none); -1: it reads
     * full answers only. */
    int64_t roster;
    unsigned status;
    const char *content_type;
    ftc__lighthouse_blob *answer;
    struct ftc__lighthouse_req *prev, *next; /* the job's list while WAITING */
    struct ftc__lighthouse_req *resume_next; /* ftc__lighthouse_resume */
    struct ftc__lighthouse_req *done_next;   /* lh->done */
} ftc__lighthouse_req;

/* Suspended requests answered under a job's lock, resumed once it is
 * released (MHD is never called with a job lock held, but to suspend). */
typedef struct ftc__lighthouse_resume {
    ftc__lighthouse_req *head;
} ftc__lighthouse_resume;

void ftc__lighthouse_resume_all(ftc__lighthouse_resume *rs);

enum { FTC__LH_FULL = 1, FTC__LH_COMPACT = 2, FTC__LH_DELTA = 3 };

/* Join wait histogram bounds, in seconds (Prometheus le). */
#define FTC__LH_WAIT_BUCKETS 12
extern const double ftc__lighthouse_wait_bounds[FTC__LH_WAIT_BUCKETS];
/* Quorum id changes kept for status. */
#define FTC__LH_CHANGES 32

typedef struct ftc__lighthouse_change {
    int64_t quorum_id;
    ftc__quorum_id_change cause;
    size_t members;
    int64_t wall_ms;
} ftc__lighthouse_change;

typedef struct ftc__lighthouse_job {
    struct ftc__lighthouse_job *next; /* registry list */
    ftc_lighthouse *lh;
    char name[FTC_LIGHTHOUSE_JOB_MAX];
    pthread_mutex_t mu; /* everything below */
    ftc__quorum_state s;
    ftc__quorum_opts o;
    bool pinned;       /* declared: never deleted when idle */
    long refs;         /* requests pointing here */
    int64_t active_ms; /* last request */
    int64_t next_ms;   /* when the decision can next change */
    uint32_t epoch;    /* drawn at creation: this job's identity */
    /* Waiting long-polls, each list in deadline order (so the earliest is
     * the head: the clock's wake-up is O(1), not a scan per poke). */
    ftc__lighthouse_req *joins, *watches;
    ftc__lighthouse_req *joins_tail, *watches_tail;
    size_t n_joins, n_watches;
    /* Events: seq k is ring[k % ring_cap]; the last ring_n are kept. */
    json_t **ring;
    uint32_t ring_cap;
    size_t ring_n;
    uint64_t seq;
    /* The roster of the last quorum (ftc__quorum_same_roster) and its
     * version, (epoch << 32) | roster_seq: a join that holds it gets a
     * compact answer. The one before (old_version 0: none): a join that
     * holds that one gets a delta answer. */
    ftc__quorum roster;
    bool roster_kept; /* roster holds the copy (not lost to ENOMEM) */
    uint32_t roster_seq;
    ftc__quorum old_roster;
    int64_t old_version;
    /* lost[i]: member i of s.prev was reported lost (one event each). */
    bool *lost;
    size_t lost_n;
    int64_t lapse_due_ms; /* no member of s.prev can lapse before this */
    ftc__lighthouse_change changes[FTC__LH_CHANGES];
    uint64_t n_changes;
    /* Metrics. Indexes: ftc__quorum_id_change, ftc_lighthouse_lost_cause. */
    uint64_t quorums_total;
    /* Quorum answers sent and answer bodies built, by shape (index
     * FTC__LH_FULL, FTC__LH_COMPACT, FTC__LH_DELTA; 0 unused): bodies are built
     * at most once per shape and quorum, however many members get them. */
    uint64_t answers_total[4], bodies_total[4];
    uint64_t changes_total[4];
    uint64_t lost_total[4];
    /* Commits asked for (POST commit), index 1 granted, 2 refused. */
    uint64_t commits_total[4];
    uint64_t wait_buckets[FTC__LH_WAIT_BUCKETS];
    uint64_t wait_count;
    double wait_sum_s;
    /* Progress, failures and replica groups for the operator's view. */
    ftc__lh_history hist;
    ftc__lh_replicas reps;
    /* The mark as etcd holds it (an etcd leader's, lighthouse_marks.c):
     * stored_step -1 until first stored. */
    int64_t stored_step;
    bool stored_finished;
} ftc__lighthouse_job;

/* HTTP status codes counted for /metrics; the last slot is "other". */
#define FTC__LH_NCODES 13
extern const unsigned ftc__lighthouse_codes[FTC__LH_NCODES];

struct ftc_lighthouse {
    /* Options, fixed after create. */
    ftc__quorum_opts job_defaults;
    uint32_t max_jobs;
    size_t max_body_bytes;
    int64_t max_join_wait_ms;
    uint32_t event_ring;
    int64_t job_idle_ms;
    bool has_token, public_reads, keep_dropped;
    unsigned char token_hash[FTC__TOKEN_HASH_BYTES];
    ftc__http_tls tls;     /* none: plain HTTP */
    ftc__http_admit admit; /* who gets a connection (its own lock) */
    char address[FTC_HOST_MAX + 16];
    int port;
    struct MHD_Daemon *mhd;
    /* Registry: jobs, the requests to free, and the live long-polls.
     * Locks: mu guards jobs, n_jobs, done (with cv); each job's mu guards
     * that job (ftc__lighthouse_job). Order: lh->mu before a job's mu
     * (job_get returns the job locked after dropping lh->mu; the clock
     * thread walks the jobs under both); never two jobs' at once. Under
     * either only memory changes run: a suspended request is resumed
     * (MHD_resume_connection) after the job's lock is released, and the
     * daemon writes answers on its own threads. */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* n_polls reached 0 (destroy) */
    ftc__lighthouse_job *jobs;
    size_t n_jobs;
    ftc__lighthouse_req *done;
    atomic_long n_polls; /* long-polls not yet completed */
    /* The clock thread. */
    int epfd;
    ftc__event wake;
    pthread_t clock;
    bool clock_running;
    atomic_bool stopping;
    /* High availability (lighthouse_ha.c): the epochs new jobs take,
     * [epoch_next, epoch_end), under mu (both 0: each job draws one at
     * random), and the monotonic ms until which this lighthouse may form
     * quorums (0: always; a leader's lease in etcd otherwise). */
    uint32_t epoch_next, epoch_end;
    atomic_int_fast64_t lease_until_ms;
    /* An etcd leader's (lighthouse_marks.c), under mu: whether the jobs'
     * marks are kept in etcd, and the names of jobs forgotten since their
     * marks were last written (their records to delete). */
    bool keeps_marks;
    char (*forgotten)[FTC_LIGHTHOUSE_JOB_MAX];
    size_t n_forgotten, cap_forgotten;
    atomic_uint_fast64_t http[FTC__LH_NCODES];
    /* Request latency (arrival to answer) by ftc__lighthouse_kind. */
    atomic_uint_fast64_t req_buckets[FTC__LH_REQ_KINDS][FTC__LH_REQ_BUCKETS];
    atomic_uint_fast64_t req_count[FTC__LH_REQ_KINDS],
        req_sum_us[FTC__LH_REQ_KINDS];
};

/* ---- lighthouse.c: requests and responses */

/* ftc_lighthouse_create for an elected leader (lighthouse_ha.c): from
 * before it listens it forms no quorum once ftc__lighthouse_now_ms()
 * reaches lease_until_ms (0: a lone lighthouse, no bound) and creates no
 * job until ftc__lighthouse_give_epochs. */
int ftc__lighthouse_create_fenced(const ftc_lighthouse_opts *in,
                                  int64_t lease_until_ms, ftc_lighthouse **out);

/* opts (NULL: defaults) checked and with its defaults filled in, as
 * create does; FTC_EINVAL. Pointers are not copied. */
int ftc__lighthouse_resolve_opts(const ftc_lighthouse_opts *in,
                                 ftc_lighthouse_opts *o);

/* Queues status with answer (ownership of one reference passes) or, for a
 * suspended request later. MHD_NO if MHD refused. */
enum MHD_Result ftc__lighthouse_queue(ftc__lighthouse_req *r, unsigned status,
                                      const char *content_type,
                                      ftc__lighthouse_blob *answer);
/* Queues 200 with static bytes (never freed). */
enum MHD_Result ftc__lighthouse_queue_static(ftc__lighthouse_req *r,
                                             const char *content_type,
                                             const char *data, size_t len);
/* Queues j (not consumed) as JSON. */
enum MHD_Result ftc__lighthouse_queue_json(ftc__lighthouse_req *r,
                                           unsigned status, const json_t *j);
/* {"error": code, "detail": detail} with status. */
enum MHD_Result ftc__lighthouse_queue_error(ftc__lighthouse_req *r,
                                            unsigned status, const char *code,
                                            const char *detail);
/* The error for an FTC_E* code from a failed call, with ftc_last_error():
 * 400 FTC_EINVAL, 413 FTC_EMSGSIZE, 404 FTC_ENOENT, 409 FTC_ESTALE, 403
 * FTC_EAUTH, 503 FTC_ECLOSED, else 500. */
enum MHD_Result ftc__lighthouse_queue_ftc_error(ftc__lighthouse_req *r, int rc);
/* The blob {"error": code, "detail": detail}; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_error_blob(const char *code,
                                                 const char *detail);
/* Whether the request carries the configured token. */
bool ftc__lighthouse_has_token(const ftc_lighthouse *lh,
                               struct MHD_Connection *c);

/* ---- lighthouse_routes.c: the API */

/* Whether method+url needs the token (when one is configured). */
bool ftc__lighthouse_route_needs_token(const ftc_lighthouse *lh,
                                       const char *method, const char *url);
/* Serves a request whose body has arrived. */
enum MHD_Result ftc__lighthouse_route(ftc__lighthouse_req *r,
                                      const char *method, const char *url);

/* ---- lighthouse_job.c: jobs and their state */

/* Whether name is a valid job name. */
bool ftc__lighthouse_job_name_ok(const char *name);
/* Finds (or, with create, makes) a job and returns it locked. FTC_EINVAL
 * (bad name), FTC_ENOENT (absent, !create), FTC_EMSGSIZE (max_jobs),
 * FTC_ENOMEM. */
int ftc__lighthouse_job_get(ftc_lighthouse *lh, const char *name, bool create,
                            ftc__lighthouse_job **out);
void ftc__lighthouse_job_unlock(ftc__lighthouse_job *job);
void ftc__lighthouse_job_destroy(ftc__lighthouse_job *job);
/* An operator forgets a job (DELETE /v1/jobs/{job}): its quorums, its
 * committed step, that it finished; one that comes back gets a new epoch,
 * as after an idle deletion. FTC_EINVAL (bad name), FTC_ENOENT (no such
 * job), FTC_EEXIST (in use: a request of it waits, or a replica of it is
 * alive), FTC_EMISUSE (declared with --job: its options would be lost). */
int ftc__lighthouse_job_delete(ftc_lighthouse *lh, const char *name,
                               int64_t now);

/* With job->mu held. now is monotonic ms. */
int ftc__lighthouse_job_heartbeat(ftc__lighthouse_job *job,
                                  const char *replica_id, int64_t now,
                                  ftc__lighthouse_resume *rs);
/* replica_id's leader reported st (with its heartbeat). */
void ftc__lighthouse_job_report(ftc__lighthouse_job *job,
                                const char *replica_id,
                                const ftc_lighthouse_replica_stats *st);
/* Joins r's replica (m) and either answers r at once or suspends it until
 * a quorum with it forms or timeout_ms passes. */
int ftc__lighthouse_job_join(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                             const ftc__quorum_member *m, int64_t timeout_ms,
                             int64_t now, ftc__lighthouse_resume *rs);
/* Answers r with the events after since, or a reset, or suspends it. */
int ftc__lighthouse_job_watch(ftc__lighthouse_job *job, ftc__lighthouse_req *r,
                              bool has_epoch, uint32_t epoch, bool has_since,
                              uint64_t since, int64_t timeout_ms, int64_t now,
                              ftc__lighthouse_resume *rs);
/* FTC_ENOENT if the replica was not known. step: the steps it committed
 * (raises the job's committed step), or -1; finished: its run reached its
 * end (the job is finished at that step). */
int ftc__lighthouse_job_goodbye(ftc__lighthouse_job *job,
                                const char *replica_id, int64_t step,
                                bool finished, int64_t now,
                                ftc__lighthouse_resume *rs);
/* A member of quorum quorum_id asks to commit a step in it (step: its
 * step after the commit): granted (0) unless that quorum is over, the
 * replica is not in it, or this lighthouse reported it lost in it (then
 * FTC_ESTALE saying which; the others may have aborted the step and will
 * commit it again without it). Lapsed heartbeats are reported first. A
 * grant raises the job's committed step (ftc__quorum_commit). */
int ftc__lighthouse_job_commit(ftc__lighthouse_job *job, const char *replica_id,
                               int64_t quorum_id, int64_t step, int64_t now,
                               ftc__lighthouse_resume *rs);
/* FTC_ENOENT if the replica is not in the current quorum. */
int ftc__lighthouse_job_kill(ftc__lighthouse_job *job, const char *replica_id,
                             ftc__lighthouse_resume *rs);
/* Applies option fields of obj (checked as a whole) and ticks. */
int ftc__lighthouse_job_configure(ftc__lighthouse_job *job, const json_t *obj,
                                  int64_t now, ftc__lighthouse_resume *rs);
/* Ticks if the decision may have changed by now, answers expired
 * long-polls; the clock thread's work for one job. */
void ftc__lighthouse_job_service(ftc__lighthouse_job *job, int64_t now,
                                 ftc__lighthouse_resume *rs);
/* When ftc__lighthouse_job_service next has something to do (INT64_MAX: never).
 */
int64_t ftc__lighthouse_job_wake_ms(const ftc__lighthouse_job *job);
/* r's connection dropped while it waited. */
void ftc__lighthouse_job_dropped(ftc__lighthouse_job *job,
                                 ftc__lighthouse_req *r, int64_t now,
                                 ftc__lighthouse_resume *rs);
/* Answers every waiting request 503 (shutdown). */
void ftc__lighthouse_job_answer_all(ftc__lighthouse_job *job,
                                    ftc__lighthouse_resume *rs);
/* Unlinks r if it still waits (its connection ended: shutdown). */
void ftc__lighthouse_job_unlink(ftc__lighthouse_job *job,
                                ftc__lighthouse_req *r);
/* The answer {"epoch", "event_seq"}; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_job_ack(const ftc__lighthouse_job *job);

/* ---- lighthouse_ha.c: what a leader in etcd hands its lighthouse */

/* New jobs take their epochs from [first, first + count) from now on
 * (replacing what was left). */
void ftc__lighthouse_give_epochs(ftc_lighthouse *lh, uint32_t first,
                                 uint32_t count);
uint32_t ftc__lighthouse_epochs_left(ftc_lighthouse *lh);
/* The lease's clock: CLOCK_BOOTTIME in ms, which goes on while the
 * machine sleeps (as etcd's clock does elsewhere), unlike ftc__now_ms. */
int64_t ftc__lighthouse_now_ms(void);
/* Quorums form only before ftc__lighthouse_now_ms() reaches until_ms. */
void ftc__lighthouse_set_lease(ftc_lighthouse *lh, int64_t until_ms);
/* Whether it may decide now: read at the moment of the decision, never
 * from a time taken before a lock or a wait (the process may have been
 * frozen in between). */
bool ftc__lighthouse_may_decide(const ftc_lighthouse *lh);

/* ---- lighthouse_marks.c: the jobs' committed marks an etcd leader
 * keeps in etcd, so that the next leader holds laggards as this one did. */

/* A job's mark as stored: step -1 means the job was forgotten (its record
 * is to be deleted). */
typedef struct ftc__lighthouse_mark_rec {
    char job[FTC_LIGHTHOUSE_JOB_MAX];
    int64_t step;
    bool finished;
} ftc__lighthouse_mark_rec;

/* From now on the jobs' marks are kept (ftc__lighthouse_marks_to_store),
 * and every job of recs goes on from its stored mark: created now (or
 * found, if a request created it first) with ftc__quorum_inherit_mark.
 * After ftc__lighthouse_give_epochs. FTC_ECLOSED (no epoch left),
 * FTC_EMSGSIZE (max_jobs), FTC_ENOMEM. */
int ftc__lighthouse_inherit_marks(ftc_lighthouse *lh,
                                  const ftc__lighthouse_mark_rec *recs,
                                  size_t n);
/* Up to cap marks that differ from what etcd holds: forgotten jobs first,
 * then jobs whose mark changed. */
size_t ftc__lighthouse_marks_to_store(ftc_lighthouse *lh,
                                      ftc__lighthouse_mark_rec *out,
                                      size_t cap);
/* recs (from ftc__lighthouse_marks_to_store) are in etcd now. */
void ftc__lighthouse_marks_stored(ftc_lighthouse *lh,
                                  const ftc__lighthouse_mark_rec *recs,
                                  size_t n);
/* Unlinked job (lh->mu held): destroyed, and remembered as forgotten when
 * marks are kept. */
void ftc__lighthouse_job_forget(ftc_lighthouse *lh, ftc__lighthouse_job *job);

/* ---- lighthouse_clock.c: the clock thread */

int ftc__lighthouse_clock_start(ftc_lighthouse *lh);
void ftc__lighthouse_clock_stop(ftc_lighthouse *lh);
/* Closes the clock's descriptors, once no request thread can poke or
 * watch through them (after MHD_stop_daemon). */
void ftc__lighthouse_clock_close(ftc_lighthouse *lh);
/* Watches fd for a hang-up while r waits (EPOLLRDHUP only). */
void ftc__lighthouse_clock_watch_fd(ftc_lighthouse *lh, ftc__lighthouse_req *r);
/* Stops watching r's fd; before r's connection is resumed. */
void ftc__lighthouse_clock_unwatch_fd(ftc_lighthouse *lh,
                                      ftc__lighthouse_req *r);
/* Wakes the clock thread to recompute its timeout. */
void ftc__lighthouse_clock_poke(ftc_lighthouse *lh);
/* Hands a finished long-poll to the clock thread to free. */
void ftc__lighthouse_clock_retire(ftc_lighthouse *lh, ftc__lighthouse_req *r);
/* Frees retired requests (clock thread, or destroy once it stopped). */
void ftc__lighthouse_clock_reap(ftc_lighthouse *lh);
/* Frees a request and drops its job reference. */
void ftc__lighthouse_req_free(ftc__lighthouse_req *r);

/* ---- lighthouse_status.c: status and jobs list; lighthouse_metrics.c */

/* GET /v1/jobs/{job}/status of a locked job; NULL on FTC_ENOMEM. */
json_t *ftc__lighthouse_status_json(ftc__lighthouse_job *job, int64_t now,
                                    int64_t wall);
/* GET /v1/jobs; NULL on FTC_ENOMEM. */
json_t *ftc__lighthouse_jobs_json(ftc_lighthouse *lh, int64_t now);
/* The jobs in name order, with lh->mu held. NULL when there are none or on
 * FTC_ENOMEM (*n says which). */
ftc__lighthouse_job **ftc__lighthouse_sorted_jobs(ftc_lighthouse *lh,
                                                  size_t *n);
/* GET /metrics as Prometheus text; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_metrics(ftc_lighthouse *lh, int64_t now);

/* ---- lighthouse_page.c: the dashboard */

/* The page for GET / with a snapshot of job (NULL or "": the first) in its
 * tables; NULL on FTC_ENOMEM. */
ftc__lighthouse_blob *ftc__lighthouse_page(ftc_lighthouse *lh, const char *job);
/* Appends tmpl to out with the job cards of jobs (GET /v1/jobs) and the
 * headline and tables of status (a job's status JSON, or NULL) as HTML at
 * its marks. Pure, for tests. FTC_EINVAL if tmpl lacks the marks. */
int ftc__lighthouse_page_render(const char *tmpl, const json_t *jobs,
                                const json_t *status, ftc__buf *out);
/* The charting library the page loads (GET /assets/chart.min.js). */
const char *ftc__lighthouse_chart_js(size_t *len);

#endif
