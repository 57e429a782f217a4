/* The quorum core: torchft's lighthouse membership rules and per-member
 * results as pure functions of (state, now, opts): no I/O, no clock reads.
 *
 * Facts: ../shared/reference/torchft.md sections 2.2-2.5. The lighthouse and
 * the manager are thin shells around this module:
 *
 *   lighthouse                          this module
 *   ----------                          -----------
 *   heartbeat RPC                  ->   ftc__quorum_heartbeat(s, o, id, now)
 *   join RPC (long-poll)           ->   ftc__quorum_join(s, o, member, now)
 *   requester gave up (deadline)   ->   ftc__quorum_leave(s, id)
 *   goodbye / connection dropped   ->   ftc__quorum_forget(s, id)
 *   after any of these, and at     ->   ftc__quorum_tick(s, o, now, wall, &t)
 *   the last answer's next_ms
 *     t.met: answer every waiter found by ftc__quorum_find(&s->prev, id)
 *   status page                    ->   ftc__quorum_compute(now, s, o, &d)
 *
 *   manager, on each rank: ftc__quorum_results(q, replica_id, group_rank,
 *   init_sync, &r) and ftc__quorum_store_prefix(...) when r.quorum_id moved.
 *
 * Time: every `now_ms` is the caller's monotonic clock in milliseconds and
 * must be from the same clock as the times already in the state; `wall_ms`
 * is only copied into the quorum (Unix time, for display). An elapsed time
 * is never negative: a stamp later than `now` counts as just now, as Rust's
 * saturating Instant::duration_since does in torchft.
 *
 * Threads: nothing here locks. A state belongs to one thread at a time (the
 * lighthouse holds its job's lock around every call); distinct states and
 * const inputs may be used from any threads at once. */
#ifndef FTC_FT_QUORUM_H
#define FTC_FT_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of replica_id, address and store_address, NUL included. */
#define FTC__QUORUM_STR_MAX 256
/* Bytes of a reason text, NUL included (the longest is about 230). */
#define FTC__QUORUM_REASON_MAX 320
/* Replica ids one member may report as unreachable in one join. */
#define FTC__QUORUM_SUSPECTS_MAX 256
/* Hard ceilings of the configurable limits below. */
#define FTC__QUORUM_MAX_REPLICAS_CEIL 65536u
#define FTC__QUORUM_MAX_DATA_CEIL (1u << 20)
/* Quorum ids are (epoch << 32) | counter with a 31-bit epoch, so they stay
 * positive int64 values. */
#define FTC__QUORUM_EPOCH_MAX 0x7fffffffu

typedef struct ftc__quorum_opts {
    /* A quorum that is not fast needs at least this many healthy
     * participants (torchft --min_replicas, required there; default 1). */
    uint64_t min_replicas;
    /* How long to wait for replicas that heartbeat but have not joined,
     * counted from the earliest join (default 60000, the torchft CLI's). */
    int64_t join_timeout_ms;
    /* A replica is healthy while now - last heartbeat < this (5000). */
    int64_t heartbeat_timeout_ms;
    /* Entries per table (participants, heartbeats); 4096, at most
     * FTC__QUORUM_MAX_REPLICAS_CEIL. Bounds memory fed by the network. */
    uint32_t max_replicas;
    /* Bytes of a member's opaque data; 65536, at most
     * FTC__QUORUM_MAX_DATA_CEIL. */
    uint32_t max_data_bytes;
    /* Off (torchft): in a shrink_only round that is not fast, min_replicas
     * and the split-brain guard count every healthy participant although
     * only previous members are returned. On: they count what is returned.
     * See docs/decisions.md. */
    bool strict_shrink_only;
    /* A quorum whose members are all below the job's committed step (the
     * mark, ftc__quorum_state), one of them back from an earlier quorum of
     * the job, would commit again steps another quorum committed: it forms
     * only once no replica at that step has been heard (a heartbeat, a
     * quorum, a goodbye) for this long, which rolls the job back to the
     * best step left. Replicas new to the job (a new run, restarted
     * processes) start from their own state at once. 0: at once (torchft,
     * and this module's default); INT64_MAX: never, wait for a replica
     * that has the step. */
    int64_t rollback_after_ms;
    /* Replicas that cannot reach each other (a network partition between
     * groups that all still reach the lighthouse) would fail every step
     * together. Members report whom they could not reach (suspects); the
     * decision leaves out the fewest participants that end every reported
     * pair (ftc__quorum_compute), and a replica left out so stays out of
     * the quorums formed for this long, doubled each time it is let in
     * and reported again (at most 64 times), forgotten once out of
     * trouble for 4 times its last time out. 0: reports are ignored
     * (torchft, this module's default). */
    int64_t exclude_ms;
} ftc__quorum_opts;

/* Fills the defaults above. */
void ftc__quorum_opts_init(ftc__quorum_opts *o);
/* 0, or FTC_EINVAL naming the field out of range. */
int ftc__quorum_opts_check(const ftc__quorum_opts *o);

/* One replica group as it asks to join (torchft QuorumMember). */
typedef struct ftc__quorum_member {
    char replica_id[FTC__QUORUM_STR_MAX];    /* unique, non-empty */
    char address[FTC__QUORUM_STR_MAX];       /* its manager, for healing */
    char store_address[FTC__QUORUM_STR_MAX]; /* its store, "host:port" */
    int64_t step;                            /* committed steps, >= 0 */
    uint64_t world_size;                     /* ranks in the group */
    bool shrink_only;        /* asks that no new member be admitted */
    int64_t commit_failures; /* failed commits since the last success */
    /* Opaque bytes (torchft: user JSON), NUL-terminated when owned. A member
     * passed in is borrowed; a member inside a state or quorum owns it. */
    char *data;
    size_t data_len;
    /* Replicas this one could not reach in its last step (its process
     * group blamed them), each id NUL-terminated one after the other,
     * suspects_len bytes in all; owned and borrowed as data is. A
     * participant's report counts until it joins again or a quorum with
     * it forms; members of a quorum carry none. */
    char *suspects;
    size_t suspects_len;
    uint32_t n_suspects;
} ftc__quorum_member;

/* Sets the three strings of m (zeroing the rest of m). FTC_EINVAL if
 * replica_id is empty or any is NULL, FTC_EMSGSIZE if one is too long; m is
 * unchanged then. */
int ftc__quorum_member_set(ftc__quorum_member *m, const char *replica_id,
                           const char *address, const char *store_address);
/* 0 if id is a non-empty string shorter than FTC__QUORUM_STR_MAX bytes,
 * else FTC_EINVAL naming what (the text says "<what> ..."). */
int ftc__quorum_check_id(const char *id, const char *what);
/* Deep copy; dst must not own data. FTC_ENOMEM leaves dst without data. */
int ftc__quorum_member_copy(ftc__quorum_member *dst,
                            const ftc__quorum_member *src);
/* Frees owned data and suspects (NULL ok). */
void ftc__quorum_member_fini(ftc__quorum_member *m);
/* Gives m (which must own no suspects) a copy of the n ids as its
 * suspects. FTC_EINVAL (an id empty or too long, ids NULL with n > 0),
 * FTC_EMSGSIZE (n > FTC__QUORUM_SUSPECTS_MAX), FTC_ENOMEM; m is unchanged
 * on any error. */
int ftc__quorum_member_set_suspects(ftc__quorum_member *m,
                                    const char *const *ids, size_t n);
/* Frees m's suspects only. */
void ftc__quorum_member_clear_suspects(ftc__quorum_member *m);

/* A decided quorum (torchft Quorum): members sorted by replica_id, each id
 * once. Owns its members. */
typedef struct ftc__quorum {
    int64_t quorum_id;
    int64_t created_wall_ms;
    size_t n;
    ftc__quorum_member *members;
} ftc__quorum;

void ftc__quorum_init(ftc__quorum *q);
void ftc__quorum_fini(ftc__quorum *q);
/* Deep copy into an initialised, empty dst; FTC_ENOMEM leaves it empty. */
int ftc__quorum_copy(ftc__quorum *dst, const ftc__quorum *src);
/* Index of replica_id in q (binary search: q must be sorted), or -1. */
long ftc__quorum_find(const ftc__quorum *q, const char *replica_id);
/* torchft quorum_changed: true unless both lists hold the same replica_ids
 * in the same order; addresses, steps and the rest do not count. */
bool ftc__quorum_members_changed(const ftc__quorum_member *a, size_t na,
                                 const ftc__quorum_member *b, size_t nb);
/* Whether two quorums list the same roster: the same members in the same
 * order with the same replica_id, addresses, world_size and data. Steps,
 * commit_failures and shrink_only (what changes every round) and the ids
 * do not count. A client that holds a quorum's roster needs only the rest
 * of a later quorum with the same roster (the lighthouse's compact
 * answers, docs/protocol.md). */
bool ftc__quorum_same_roster(const ftc__quorum *a, const ftc__quorum *b);
/* The same for one member: its roster entry (id, addresses, world_size,
 * data) is the same. */
bool ftc__quorum_same_entry(const ftc__quorum_member *x,
                            const ftc__quorum_member *y);

typedef struct ftc__quorum_participant {
    ftc__quorum_member member; /* owned */
    int64_t joined_ms;
} ftc__quorum_participant;

typedef struct ftc__quorum_heartbeat_record {
    char replica_id[FTC__QUORUM_STR_MAX];
    int64_t last_ms;
} ftc__quorum_heartbeat_record;

/* What the last decision that formed nothing counted, kept up to date by
 * joins, so that a join which cannot complete a quorum (most joins of a
 * round: the last one completes it) need not recount every participant
 * and heartbeat (ftc__quorum_cannot_form). Anything else that could change
 * a count (a replica becoming healthy, leave, forget, a formed quorum)
 * drops it; time is bounded by until_ms. */
typedef struct ftc__quorum_hint {
    bool valid;
    bool has_prev;
    size_t healthy_replicas, healthy_participants;
    size_t missing; /* members of prev that are not healthy participants */
    int64_t first_joined; /* earliest join of a healthy participant */
    /* Not after the decision's next_ms: until then only inputs change it. */
    int64_t until_ms;
    ftc__quorum_opts opts; /* the rules it was counted under */
} ftc__quorum_hint;

/* The job's committed high-water mark: the highest step a member of a
 * formed quorum had, or a replica reported as it left (goodbye), and when
 * a replica at that step was last heard. finished: a replica left there
 * saying it reached the end of its run (until a quorum forms again). */
typedef struct ftc__quorum_mark {
    int64_t step;
    int64_t heard_ms;
    bool finished;
} ftc__quorum_mark;

/* A replica left out of quorums as unreachable (exclude_ms): last left
 * out at since_ms, out until until_ms; strikes: how many times it came
 * back and was reported again (its time out lasts exclude_ms <<
 * (strikes - 1), capped); back: a quorum let it in since. */
typedef struct ftc__quorum_excluded {
    char replica_id[FTC__QUORUM_STR_MAX];
    int64_t since_ms, until_ms;
    uint32_t strikes;
    bool back;
} ftc__quorum_excluded;

/* A replica a formed quorum left out that never said goodbye (frozen, cut
 * off, or dead without its connection dropping), since when. */
typedef struct ftc__quorum_dropped {
    char replica_id[FTC__QUORUM_STR_MAX];
    int64_t since_ms;
} ftc__quorum_dropped;

/* One job's lighthouse state. Both tables are kept sorted by replica_id, so
 * every answer is independent of the order in which replicas arrived. The
 * fields are readable by the shell (status pages); change them only through
 * the functions below. */
typedef struct ftc__quorum_state {
    ftc__quorum_participant *participants;
    size_t n_participants, cap_participants;
    ftc__quorum_heartbeat_record *heartbeats; /* never includes ids not seen */
    size_t n_heartbeats, cap_heartbeats;
    bool has_prev;
    ftc__quorum prev; /* the last quorum formed (torchft prev_quorum) */
    /* prev_gone[i]: prev's member i was forgotten since (a goodbye or a
     * dropped connection): no longer a member, never dropped. NULL when
     * prev was set from outside (tests): none. */
    bool *prev_gone;
    /* prev_granted[i]: the step prev's member i was granted a commit of
     * in prev (ftc__quorum_commit; 0: none). Apart from its step there:
     * a grant may end without the commit (an answer lost), and that
     * member asking below it then is no rollback on purpose. NULL with
     * prev_gone. */
    int64_t *prev_granted;
    uint32_t epoch;   /* high half of every quorum id of this state */
    uint32_t counter; /* low half; 0 until the first quorum */
    ftc__quorum_mark mark;
    /* The job goes on from a mark an earlier lighthouse stored (etcd):
     * any replica may be back from that lighthouse's quorums. */
    bool inherited;
    /* Sorted; at most max_replicas, the oldest dropped first. */
    ftc__quorum_dropped *dropped;
    size_t n_dropped, cap_dropped;
    /* Sorted; at most max_replicas, the one out longest ago evicted. */
    ftc__quorum_excluded *excluded;
    size_t n_excluded, cap_excluded;
    ftc__quorum_hint hint;
} ftc__quorum_state;

/* An empty state whose quorum ids are (epoch << 32) | counter. epoch 0
 * gives torchft's ids (1, 2, ...); a lighthouse passes
 * ftc__quorum_epoch_from_random(ftc__rand_u64()) so that a restarted one
 * never reuses an id, hence never a store prefix. FTC_EINVAL if epoch >
 * FTC__QUORUM_EPOCH_MAX. */
int ftc__quorum_state_init(ftc__quorum_state *s, uint32_t epoch);
void ftc__quorum_state_fini(ftc__quorum_state *s);
/* An epoch in [1, FTC__QUORUM_EPOCH_MAX] from 64 random bits. */
uint32_t ftc__quorum_epoch_from_random(uint64_t random_bits);
/* The id the next unchanged quorum would carry: (epoch << 32) | counter. */
int64_t ftc__quorum_state_id(const ftc__quorum_state *s);
/* The parts of an id. Ids are unique but not ordered across epochs: compare
 * them with == only. */
uint32_t ftc__quorum_id_epoch(int64_t quorum_id);
uint32_t ftc__quorum_id_counter(int64_t quorum_id);

/* Records a heartbeat of replica_id at now_ms. When the table is full and
 * the id is new, expired entries (which count for nothing) are dropped
 * first; if none were, FTC_EMSGSIZE. FTC_EINVAL for an empty or too long
 * id, FTC_ENOMEM; the state is unchanged on any error. */
int ftc__quorum_heartbeat(ftc__quorum_state *s, const ftc__quorum_opts *o,
                          const char *replica_id, int64_t now_ms);

/* torchft Quorum RPC entry: an implicit heartbeat, then m (copied, data
 * included) becomes a participant that joined at now_ms, replacing an
 * earlier request of the same replica_id. FTC_EINVAL (bad id, step or
 * commit_failures < 0, data without length), FTC_EMSGSIZE (data longer than
 * o->max_data_bytes, table full), FTC_EFINISHED (the job finished above
 * m's step: nothing is left for it to train), FTC_ENOMEM; the state is
 * unchanged on any error. */
int ftc__quorum_join(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     const ftc__quorum_member *m, int64_t now_ms);

/* Withdraws a participant whose request ended (deadline, closed
 * connection); its heartbeat stays. 0, or FTC_ENOENT if it was not one. */
int ftc__quorum_leave(ftc__quorum_state *s, const char *replica_id);

/* Forgets a replica at once (it said goodbye, or its connection dropped):
 * its participant entry, its heartbeat and its dropped entry go, so no
 * decision waits for its heartbeat to expire. 0, or FTC_ENOENT if it had
 * none. */
int ftc__quorum_forget(ftc__quorum_state *s, const char *replica_id);

/* Whether the quorum formed at now_ms left replica_id out as unreachable;
 * *until_ms says till when. The shell answers such a replica's waiting
 * join at once (it may find out whom it cannot reach, and report them
 * before its time out ends). */
bool ftc__quorum_left_out_at(const ftc__quorum_state *s, const char *replica_id,
                             int64_t now_ms, int64_t *until_ms);

/* Whether replica_id was a member of a formed quorum of this job: of the
 * last one, or of an earlier one that dropped it (and it did not leave).
 * Always true in an inherited job: this lighthouse cannot tell. */
bool ftc__quorum_was_member(const ftc__quorum_state *s, const char *replica_id);

/* The job goes on from the mark an earlier lighthouse (an etcd leader's
 * predecessor) stored: the mark rises to step (heard at now_ms, so
 * rollback_after_ms counts from here), finished as it was stored, and
 * every replica counts as one that may be back from that lighthouse's
 * quorums (ftc__quorum_was_member). */
void ftc__quorum_inherit_mark(ftc__quorum_state *s, int64_t step, bool finished,
                              int64_t now_ms);

/* A replica that leaves (goodbye) reports the steps it committed: the
 * mark rises to step if that is higher, heard at now_ms; finished (its run
 * reached its end) marks the job finished at that step. Steps < 0 (not
 * known) and steps below the mark change nothing. */
void ftc__quorum_note_step(ftc__quorum_state *s, int64_t step, bool finished,
                           int64_t now_ms);

/* A member of the last quorum asks to commit a step in it; step: the
 * steps it will have committed then (its step after the commit). Granted
 * (0) only while quorum_id is the last quorum's and replica_id one of its
 * members that did not leave since: the mark rises to step (heard at
 * now_ms) and the member counts as one that has it (prev_granted), so no
 * quorum of replicas below it forms while it is heard, unless it asks to
 * join below it (ftc__quorum_compute's `behind`). Asked again,
 * it is granted again (a retried call). FTC_ESTALE when the quorum is
 * over or replica_id is not in it, FTC_EINVAL for step < 1; the state is
 * unchanged then. The shell refuses members it reported lost itself. */
int ftc__quorum_commit(ftc__quorum_state *s, const char *replica_id,
                       int64_t quorum_id, int64_t step, int64_t now_ms);

/* Whether replica_id's heartbeat is younger than o->heartbeat_timeout_ms
 * at now_ms. A heartbeat can only change a decision when this was false
 * before it, so a shell may skip the tick otherwise. */
bool ftc__quorum_is_healthy(const ftc__quorum_state *s,
                            const ftc__quorum_opts *o, const char *replica_id,
                            int64_t now_ms);

/* When replica_id stops being healthy without a new heartbeat: its last
 * heartbeat + o->heartbeat_timeout_ms (saturated); INT64_MIN if it has
 * none. ftc__quorum_is_healthy(now) is now < this. */
int64_t ftc__quorum_healthy_until(const ftc__quorum_state *s,
                                  const ftc__quorum_opts *o,
                                  const char *replica_id);

/* Drops heartbeats with now - last >= older_than_ms; returns how many. With
 * older_than_ms >= o->heartbeat_timeout_ms no decision changes. */
size_t ftc__quorum_prune_heartbeats(ftc__quorum_state *s, int64_t now_ms,
                                    int64_t older_than_ms);

/* Why a quorum forms or not (torchft's reason texts, in this order). */
typedef enum ftc__quorum_verdict {
    FTC__QUORUM_FAST,           /* "Fast quorum found! ..." */
    FTC__QUORUM_NEED_MIN,       /* "... need min_replicas N ..." */
    FTC__QUORUM_NEED_HALF,      /* "... need at least half of ..." */
    FTC__QUORUM_WAIT_STRAGGLER, /* "... due to join timeout ..." */
    FTC__QUORUM_VALID,          /* "Valid quorum found ..." */
    FTC__QUORUM_NONE_LEFT,      /* shrink_only excluded everyone (ftc) */
    FTC__QUORUM_BEHIND,         /* every member below the mark (ftc) */
} ftc__quorum_verdict;

/* How many names of replicas left out a decision keeps for its reason
 * and the shell's log. */
#define FTC__QUORUM_EXCLUDED_NAMES 4

typedef struct ftc__quorum_decision {
    bool met;
    ftc__quorum_verdict verdict;
    /* The members when met: indexes into s->participants in replica_id
     * order; owned, valid until s changes. */
    uint32_t *member_idx;
    size_t n_members;
    /* The counts of torchft's metadata "[hp/p participants healthy][hr
     * heartbeating][shrink_only=b]". */
    size_t healthy_participants, participants, healthy_replicas;
    bool shrink_only;
    /* Members of the previous quorum that are not members now (0: a fast
     * quorum), and the earliest healthy participant's join. */
    size_t missing_previous;
    int64_t first_joined;
    /* Healthy participants left out as unreachable: still out from an
     * earlier quorum, or newly by the reports (exclude_ms); newly: those
     * that ftc__quorum_tick records when the quorum forms. excluded_idx:
     * indexes into s->participants, ascending (owned). waiting_excluded:
     * healthy replicas still out that are not participants (no straggler
     * wait for them). */
    uint32_t *excluded_idx;
    bool *newly; /* per excluded_idx entry */
    size_t n_excluded, n_newly, waiting_excluded;
    /* Every group expected joined, and leaving out those the reports
     * name left too few for a quorum: decided without the reports (those
     * still out from an earlier quorum stay out). */
    bool fell_back;
    /* FTC__QUORUM_BEHIND: the highest step among the members it would
     * have, and the mark above it; finished: the job finished there (no
     * rollback then). */
    int64_t members_step, mark_step;
    bool finished;
    /* The first time at which this answer can change without new input (a
     * heartbeat expiring, the join timeout passing); INT64_MAX if never. A
     * shell can sleep until then instead of ticking every 100 ms. */
    int64_t next_ms;
    char reason[FTC__QUORUM_REASON_MAX];
} ftc__quorum_decision;

/* torchft quorum_compute: decides whether the participants of s form a
 * quorum at now_ms (with ftc's rules: the committed step, and groups left
 * out as unreachable only when the rest can form a quorum). Reads s,
 * never changes it. 0 or FTC_ENOMEM (then *out holds no allocation). Release
 * *out with ftc__quorum_decision_fini. */
int ftc__quorum_compute(int64_t now_ms, const ftc__quorum_state *s,
                        const ftc__quorum_opts *o, ftc__quorum_decision *out);
void ftc__quorum_decision_fini(ftc__quorum_decision *d);

/* True only if ftc__quorum_tick at now_ms would form no quorum, decided
 * in O(1) from s->hint; false when it would form one or the hint cannot
 * tell (then tick). A shell that skips the tick on true must still wake
 * by s->hint.until_ms, which is never later than the skipped decision's
 * next_ms. */
bool ftc__quorum_cannot_form(const ftc__quorum_state *s,
                             const ftc__quorum_opts *o, int64_t now_ms);

/* Why the id of a formed quorum is what it is (torchft _quorum_tick). */
typedef enum ftc__quorum_id_change {
    FTC__QUORUM_ID_KEPT,            /* same ids, no commit failure */
    FTC__QUORUM_ID_FIRST,           /* no previous quorum */
    FTC__QUORUM_ID_MEMBERSHIP,      /* the ordered replica_ids changed */
    FTC__QUORUM_ID_COMMIT_FAILURES, /* same ids, a member failed a commit */
} ftc__quorum_id_change;

typedef struct ftc__quorum_tick_result {
    bool met;
    ftc__quorum_id_change change; /* when met */
    ftc__quorum_verdict verdict;
    int64_t next_ms; /* as in the decision; after a quorum, now_ms */
    /* When met below the mark: the mark it rolled back from, else -1;
     * newcomers: every member is new to the job (a new run, restarted
     * processes), else o->rollback_after_ms passed. */
    int64_t rolled_back_from;
    bool newcomers;
    /* When met: participants newly left out as unreachable, the first
     * FTC__QUORUM_EXCLUDED_NAMES of them by name, and for how long. */
    size_t n_excluded;
    char excluded[FTC__QUORUM_EXCLUDED_NAMES][FTC__QUORUM_STR_MAX];
    int64_t excluded_for_ms;
    char reason[FTC__QUORUM_REASON_MAX];
} ftc__quorum_tick_result;

/* torchft _quorum_tick: computes the decision; if a quorum forms, bumps the
 * id as torchft does (first quorum, changed membership, or any member with
 * commit_failures > 0), makes it s->prev (created at wall_ms), sets the
 * mark to its highest step (heard at now_ms), records the members of the
 * previous quorum it drops and removes its members from the
 * participants. Participants left out (shrink_only,
 * unhealthy) stay with joined = now_ms, as torchft's waiters re-insert
 * themselves. 0 or FTC_ENOMEM (the state unchanged). */
int ftc__quorum_tick(ftc__quorum_state *s, const ftc__quorum_opts *o,
                     int64_t now_ms, int64_t wall_ms,
                     ftc__quorum_tick_result *out);

/* What one rank of one replica group does with a quorum (torchft
 * compute_quorum_results, ManagerQuorumResponse). */
typedef struct ftc__quorum_result {
    int64_t quorum_id;
    int64_t replica_rank;       /* index in replica_id order */
    int64_t replica_world_size; /* members */
    /* The source to heal from, when heal: its manager address and rank. */
    char recover_src_manager_address[FTC__QUORUM_STR_MAX]; /* "" if none */
    int64_t recover_src_replica_rank;                      /* -1 if none */
    /* Ranks this one sends its state to, ascending; owned. */
    int64_t *recover_dst_replica_ranks;
    size_t n_recover_dst;
    /* The primary's store, where this group rank's cross-replica process
     * group meets (one primary per group rank, spread over up-to-date
     * members). */
    char store_address[FTC__QUORUM_STR_MAX];
    int64_t max_step;
    int64_t max_replica_rank; /* index among members at max_step, or -1 */
    int64_t max_world_size;   /* members at max_step */
    bool heal;
    int64_t commit_failures; /* the largest of any member */
    /* Every member's replica_id in rank order; owned, n =
     * replica_world_size. */
    char (*replica_ids)[FTC__QUORUM_STR_MAX];
} ftc__quorum_result;

/* torchft compute_quorum_results for replica_id at group_rank (the rank
 * within its replica group). q need not be sorted. init_sync: at max_step
 * 0 every member but the primary heals from an up-to-date one. FTC_EINVAL
 * (empty q, duplicate replica_id, group_rank < 0), FTC_ENOENT (replica_id
 * not in q), FTC_ENOMEM; *out is then empty. Release with
 * ftc__quorum_result_fini. Fixed world size with spares is the manager's
 * (torchft does it in Python, not here). */
int ftc__quorum_results(const ftc__quorum *q, const char *replica_id,
                        int64_t group_rank, bool init_sync,
                        ftc__quorum_result *out);
void ftc__quorum_result_fini(ftc__quorum_result *r);

/* The store prefix where group_rank's cross-replica process group meets in
 * quorum_id: "{store_address}/torchft/{quorum_id}/{group_rank}" (torchft's
 * layout). FTC_EINVAL (NULL, group_rank < 0), FTC_EMSGSIZE (cap too
 * small: buf then holds ""). */
int ftc__quorum_store_prefix(char *buf, size_t cap, const char *store_address,
                             int64_t quorum_id, int64_t group_rank);

#endif
