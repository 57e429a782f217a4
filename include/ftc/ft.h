/* ftc/ft.h: fault tolerance across replica groups. The lighthouse decides
 * which replica groups train each step together (a quorum) and pushes
 * membership changes; its client serves the manager and `ftc status`.
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

/* ------------------------------------------------------------ lighthouse */

typedef struct ftc_lighthouse ftc_lighthouse;

/* Every limit on what clients send is a field here. A zero field means the
 * default given; out-of-range values make create fail with FTC_EINVAL. The
 * quorum options (min_replicas ... strict_shrink_only, max_replicas,
 * max_data_bytes) are the defaults of each new job; a job can change its
 * own with PUT /v1/jobs/{job} or ftc_lighthouse_configure_job. */
typedef struct ftc_lighthouse_opts {
    /* "host:port" to listen on; NULL: "[::]:29510" (every interface, IPv6
     * dual-stack). Port 0 picks a free port (ftc_lighthouse_address). */
    const char *bind;
    uint64_t min_replicas;           /* 1 */
    int64_t join_timeout_ms;         /* 10000 (torchft CLI: 60000) */
    int64_t heartbeat_timeout_ms;    /* 500 (torchft: 5000) */
    bool strict_shrink_only;         /* false (see docs/decisions.md) */
    uint32_t max_jobs;               /* 64, at most 4096 */
    uint32_t max_replicas;           /* 4096 per job, at most 65536 */
    uint32_t max_data_bytes;         /* 65536 per member, at most 1 MiB */
    size_t max_body_bytes;           /* 131072 per request, at most 2 MiB */
    uint32_t max_connections;        /* 8192 */
    uint32_t max_connections_per_ip; /* 256 */
    /* Closes a connection idle this long (not one waiting in a long-poll);
     * rounded up to whole seconds. 30000. */
    int64_t idle_connection_timeout_ms;
    int64_t max_join_wait_ms; /* cap on a join's timeout_ms; 3600000 */
    uint32_t event_ring;      /* events kept per job; 256, at most 65536 */
    int64_t job_idle_ms;      /* an unused job is deleted after; 600000 */
    /* Shared secret; NULL: none. With a token every request that changes
     * state must carry "Authorization: Bearer <token>" and the kill action
     * exists. Copied. */
    const char *token;
    bool auth_reads; /* reads (status, metrics, page) need the token too */
    /* false (default): a long-poll whose connection drops is the death of
     * its replica (--drop-is-death on). true: it only withdraws the
     * request; death is then found by the heartbeat timeout alone. */
    bool keep_dropped;
} ftc_lighthouse_opts;

/* Fills the defaults above. */
FTC_API void ftc_lighthouse_opts_init(ftc_lighthouse_opts *opts);

/* Starts a lighthouse serving on its own threads (one HTTP thread, one
 * clock thread). opts may be NULL (all defaults) and is copied. Errors:
 * FTC_EINVAL (an option out of range, a bad bind address), FTC_ESYS (the
 * port is in use, ...), FTC_ENOMEM. On failure *out is NULL. */
FTC_API int ftc_lighthouse_create(ftc_lighthouse **out,
                                  const ftc_lighthouse_opts *opts);

/* Writes "host:port" as bound (the real port when 0 was asked) into buf.
 * FTC_EMSGSIZE if cap is too small (buf then holds ""). */
FTC_API int ftc_lighthouse_address(const ftc_lighthouse *lh, char *buf,
                                   size_t cap);

/* The bound port. */
FTC_API int ftc_lighthouse_port(const ftc_lighthouse *lh);

/* Declares a job up front from "NAME" or "NAME:key=value,key=value"
 * (keys: min_replicas, join_timeout_ms, heartbeat_timeout_ms,
 * strict_shrink_only, max_replicas, max_data_bytes; booleans true|false).
 * A declared job is never deleted for being idle. Creates the job or
 * changes its options. FTC_EINVAL (bad name, key or value; nothing
 * changed), FTC_EMSGSIZE (max_jobs reached), FTC_ENOMEM. Thread-safe. */
FTC_API int ftc_lighthouse_configure_job(ftc_lighthouse *lh, const char *spec);

/* Answers every pending request 503, stops the threads, closes every
 * connection and frees everything. NULL is a no-op. Not safe while another
 * thread calls into lh. */
FTC_API void ftc_lighthouse_destroy(ftc_lighthouse *lh);

/* ----------------------------------------------------------------- client */

typedef struct ftc_lighthouse_client ftc_lighthouse_client;

typedef struct ftc_lighthouse_client_opts {
    const char *job;   /* NULL: "default"; copied */
    const char *token; /* NULL: none; copied. See FTC_TOKEN in
                          docs/operations.md */
    /* What FTC_TIMEOUT_DEFAULT means for a call; 60000. */
    int64_t timeout_ms;
    /* Retry of unreachable lighthouses (refused, reset, 503): exponential
     * backoff with jitter from retry_initial_ms (50) to retry_max_ms
     * (1000), until the call's deadline. */
    int64_t retry_initial_ms;
    int64_t retry_max_ms;
    size_t max_response_bytes; /* 64 MiB */
} ftc_lighthouse_client_opts;

FTC_API void ftc_lighthouse_client_opts_init(ftc_lighthouse_client_opts *opts);

/* A client of the lighthouse at addr ("host:port", "[v6]:port", or an
 * "http://host:port" URL). Connects lazily: creating one never blocks.
 * Errors: FTC_EINVAL (bad address or job name), FTC_ENOMEM.
 *
 * Thread-safety: one client may be used by many threads at once; each call
 * runs on its own connection (kept alive and reused by later calls), so a
 * manager can heartbeat, join and watch on three threads with one client.
 * Every call takes timeout_ms (>= 0, FTC_TIMEOUT_DEFAULT or
 * FTC_TIMEOUT_INFINITE) and returns by then; while the lighthouse is
 * unreachable (restarting) a call retries with backoff until then. */
FTC_API int
ftc_lighthouse_client_create(ftc_lighthouse_client **out, const char *addr,
                             const ftc_lighthouse_client_opts *opts);

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

typedef struct ftc_lighthouse_join_result {
    uint32_t epoch;
    ftc_lighthouse_quorum quorum; /* when the call returned 0 */
    /* The lighthouse's reason: why the quorum formed, or (FTC_ETIMEDOUT)
     * why none had formed at the deadline; "" if it never answered. */
    char reason[FTC_LIGHTHOUSE_REASON_MAX];
} ftc_lighthouse_join_result;

/* Asks to join the next quorum and waits (long-poll) until one that
 * includes member forms. member is borrowed for the call. *out is always
 * initialised; release it with ftc_lighthouse_join_result_fini. Errors:
 * FTC_ETIMEDOUT (no quorum by the deadline: out->reason says why),
 * FTC_ESTALE (superseded by a newer join of the same replica_id),
 * FTC_EINVAL (bad member, data not JSON), FTC_EMSGSIZE, FTC_EAUTH,
 * FTC_ECANCELED, FTC_EPROTO. */
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
 * out may be NULL. FTC_ENOENT if the lighthouse did not know it. */
FTC_API int ftc_lighthouse_client_goodbye(ftc_lighthouse_client *client,
                                          const char *replica_id,
                                          int64_t timeout_ms,
                                          ftc_lighthouse_ack *out);

/* The status JSON of job (NULL: the list of every job, GET /v1/jobs) as a
 * NUL-terminated text the caller releases with ftc_free. FTC_ENOENT if the
 * job does not exist. Formats: docs/protocol.md. */
FTC_API int ftc_lighthouse_client_status(ftc_lighthouse_client *client,
                                         const char *job, int64_t timeout_ms,
                                         char **json /* OUT */);

/* Frees what a result holds (NULL ok); the struct can be reused. */
FTC_API void ftc_lighthouse_quorum_fini(ftc_lighthouse_quorum *q);

#ifdef __cplusplus
}
#endif
#endif
