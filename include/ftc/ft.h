/* ftc/ft.h: fault tolerance across replica groups. The lighthouse decides
 * which replica groups train each step together (a quorum) and pushes
 * membership changes; its client serves the manager and `ftc status`. The
 * manager (one per rank) runs each step's quorum, rebuilds the
 * cross-replica process group when the quorum changes, heals a replica
 * that is behind, and decides whether a step commits.
 *
 * The lighthouse speaks HTTP/JSON (docs/protocol.md, "Lighthouse HTTP API
 * v1"). Quorum rules are torchft's (docs/operations.md, "Quorum semantics
 * explained"); several jobs share one lighthouse, each with its own
 * membership, options and epoch. */
#ifndef FTC_FT_H
#define FTC_FT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftc/base.h"
#include "ftc/pg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of a replica_id, address or store_address, NUL included. */
#define FTC_LIGHTHOUSE_STR_MAX 256
/* Bytes of a reason text, NUL included. */
#define FTC_LIGHTHOUSE_REASON_MAX 320
/* Bytes of a job name, NUL included; names match [A-Za-z0-9._-]{1,64}. */
#define FTC_LIGHTHOUSE_JOB_MAX 65
/* torchft's lighthouse port. */
#define FTC_LIGHTHOUSE_DEFAULT_PORT 29510
/* The longest lighthouse address a client takes, NUL included: one, or a
 * highly available set's (at most 8, comma-separated). */
#define FTC_LIGHTHOUSE_ADDR_MAX 2048

/* ------------------------------------------------------------ lighthouse */

typedef struct ftc_lighthouse ftc_lighthouse;

/* Every limit on what clients send is a field here. ftc_lighthouse_opts_init
 * fills the defaults given ("Options structs" in ftc/base.h); a time field
 * also takes FTC_TIMEOUT_DEFAULT and max_body_bytes FTC_SIZE_DEFAULT (its
 * default). 0 in a time field means 0 (idle_connection_timeout_ms 0: no
 * idle limit); 0 in a count or size limit other than max_data_bytes (0:
 * members carry no data) is FTC_EINVAL, as is any out-of-range value. The
 * quorum options (min_replicas ... strict_shrink_only, max_replicas,
 * max_data_bytes, rollback_after_ms) are the defaults of each new job; a job
 * can change its own with PUT /v1/jobs/{job} or ftc_lighthouse_configure_job.
 */
typedef struct ftc_lighthouse_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* "host:port" to listen on; NULL: "[::]:29510" (every interface, IPv6
     * dual-stack). Port 0 picks a free port (ftc_lighthouse_address). */
    const char *bind;
    uint64_t min_replicas;        /* 1 */
    int64_t join_timeout_ms;      /* 10000 (torchft CLI: 60000) */
    int64_t heartbeat_timeout_ms; /* 500 (torchft: 5000) */
    bool strict_shrink_only;      /* false (see docs/decisions.md) */
    uint32_t max_jobs;            /* 64, at most 4096 */
    uint32_t max_replicas;        /* 4096 per job, at most 65536 */
    uint32_t max_data_bytes;      /* 65536 per member, at most 1 MiB */
    size_t max_body_bytes;        /* 131072 per request, at most 2 MiB */
    uint32_t max_connections;     /* 8192 */
    /* From one address that never sent the token; 256. With a token, a
     * quarter of max_connections is kept for the addresses that did. */
    uint32_t max_connections_per_ip;
    /* Closes a connection idle this long (not one waiting in a long-poll);
     * rounded up to whole seconds. 30000. */
    int64_t idle_connection_timeout_ms;
    int64_t max_join_wait_ms; /* cap on a join's timeout_ms; 3600000 */
    uint32_t event_ring;      /* events kept per job; 256, at most 65536 */
    int64_t job_idle_ms;      /* an unused job is deleted after; 600000 */
    /* Shared secret; NULL: none. With a token every request must carry
     * "Authorization: Bearer <token>" (a browser: Basic, the token as the
     * password) and the kill action exists. Copied. */
    const char *token;
    /* With a token: reads (status, metrics, the page) stay open to
     * anyone; what changes state still needs the token. */
    bool public_reads;
    /* false (default): a long-poll whose connection drops is the death of
     * its replica (--drop-is-death on). true: it only withdraws the
     * request; death is then found by the heartbeat timeout alone. */
    bool keep_dropped;
    /* TLS (docs/security.md): PEM files of the certificate (its chain) and
     * its key, both or neither, read at create; clients then reach it at
     * https://. NULL: plain HTTP. */
    const char *tls_cert, *tls_key;
    /* A quorum whose members are all below the job's committed step (the
     * highest step a quorum had or a leaving replica reported) would commit
     * those steps again: it forms only after no replica that has the step
     * was heard for this long, rolling the job back to the best step left.
     * 60000; 0: at once (torchft); INT64_MAX: never. A job option. */
    int64_t rollback_after_ms;
    /* Replica groups that cannot reach each other but all reach the
     * lighthouse (a partition between them) would fail every step
     * together: managers report whom their process group could not reach
     * (ftc_lighthouse_member.suspects), and the quorum leaves out the
     * fewest groups that end every reported pair, each for this long,
     * doubled each time it is let in and reported again (at most 64
     * times; forgotten after 4 times its last time out without trouble).
     * More than half of the healthy groups are
     * still needed to form a quorum. 1000; 0: reports are ignored
     * (torchft). A job option (exclude_ms). */
    int64_t exclude_ms;
} ftc_lighthouse_opts;

/* Fills the defaults above. */
FTC_API void ftc_lighthouse_opts_init(ftc_lighthouse_opts *opts);

/* Starts a lighthouse serving on its own threads (one HTTP thread, one
 * clock thread). opts may be NULL (all defaults) and is copied. Errors:
 * FTC_EINVAL (an option out of range, a bad bind address), FTC_ESYS (the
 * port is in use, ...), FTC_ENOMEM. On failure *out is NULL. */
FTC_API int ftc_lighthouse_create(const ftc_lighthouse_opts *opts,
                                  ftc_lighthouse **out);

/* Writes "host:port" as bound (the real port when 0 was asked) into buf.
 * FTC_EMSGSIZE if cap is too small (buf then holds ""). */
FTC_API int ftc_lighthouse_address(const ftc_lighthouse *lh, char *buf,
                                   size_t cap);

/* The bound port. */
FTC_API int ftc_lighthouse_port(const ftc_lighthouse *lh);

/* Declares a job up front from "NAME" or "NAME:key=value,key=value"
 * (keys: min_replicas, join_timeout_ms, heartbeat_timeout_ms,
 * strict_shrink_only, max_replicas, max_data_bytes, rollback_after_ms;
 * booleans true|false).
 * A declared job is never deleted for being idle. Creates the job or
 * changes its options. FTC_EINVAL (bad name, key or value; nothing
 * changed), FTC_EMSGSIZE (max_jobs reached), FTC_ENOMEM. Thread-safe. */
FTC_API int ftc_lighthouse_configure_job(ftc_lighthouse *lh, const char *spec);

/* Answers every pending request 503, stops the threads, closes every
 * connection and frees everything. NULL is a no-op. Not safe while another
 * thread calls into lh. */
FTC_API void ftc_lighthouse_destroy(ftc_lighthouse *lh);

/* ------------------------------------------- a highly available lighthouse */

/* Several lighthouse processes on different hosts, one serving at a time:
 * the one holding the leader key in etcd (docs/operations.md, "A
 * lighthouse that survives its host"). The others stand by without
 * listening, so clients given every address (the client takes a comma
 * list) find the leader. A new leader starts with no state (managers
 * rejoin at their next step, as after a lighthouse restart) and takes
 * quorum epochs above every earlier leader's, so quorum ids only grow. */
typedef struct ftc_lighthouse_ha ftc_lighthouse_ha;

typedef struct ftc_lighthouse_ha_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* etcd client URLs, "http://host:port" separated by commas; required.
     * Copied. */
    const char *etcd;
    /* Keys live under it: PREFIX/leader (the leader's name, attached to
     * its lease) and PREFIX/epochs (the last quorum epoch handed out).
     * One prefix per set of lighthouses; NULL: "ftc/lighthouse". Copied. */
    const char *prefix;
    /* What the leader key says while this one leads; NULL: its bind
     * address. Copied. */
    const char *name;
    /* The lease's TTL, 2000, rounded up to whole seconds (etcd's unit;
     * etcd raises it to its own minimum, 1.5 election timeouts). A leader
     * renews it every quarter and forms no quorum past the time its last
     * renewal was sent plus the TTL less a tenth; a standby takes over
     * once etcd has let it expire (up to 500 ms later: etcd's check). */
    int64_t lease_ms;
    int64_t poll_ms; /* a standby looks for an empty seat this often; 100 */
    /* Called on the election thread each time this one starts serving,
     * as it starts listening (declare jobs there: a client that comes
     * first creates the job with the defaults); NULL: none. */
    void (*on_lead)(ftc_lighthouse *lh, void *arg);
    void *on_lead_arg;
} ftc_lighthouse_ha_opts;

FTC_API void ftc_lighthouse_ha_opts_init(ftc_lighthouse_ha_opts *opts);

/* Starts standing for election; returns at once (etcd is reached on a
 * thread of its own, which serves with the options of opts when elected).
 * opts->bind must name a port (clients list it). Errors: FTC_EINVAL (an
 * option out of range, no etcd URL, port 0), FTC_ENOMEM. */
FTC_API int ftc_lighthouse_ha_create(const ftc_lighthouse_opts *opts,
                                     const ftc_lighthouse_ha_opts *ha,
                                     ftc_lighthouse_ha **out);

/* Whether it serves now; *term (may be NULL): the etcd revision at which
 * it took the leader key, larger for every later leader. */
FTC_API bool ftc_lighthouse_ha_leading(ftc_lighthouse_ha *h, int64_t *term);

/* Waits until it serves (leading true) or stands by. FTC_ETIMEDOUT. */
FTC_API int ftc_lighthouse_ha_wait(ftc_lighthouse_ha *h, bool leading,
                                   int64_t timeout_ms);

/* Stops serving and revokes its lease, so that a standby takes over at
 * once, or stops standing by; frees everything. NULL is a no-op. */
FTC_API void ftc_lighthouse_ha_destroy(ftc_lighthouse_ha *h);

/* ----------------------------------------------------------------- client */

typedef struct ftc_lighthouse_client ftc_lighthouse_client;

typedef struct ftc_lighthouse_client_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    const char *job;    /* NULL: "default"; copied */
    const char *token;  /* NULL: none; copied. See FTC_TOKEN in
                           docs/operations.md */
    /* What FTC_TIMEOUT_DEFAULT means for a call; 60000 (the timeout rule
     * of ftc/base.h; FTC_TIMEOUT_DEFAULT here: 60000). */
    int64_t timeout_ms;
    /* Retry of unreachable lighthouses (refused, reset, 503): exponential
     * backoff with jitter from retry_initial_ms (50, >= 1) to
     * retry_max_ms (1000, >= retry_initial_ms), until the call's
     * deadline. */
    int64_t retry_initial_ms;
    int64_t retry_max_ms;
    size_t max_response_bytes; /* 64 MiB; FTC_SIZE_DEFAULT; 0: EINVAL */
    /* With an https:// address: a PEM file of the CA (or the lighthouse's
     * own self-signed certificate: pinning it) the lighthouse's
     * certificate must chain to; NULL: the system's CAs. Copied. */
    const char *tls_ca;
    /* Allows sending the token in clear text (http://) to a host that is
     * not this one; otherwise create fails with FTC_EINVAL. */
    bool insecure;
} ftc_lighthouse_client_opts;

FTC_API void ftc_lighthouse_client_opts_init(ftc_lighthouse_client_opts *opts);

/* A client of the lighthouse at addr ("host:port", "[v6]:port", or an
 * "http://host:port" or "https://host:port" URL). Connects lazily: creating one
 * never blocks. Errors: FTC_EINVAL (bad address or job name), FTC_ENOMEM.
 *
 * Thread-safety: one client may be used by many threads at once; each call
 * runs on its own connection (kept alive and reused by later calls), so a
 * manager can heartbeat, join and watch on three threads with one client.
 * Every call takes timeout_ms (the timeout rule of ftc/base.h: a bad one
 * is FTC_EINVAL before anything is sent) and returns by then; while the
 * lighthouse is unreachable (restarting) a call retries with backoff until
 * then. */
FTC_API int ftc_lighthouse_client_create(const char *addr,
                                         const ftc_lighthouse_client_opts *opts,
                                         ftc_lighthouse_client **out);

/* Closes every connection and frees the client. NULL is a no-op. Not safe
 * while another thread uses the client. */
FTC_API void ftc_lighthouse_client_destroy(ftc_lighthouse_client *client);

/* Makes every call in progress, and every later call, return FTC_ECANCELED
 * at once (a pending long-poll's connection is closed), until
 * ftc_lighthouse_client_clear_abort. Safe from any thread. Sticky, so that
 * a thread cannot miss an abort by entering a call just after it. */
FTC_API void ftc_lighthouse_client_abort(ftc_lighthouse_client *client);
FTC_API void ftc_lighthouse_client_clear_abort(ftc_lighthouse_client *client);

/* One replica group as it joins (torchft QuorumMember). */
typedef struct ftc_lighthouse_member {
    char replica_id[FTC_LIGHTHOUSE_STR_MAX];    /* unique, non-empty */
    char address[FTC_LIGHTHOUSE_STR_MAX];       /* its manager (healing) */
    char store_address[FTC_LIGHTHOUSE_STR_MAX]; /* its store "host:port" */
    int64_t step;                               /* committed steps, >= 0 */
    uint64_t world_size;                        /* ranks in the group */
    bool shrink_only;        /* asks that no new member be admitted */
    int64_t commit_failures; /* failed commits since the last success */
    /* Optional JSON text (any JSON value), NULL for none. Borrowed in a
     * request; owned by the result in an answer. */
    const char *data;
    /* A request only (answers carry none): the replica_ids of the groups
     * this one could not reach in its last step (its process group blamed
     * them), at most 256, borrowed; see ftc_lighthouse_opts.exclude_ms. */
    const char *const *suspects;
    size_t n_suspects;
} ftc_lighthouse_member;

/* A decided quorum: members sorted by replica_id (their order gives the
 * replica ranks). quorum_id = (epoch << 32) | counter; compare with ==. */
typedef struct ftc_lighthouse_quorum {
    int64_t quorum_id;
    int64_t created_wall_ms; /* Unix time at the lighthouse */
    size_t n_members;
    ftc_lighthouse_member *members;
} ftc_lighthouse_quorum;

/* What every answer says: the job's epoch (a changed epoch means the
 * lighthouse restarted or the job was recreated: every quorum of the old
 * one is gone) and its last event's sequence number. */
typedef struct ftc_lighthouse_ack {
    uint32_t epoch;
    uint64_t event_seq;
} ftc_lighthouse_ack;

/* Records a heartbeat of replica_id. out may be NULL. Errors: FTC_EINVAL
 * (bad id), FTC_EAUTH, FTC_EMSGSIZE (the job's table is full),
 * FTC_ETIMEDOUT (unreachable until the deadline), FTC_ECANCELED,
 * FTC_EPROTO (not a lighthouse answer). */
FTC_API int ftc_lighthouse_client_heartbeat(ftc_lighthouse_client *client,
                                            const char *replica_id,
                                            int64_t timeout_ms,
                                            ftc_lighthouse_ack *out);

/* What a replica group reports of itself with its heartbeats, for the
 * lighthouse's per-replica view (status JSON, /metrics). Counters are
 * this incarnation's, from its start; the lighthouse adds up a group's
 * incarnations. */
typedef struct ftc_lighthouse_replica_stats {
    int64_t heals;        /* states fetched from other replicas and applied */
    int64_t heal_bytes;   /* bytes those heals received */
    double heal_seconds;  /* time those transfers took */
    int64_t served_bytes; /* bytes its heal server sent to healers */
    /* A heal in progress: healing_from[0] != '\0' (the source's
     * replica_id); bytes received so far of healing_total_bytes (0 until
     * the source's metadata is in); Unix ms when the fetch started. */
    char healing_from[FTC_LIGHTHOUSE_STR_MAX];
    int64_t healing_bytes, healing_total_bytes, healing_started_wall_ms;
} ftc_lighthouse_replica_stats;

/* A heartbeat of replica_id that carries its stats (every field >= 0,
 * heal_seconds finite); errors as ftc_lighthouse_client_heartbeat, and
 * FTC_EINVAL for bad stats. */
FTC_API int
ftc_lighthouse_client_report(ftc_lighthouse_client *client,
                             const char *replica_id,
                             const ftc_lighthouse_replica_stats *stats,
                             int64_t timeout_ms, ftc_lighthouse_ack *out);

typedef struct ftc_lighthouse_join_result {
    uint32_t epoch;
    /* When the call returned 0; with left_out, the quorum that formed
     * without this member. */
    ftc_lighthouse_quorum quorum;
    /* FTC_ETIMEDOUT at once: the quorum that formed left this member out
     * for out_for_ms, because the others reported it unreachable
     * (ftc_lighthouse_opts.exclude_ms). Its manager checks whom it can
     * reach of quorum's members and reports the rest with its next join
     * (ftc_lighthouse_member.suspects). */
    bool left_out;
    int64_t out_for_ms;
    /* The lighthouse's reason: why the quorum formed, or (FTC_ETIMEDOUT)
     * why none had formed at the deadline; "" if it never answered. */
    char reason[FTC_LIGHTHOUSE_REASON_MAX];
} ftc_lighthouse_join_result;

/* Asks to join the next quorum and waits (long-poll) until one that
 * includes member forms. member is borrowed for the call. *out is always
 * initialised; release it with ftc_lighthouse_join_result_fini. Errors:
 * FTC_ETIMEDOUT (no quorum by the deadline: out->reason says why),
 * FTC_ESTALE (superseded by a newer join of the same replica_id),
 * FTC_EFINISHED (the job finished at a step above member's: nothing is
 * left for it to train), FTC_EINVAL (bad member, data not JSON),
 * FTC_EMSGSIZE, FTC_EAUTH, FTC_ECANCELED, FTC_EPROTO. */
FTC_API int ftc_lighthouse_client_quorum(ftc_lighthouse_client *client,
                                         const ftc_lighthouse_member *member,
                                         int64_t timeout_ms,
                                         ftc_lighthouse_join_result *out);
FTC_API void ftc_lighthouse_join_result_fini(ftc_lighthouse_join_result *r);

typedef enum ftc_lighthouse_event_kind {
    FTC_LIGHTHOUSE_EVENT_QUORUM = 1,      /* a quorum with a new id formed */
    FTC_LIGHTHOUSE_EVENT_MEMBER_LOST = 2, /* a replica died or left */
    FTC_LIGHTHOUSE_EVENT_KILL = 3,        /* an operator killed a replica */
} ftc_lighthouse_event_kind;

typedef enum ftc_lighthouse_lost_cause {
    FTC_LIGHTHOUSE_LOST_DISCONNECT = 1, /* its long-poll connection dropped */
    FTC_LIGHTHOUSE_LOST_HEARTBEAT = 2,  /* its heartbeat timed out */
    FTC_LIGHTHOUSE_LOST_GOODBYE = 3,    /* it said goodbye */
} ftc_lighthouse_lost_cause;

typedef struct ftc_lighthouse_event {
    uint64_t seq;
    ftc_lighthouse_event_kind kind;
    /* MEMBER_LOST and KILL: the replica concerned. */
    char replica_id[FTC_LIGHTHOUSE_STR_MAX];
    ftc_lighthouse_lost_cause cause; /* MEMBER_LOST */
    /* MEMBER_LOST: whether it was a member of the current quorum (only
     * then must the survivors abort). */
    bool in_quorum;
    /* QUORUM: the new id; MEMBER_LOST and KILL: the current one. */
    int64_t quorum_id;
    /* QUORUM: its members in rank order; owned. */
    size_t n_replica_ids;
    char (*replica_ids)[FTC_LIGHTHOUSE_STR_MAX];
} ftc_lighthouse_event;

typedef struct ftc_lighthouse_watch_result {
    uint32_t epoch;
    uint64_t event_seq; /* pass as `since` to the next watch */
    /* The caller's epoch or since did not match (restart, or further
     * behind than the lighthouse keeps events): events is empty and quorum
     * (if has_quorum) is the current one. */
    bool reset;
    size_t n_events;
    ftc_lighthouse_event *events; /* oldest first; owned */
    bool has_quorum;
    ftc_lighthouse_quorum quorum;
} ftc_lighthouse_watch_result;

/* Waits (long-poll) for the job's events after `since`, at most
 * timeout_ms, then returns 0 with none. Returns at once with reset set if
 * epoch is not the job's (0 when unknown: a first watch learns the epoch
 * and event_seq this way). A replica_id (NULL for none) makes the pending
 * watch that replica's presence: if its connection drops, the lighthouse
 * declares the replica lost (member_lost, cause disconnect) and tells
 * every other watcher at once. *out is always initialised; release with
 * ftc_lighthouse_watch_result_fini. Errors as for join (FTC_ESTALE: a newer
 * watch of the same replica_id took over). */
FTC_API int ftc_lighthouse_client_watch(ftc_lighthouse_client *client,
                                        const char *replica_id, uint32_t epoch,
                                        uint64_t since, int64_t timeout_ms,
                                        ftc_lighthouse_watch_result *out);
FTC_API void ftc_lighthouse_watch_result_fini(ftc_lighthouse_watch_result *r);

/* Tells the lighthouse replica_id is shutting down cleanly: it is
 * forgotten at once and every watcher gets member_lost (cause goodbye).
 * step: the steps it committed, which the job's committed step (no quorum
 * forms below it, docs/protocol.md) then counts; -1 if not known.
 * finished: its run reached its end, so the job is finished at that step
 * and later joins below it are refused (FTC_EFINISHED). out may be NULL.
 * FTC_ENOENT if the lighthouse did not know it. */
FTC_API int ftc_lighthouse_client_goodbye(ftc_lighthouse_client *client,
                                          const char *replica_id, int64_t step,
                                          bool finished, int64_t timeout_ms,
                                          ftc_lighthouse_ack *out);

/* Asks whether replica_id, a member of quorum quorum_id, may commit a
 * step in it; step: its step once that commit counts. 0: granted, and
 * the job's committed step rises to step (no quorum of replicas below it
 * forms while this replica is heard). FTC_ESTALE: refused, do not commit
 * — the quorum is over, the replica is not in it, or the lighthouse
 * reported it lost in it (the others may have aborted the step and will
 * commit it again without it). Any other error (the lighthouse
 * unreachable, or one that is not leading: FTC_EPEER) is no grant
 * either. The manager's group leader asks before each commit
 * (docs/protocol.md, "commit"). */
FTC_API int ftc_lighthouse_client_commit(ftc_lighthouse_client *client,
                                         const char *replica_id,
                                         int64_t quorum_id, int64_t step,
                                         int64_t timeout_ms);

/* The status JSON of job (NULL: the list of every job, GET /v1/jobs) as a
 * NUL-terminated text the caller releases with ftc_free. FTC_ENOENT if the
 * job does not exist. Formats: docs/protocol.md. */
FTC_API int ftc_lighthouse_client_status(ftc_lighthouse_client *client,
                                         const char *job, int64_t timeout_ms,
                                         char **json /* OUT */);

/* Frees what a result holds (NULL ok); the struct can be reused. */
FTC_API void ftc_lighthouse_quorum_fini(ftc_lighthouse_quorum *q);

/* ---------------------------------------------------------------- manager
 *
 * One manager per rank of a replica group (group rank 0 is the group's
 * leader). Each training step:
 *
 *   ftc_manager_start_quorum(m, NULL);    returns at once; the quorum runs
 *   ... forward pass ...                  on the manager's thread
 *   ftc_manager_allreduce(m, &grads, FTC_OP_AVG, &w, t);  (waits the quorum)
 *   ftc_manager_work_wait(w, t); ftc_manager_work_release(w);
 *   ftc_manager_should_commit(m, &commit, t);
 *   if (commit) optimizer_step();
 *
 * The quorum: every rank of the group writes its arrival (with its step)
 * to the group's store; the leader, once all arrived, asks the lighthouse
 * to join the next quorum and writes the answer (or the failure) back to
 * the store, where every rank reads it. When the quorum id changed, each
 * rank rebuilds its cross-replica process group (its group rank's peers in
 * the other replica groups) on the primary's store. A replica whose step is
 * behind the quorum's max_step heals: it pulls the registered state from
 * up-to-date replicas over HTTP, striped across several of them, each chunk
 * checked by its XXH3 checksum. The leader heartbeats the lighthouse every
 * heartbeat_interval_ms from its first join; every rank keeps a watch open
 * on the lighthouse, so a pushed membership change (a member of this
 * quorum lost, or this replica killed) aborts the rank's in-flight
 * collectives at once and makes the step vote no.
 *
 * Errors of collectives, of healing and pushed aborts are latched (see
 * ftc_manager_errored), never returned from the training calls they
 * happened under: the step then votes no. should_commit is an AND vote of
 * every rank of the group, carrying the step; on commit the step advances
 * by one, otherwise the group keeps its step and heals next time if the
 * others moved on. docs/architecture.md walks through one step;
 * docs/protocol.md has the group store keys and the healing format.
 *
 * Threads: a manager runs a quorum thread, a watch thread, the leader's
 * heartbeat thread, its healing server's threads, and its process group's.
 * The calls below are made from one training thread, except those marked
 * "any thread". Destroy must not race with any other call. */

typedef struct ftc_manager ftc_manager;
typedef struct ftc_manager_work ftc_manager_work;

/* How many replicas average together (torchft WorldSizeMode). */
typedef enum ftc_world_size_mode {
    /* Every up-to-date replica of the quorum participates. */
    FTC_WORLD_DYNAMIC = 0,
    /* At most min_replica_size participate; up-to-date replicas beyond
     * that are spares: they run the step on zeros and stay healed, ready
     * to replace a lost participant. */
    FTC_WORLD_FIXED_WITH_SPARES = 1,
} ftc_world_size_mode;

/* max_retries value: the first failed commit is already an error. */
#define FTC_MANAGER_NO_RETRY ((int64_t)-1)

/* Options of a manager. ftc_manager_opts_init fills the defaults given
 * here ("Options structs" in ftc/base.h). The timeouts follow the timeout
 * rule of ftc/base.h (FTC_TIMEOUT_DEFAULT: the default given here; 0 means
 * 0); heal_lend_ms also takes FTC_TIMEOUT_DEFAULT, heal_chunk_bytes
 * FTC_SIZE_DEFAULT. 0 in a count, interval or size (group_size,
 * min_replica_size, heartbeat_interval_ms, heal_*) is FTC_EINVAL; heal_port
 * 0 is an ephemeral port and max_retries 0 unlimited. Every call below
 * that takes timeout_ms checks it by that rule first (FTC_EINVAL, nothing
 * done). Strings are copied. */
typedef struct ftc_manager_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* The lighthouse, "host:port" (or an http:// URL). Required. */
    const char *lighthouse;
    const char *job; /* the lighthouse job; NULL: "default" */
    /* The replica group's name, the same on every rank of the group and
     * across restarts (e.g. "replica_1"). The leader appends ":" and 8
     * random hex digits per incarnation, so a restarted group is a new
     * member (as torchft's uuid): ftc_manager_replica_id() returns it.
     * Required; at most 200 bytes, no ':'. */
    const char *replica_id;
    int group_rank; /* 0 .. group_size - 1; rank 0 leads */
    int group_size; /* ranks in the replica group; 1 */
    /* The replica group's key-value store "host:port", shared by its
     * ranks; it is also where the cross-replica process groups of this
     * replica meet when it is a primary, so other replica groups must
     * reach it at this address. Required. */
    const char *store_addr;
    /* Prefix of every key this incarnation of the group writes to its
     * store; it must differ between incarnations (the launcher's
     * FTC_STORE_PREFIX). NULL: replica_id. */
    const char *store_prefix;
    /* A step commits only with at least this many participants; in
     * FIXED_WITH_SPARES also the number of participants. 1. */
    int64_t min_replica_size;
    int world_size_mode; /* ftc_world_size_mode */
    /* Collectives, votes and group store calls (FTC_TIMEOUT_DEFAULT of
     * wait and should_commit); 60000. */
    int64_t timeout_ms;
    /* A quorum round: the lighthouse's answer and the healing transfer;
     * 60000. When it passes, the round fails on every rank with
     * FTC_ETIMEDOUT. */
    int64_t quorum_timeout_ms;
    /* Store connections and process-group rendezvous; 60000. */
    int64_t connect_timeout_ms;
    int64_t heartbeat_interval_ms; /* 100 */
    /* Failed commits in a row tolerated: one more makes should_commit
     * fail with FTC_EPEER (torchft max_retries). 0: unlimited;
     * FTC_MANAGER_NO_RETRY: none. */
    int64_t max_retries;
    /* torchft init_sync (default on): at step 0 every replica but the
     * primary heals from it, so all start from identical state. Turn it
     * off only when every replica initialises identically. */
    bool skip_init_sync;
    /* The address this rank's healing server binds to and advertises to
     * the other replicas: an explicit IP (or name) on the network the
     * replicas share, never guessed from the hostname (torchft #329).
     * NULL: the environment variable FTC_ADVERTISE_HOST, else 127.0.0.1.
     * When given (either way) it is the process group's host too, unless
     * pg_opts sets one; otherwise the process group keeps its default. */
    const char *advertise_host;
    int heal_port; /* 0: ephemeral */
    /* Up-to-date replicas a healing rank pulls from at once, chunks
     * striped across them; 2. */
    int heal_sources;
    int heal_streams;        /* transfers in flight while healing; 4 */
    size_t heal_chunk_bytes; /* 4 MiB */
    /* Threads of the healing server, and threads a healing rank receives
     * on (at most heal_streams, 8); 2. */
    int heal_threads;
    /* Shared secret for the lighthouse, healing and process-group
     * connections; NULL: the environment variable FTC_TOKEN, else none. */
    const char *token;
    /* Options of the cross-replica process group (algorithms, streams,
     * buffers); NULL: defaults. The manager sets its epoch (the quorum
     * id), timeouts and, unless given, host. Copied. */
    const ftc_pg_opts *pg_opts;
    /* An up-to-date rank serves the replicas that heal from it straight
     * from its registered buffers (no copy), and its quorum round lasts
     * until every one of them is done (they say so; a lost one counts as
     * done). After heal_lend_ms it copies the state for those still at
     * work and goes on; answers still sending from the buffers get as
     * long again, then are cut. 2000. */
    int64_t heal_lend_ms;
    /* TLS of the healing server (docs/security.md): PEM files of this
     * host's certificate and its key, both or neither; the server then
     * speaks https and advertises so. NULL: FTC_TLS_CERT / FTC_TLS_KEY,
     * else plain HTTP. */
    const char *tls_cert, *tls_key;
    /* What the lighthouse's and the healing sources' certificates must
     * chain to (a CA, or the one self-signed certificate of the job:
     * pinning it). NULL: FTC_TLS_CA, else the system's CAs. */
    const char *tls_ca;
    /* Lets the token go in clear text (http://) to the lighthouse or a
     * healing source on another host; otherwise such a call fails with
     * FTC_EINVAL. false: FTC_INSECURE=1 sets it. */
    bool insecure;
} ftc_manager_opts;

FTC_API void ftc_manager_opts_init(ftc_manager_opts *opts);

/* Fills opts from the environment of a rank started by `ftc run`
 * (docs/operations.md, "Launcher contract"): FTC_LIGHTHOUSE, FTC_JOB,
 * FTC_REPLICA_ID, FTC_GROUP_RANK, FTC_GROUP_SIZE, FTC_STORE_ADDR,
 * FTC_STORE_PREFIX; and, when set, FTC_MIN_REPLICA_SIZE,
 * FTC_QUORUM_TIMEOUT_MS, FTC_TIMEOUT_MS, FTC_ADVERTISE_HOST, FTC_TOKEN.
 * Other fields are left as they are (call ftc_manager_opts_init first).
 * The strings point into the environment: valid until it changes.
 * FTC_EINVAL names a missing required variable or a malformed value; opts
 * is then unchanged. */
FTC_API int ftc_manager_opts_from_env(ftc_manager_opts *opts);

/* Creates this rank's manager: connects to the group's store (up to
 * connect_timeout_ms) and starts the healing server and the manager's
 * threads. Neither talks to the lighthouse nor waits for the other ranks
 * (the first start_quorum does). Errors: FTC_EINVAL (an option, message
 * names it), FTC_ETIMEDOUT (store unreachable), FTC_ESYS (healing
 * address), FTC_ENOMEM. On failure *out is NULL. */
FTC_API int ftc_manager_create(const ftc_manager_opts *opts, ftc_manager **out);

/* Stops the threads (a quorum in progress is abandoned), tells the
 * lighthouse this replica leaves with the steps it committed (the leader,
 * bounded by 1 s), destroys the process group and frees everything. Works
 * not yet released are released. NULL is a no-op. */
FTC_API void ftc_manager_destroy(ftc_manager *m);

/* The trainer reached the end of its run (its last step committed): the
 * goodbye that ftc_manager_destroy sends then says the job finished at
 * this step, and the lighthouse refuses later joins below it
 * (the quorum fails FTC_EFINISHED, "the job finished at step
 * S") instead of letting a replica that missed the end train those steps
 * again alone (docs/protocol.md, "The job's committed step"). Call it on
 * every rank or on group rank 0; FTC_EMISUSE for a bad handle. */
FTC_API int ftc_manager_finish(ftc_manager *m);

/* Registers a buffer of the state a healing replica receives: name
 * (1..255 printable ASCII characters, unique), dtype (FTC_DTYPE_*), shape
 * (ndim 0..8 dimensions; ndim 0 is one element) and the memory, borrowed
 * until the manager is destroyed. Every replica must register the same
 * buffers in the same order (healing checks names, dtypes and shapes).
 * The manager reads the buffers inside a quorum round (to serve healing
 * replicas from them) and writes them when this replica heals; see
 * start_quorum for when.
 * Call between steps (FTC_EMISUSE while a quorum is in flight). Errors:
 * FTC_EINVAL, FTC_EEXIST (name taken), FTC_ENOMEM. */
FTC_API int ftc_manager_register(ftc_manager *m, const char *name, int dtype,
                                 const int64_t *shape, int ndim, void *data);

/* Copies the buffer's current bytes (exactly `bytes`) into dst; 0 on
 * success. */
typedef int (*ftc_manager_save_fn)(void *user, void *dst, size_t bytes);
/* Adopts src (exactly `bytes`) as the buffer's state; 0 on success. src
 * is valid only during the call. */
typedef int (*ftc_manager_load_fn)(void *user, const void *src, size_t bytes);

/* A buffer the manager does not hold, reached through its owner's
 * callbacks (torchft's state_dict / load_state_dict pair). */
typedef struct ftc_manager_state_cb {
    ftc_manager_save_fn save; /* required */
    ftc_manager_load_fn load; /* required */
    void *user;               /* passed to both */
} ftc_manager_state_cb;

/* Registers a buffer of the state as ftc_manager_register does (same
 * names, dtypes, shapes and order rules; the two kinds mix freely), but
 * through callbacks instead of borrowed memory. *cb is copied; user must
 * stay valid until the manager is destroyed. A replica cannot tell how a
 * peer registered a buffer: the healing transfer (format, chunks,
 * checksums, striping) is the same.
 *
 * save runs on the manager's quorum thread, inside a round in which this
 * rank serves a healing replica (never in other rounds; once per buffer
 * and round, in registration order, after the quorum is decided and
 * before the first byte is served), into private memory that the healing
 * server then serves: the caller must not write the buffer between
 * start_quorum and the return of wait_quorum (the contract of borrowed
 * buffers), and may read it. A non-zero return: this rank serves nothing
 * in this round and answers the healers at once that it cannot (HTTP
 * 410); a healer then takes the state from its other sources or, with
 * none left, its step votes no (latched FTC_EPEER) and it heals again in
 * the next round. This rank's own step is not affected.
 *
 * load runs on the caller's thread, when this replica healed in a round,
 * inside the first call that takes the round over (wait_quorum, or the
 * allreduce or should_commit that waits for it), once per buffer in
 * registration order, with the healed bytes; heal_in_place does not apply
 * to these buffers. A non-zero return stops there (the state is then part
 * healed, part not), latches FTC_ECANCELED naming the buffer, and puts
 * current_step back to where it was before the round: the step votes no
 * and the next round heals again. Neither callback may call into the
 * manager. A buffer of 0 bytes has nothing to save or load: its callbacks
 * never run.
 *
 * Errors: FTC_EINVAL (cb, save or load NULL; as register), FTC_EEXIST,
 * FTC_EMISUSE (a round in flight), FTC_ENOMEM. */
FTC_API int ftc_manager_register_cb(ftc_manager *m, const char *name, int dtype,
                                    const int64_t *shape, int ndim,
                                    const ftc_manager_state_cb *cb);

/* One buffer of a healed state as its source serves it. */
typedef struct ftc_manager_buffer_view {
    const char *name;
    int dtype; /* FTC_DTYPE_* */
    int ndim;
    const int64_t *shape; /* ndim dimensions */
    const void *data;     /* nbytes bytes */
    size_t nbytes;
} ftc_manager_buffer_view;

/* Takes over a healed state whose layout came with it: n buffers in the
 * source's registration order, valid only during the call. 0 on
 * success. */
typedef int (*ftc_manager_adopt_fn)(void *user,
                                    const ftc_manager_buffer_view *bufs,
                                    size_t n);

/* For a state whose layout changes as it trains (an optimizer's state
 * appears after its first step; a state_dict holds what it holds): with
 * fn set, a replica that heals receives its source's whole state in the
 * layout the source registered (names, dtypes, shapes; nothing compared
 * with its own registrations, at most 1 TiB) and hands it to fn instead
 * of writing its registered buffers, which are then only what it serves.
 * fn runs where load callbacks run (on the caller's thread, inside the
 * first call that takes a healed round over), once per heal; a non-zero
 * return is a failed load (FTC_ECANCELED latched, the step votes no, the
 * next round heals again). heal_in_place does not apply. fn NULL turns it
 * off. Call between steps: FTC_EMISUSE while a round is in flight. */
FTC_API int ftc_manager_set_adopt(ftc_manager *m, ftc_manager_adopt_fn fn,
                                  void *user);

/* Brings the registered state up to date right before the manager reads
 * it; 0 on success. */
typedef int (*ftc_manager_prepare_fn)(void *user);

/* For a state that is costly to register on every step (a state_dict
 * flattened anew): with fn set, the state can be registered lazily, by
 * fn, only when the manager is about to read it. fn runs
 *  - on the quorum thread, inside a round in which this rank serves at
 *    least one healing replica, after the quorum is decided and before
 *    the state is lent or saved (never in other rounds);
 *  - on the quorum thread, inside a round in which this replica heals
 *    into its registered buffers (no adopt function set), before the
 *    healed bytes' destinations are laid out;
 *  - on the caller's thread inside a committed should_commit, before the
 *    state's checksum, when `ftc run` asked for one (FTC_EVENT_FD).
 * It runs without the manager's locks; inside it, and only there while a
 * round is in flight, this thread may call ftc_manager_clear_state,
 * ftc_manager_register and ftc_manager_register_cb (another thread still
 * gets FTC_EMISUSE); no other manager call. A non-zero return is a failed
 * save callback: when serving, this rank serves nothing in this round
 * and answers the healers at once that it cannot (see register_cb); when
 * healing, the step votes no (latched FTC_ECANCELED) and heals again in
 * the next round; at a report, the step is reported without a checksum.
 * fn NULL turns it off. Call between steps: FTC_EMISUSE while a round is
 * in flight. */
FTC_API int ftc_manager_set_prepare(ftc_manager *m, ftc_manager_prepare_fn fn,
                                    void *user);

/* Forgets every registered buffer (borrowed or behind callbacks), so that
 * the state can be registered again in a new layout; what a peer heals
 * from this rank is what is registered when its round starts. Call
 * between steps: FTC_EMISUSE while a round is in flight. */
FTC_API int ftc_manager_clear_state(ftc_manager *m);

/* Restores the manager's progress from a checkpoint (torchft's
 * Manager.load_state_dict): the committed step and batches this replica
 * reports from its next quorum round on. A replica restored ahead of the
 * others is the one they heal from; one behind heals. Call before the
 * first round or after a vote, with its registered state restored to the
 * same step: FTC_EMISUSE while a round is in flight or taken over and not
 * voted on, FTC_EINVAL for a negative step or batches. */
FTC_API int ftc_manager_set_step(ftc_manager *m, int64_t step,
                                 int64_t batches_committed);

typedef struct ftc_manager_quorum_opts {
    size_t struct_size; /* set by the _init (see ftc/base.h) */
    /* Ask the lighthouse to admit no new member into this quorum (long
     * LocalSGD/DiLoCo intervals). */
    bool shrink_only;
    /* Do not heal in this round even if behind (torchft allow_heal =
     * False); the replica then does not participate. */
    bool no_heal;
    /* Receive a healed state straight into the registered buffers (no
     * staging copy): only when the caller does not read them until
     * wait_quorum returns. */
    bool heal_in_place;
    /* The round's deadline (the timeout rule of ftc/base.h; a bad one
     * makes start_quorum fail with FTC_EINVAL, nothing started);
     * FTC_TIMEOUT_DEFAULT (the default): quorum_timeout_ms. */
    int64_t timeout_ms;
} ftc_manager_quorum_opts;

FTC_API void ftc_manager_quorum_opts_init(ftc_manager_quorum_opts *opts);

/* Starts the quorum round of the next step on the manager's thread and
 * returns at once (opts NULL: defaults). Until wait_quorum returns, the
 * caller may read the registered buffers (the forward pass) but must not
 * write them: the manager may serve them to healing replicas, and with
 * heal_in_place may write them; the same holds for the state behind
 * callbacks, which the quorum thread may save then. Errors: FTC_EMISUSE (a
 * round is in flight: wait for it first; or the last successful round was not
 * voted on: should_commit first), FTC_ECANCELED (the lighthouse killed this
 * replica). A latched error is cleared here: each step starts clean
 * (allreduces of an earlier step still unwaited are finished first, their
 * errors going with that step). */
FTC_API int ftc_manager_start_quorum(ftc_manager *m,
                                     const ftc_manager_quorum_opts *opts);

/* Waits until the round is done: the quorum decided, the process group
 * ready, this replica healed if it was behind (the healed state is in the
 * registered buffers, load callbacks ran on this thread, and
 * current_step() is the source's when this returns) and, if it is a source,
 * every healing replica done with its buffers (bounded by heal_lend_ms: see
 * ftc_manager_opts). timeout_ms FTC_TIMEOUT_DEFAULT waits for the round's end,
 * which its own deadlines bound (quorum_timeout_ms for the quorum, again for
 * healing, and connect_timeout_ms for the process group); a shorter wait that
 * expires returns FTC_ETIMEDOUT and leaves the round running. Returns the
 * round's result; it may be called again (it returns the same). Errors:
 * FTC_ETIMEDOUT (the lighthouse did not answer in quorum_timeout_ms: every rank
 * of the group gets it), FTC_EPEER (lighthouse or group store unreachable,
 * message says which), FTC_EPROTO (the ranks of the group are at different
 * steps), FTC_ECANCELED (killed, or destroyed meanwhile), FTC_EMISUSE (no
 * round started). A failed round: call start_quorum again for a new one.
 * A failure to build the process group or to heal is not an error here:
 * it is latched and the step votes no. */
FTC_API int ftc_manager_wait_quorum(ftc_manager *m, int64_t timeout_ms);

/* Starts an allreduce of buf across the replicas of the current quorum:
 * FTC_OP_SUM, or FTC_OP_AVG (the sum divided by num_participants, f32
 * and f64 only). A replica that does not participate (healing, spare)
 * contributes zeros and still receives the result. Waits for the
 * quorum round first (wait_quorum, with timeout_ms). Never fails because
 * of a peer: a failure now or later is latched and reported by the work's
 * wait; after a latched error the collective is still run when the
 * replica does not participate (so that peers are not held up), and
 * otherwise the group is aborted (so that peers fail at once instead of
 * waiting). buf->data is lent until the work's wait returns. Errors:
 * FTC_EINVAL (dtype, op, count), FTC_EMISUSE (no round started),
 * FTC_ENOMEM; then *out is NULL. */
FTC_API int ftc_manager_allreduce(ftc_manager *m, const ftc_tensor *buf, int op,
                                  ftc_manager_work **out, int64_t timeout_ms);

/* Waits for the allreduce (FTC_TIMEOUT_DEFAULT: timeout_ms of the
 * manager) and, for AVG, divides. 0: buf holds the result. On failure
 * buf holds unspecified values and the error is latched. When this
 * returns, the manager no longer touches buf, even after a timeout (the
 * process group is aborted then). Call once per work. */
FTC_API int ftc_manager_work_wait(ftc_manager_work *w, int64_t timeout_ms);
/* Releases a work (waited or not: an unwaited one is waited for by
 * should_commit). NULL is a no-op. */
FTC_API void ftc_manager_work_release(ftc_manager_work *w);

/* Latches an error for this step (the first one is kept) and makes the
 * step vote no. Any thread. message may be NULL. */
FTC_API void ftc_manager_report_error(ftc_manager *m, int code,
                                      const char *message);
/* The latched error code of this step (0 if none), its message copied
 * into msg (cap bytes, may be NULL). Any thread. */
FTC_API int ftc_manager_errored(ftc_manager *m, char *msg, size_t cap);

/* Votes on the step: yes if this rank has no latched error (every failed
 * collective of the step latches one) and num_participants >=
 * min_replica_size. Blocks until every rank of the group voted (at most
 * timeout_ms): *commit is 1 only if all voted yes, and is the same on
 * every rank of the group. On commit current_step advances by one (from
 * the healed step if this replica healed) and batches_committed by
 * num_participants. Otherwise the step and batches go back to what they
 * were before the round, unless every rank of the group healed (then they
 * keep the healed step). Works of the step not yet waited for are waited
 * for first. Errors (then *commit is 0 and the step counts as failed):
 * FTC_ETIMEDOUT (a rank of the group did not vote), FTC_EPROTO (the ranks
 * voted for different steps), FTC_EPEER (more than max_retries failures
 * in a row), FTC_EMISUSE (no successful round, or voted already). */
FTC_API int ftc_manager_should_commit(ftc_manager *m, int *commit,
                                      int64_t timeout_ms);

/* State of the manager. Any thread; never block. Values of the current
 * round are those of the last finished wait_quorum. */
FTC_API int64_t ftc_manager_current_step(const ftc_manager *m);
FTC_API int64_t ftc_manager_batches_committed(const ftc_manager *m);
/* Replicas whose data the averages count (0 before the first quorum). */
FTC_API int64_t ftc_manager_num_participants(const ftc_manager *m);
FTC_API bool ftc_manager_is_participating(const ftc_manager *m);
/* Whether this replica healed in the current round. */
FTC_API bool ftc_manager_is_healing(const ftc_manager *m);
FTC_API int64_t ftc_manager_replica_rank(const ftc_manager *m);
FTC_API int64_t ftc_manager_replica_world_size(const ftc_manager *m);
FTC_API int64_t ftc_manager_quorum_id(const ftc_manager *m);
/* This replica's id as the lighthouse knows it ("replica_1:0a9d4c2e");
 * "" on a non-leader rank before its first quorum. Copied into buf. */
FTC_API int ftc_manager_replica_id(const ftc_manager *m, char *buf, size_t cap);
/* This rank's healing server, "host:port". Copied into buf. */
FTC_API int ftc_manager_heal_address(const ftc_manager *m, char *buf,
                                     size_t cap);

/* Counters since create (any thread). */
typedef struct ftc_manager_stats {
    int64_t quorums;          /* rounds finished */
    int64_t reconfigurations; /* process groups built */
    int64_t commits, failed_commits;
    int64_t heals;          /* rounds in which this rank healed (applied) */
    int64_t heal_bytes;     /* bytes received by healing */
    double last_heal_ms;    /* duration of the last healing transfer */
    int64_t last_heal_step; /* the step it healed to */
    /* Copies taken to serve healing replicas (past heal_lend_ms, or a
     * state of callbacks only, saved) */
    int64_t snapshots;
    int64_t pushed_aborts; /* collectives aborted on a pushed change */
    double last_quorum_ms; /* start_quorum to round done, last round */
    char last_heal_source[FTC_LIGHTHOUSE_STR_MAX]; /* replica_id */
    /* Rounds in which this rank lent its buffers to healing replicas,
     * and how long the last one held its round (from the lending to the
     * last release, or heal_lend_ms and the copy). */
    int64_t lends;
    double last_lend_ms;
} ftc_manager_stats;

FTC_API int ftc_manager_stats_get(const ftc_manager *m, ftc_manager_stats *out);

/* The algo layer's comm over this manager (include/ftc/algo.h): its
 * start_quorum is start_quorum + wait_quorum with heal_in_place (healed
 * before it returns), allreduce_avg is an FTC_OP_AVG allreduce of f32,
 * should_commit(local_ok) reports an error first when local_ok is 0,
 * current_step is ftc_manager_current_step. m must outlive every handle
 * using the table. */
struct ftc_algo_comm;
FTC_API int ftc_manager_algo_comm(ftc_manager *m, struct ftc_algo_comm *out);

#ifdef __cplusplus
}
#endif
#endif
