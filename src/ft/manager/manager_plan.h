/* The manager's pure parts: what a rank does with a quorum (participation,
 * healing sources, whether to serve a snapshot), how a vote is decided,
 * whether a pushed event aborts, and the records the ranks of a group
 * exchange through their store (docs/protocol.md, "Manager group keys").
 * No I/O, no clock: unit-tested in tests/unit/ft/manager_plan_test.c. */
#ifndef FTC_FT_MANAGER_PLAN_H
#define FTC_FT_MANAGER_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* ------------------------------------------------------------ planning */

/* What one rank does in a round, from its quorum result. */
typedef struct ftc__manager_plan {
    bool heal;          /* pull the state of max_step */
    bool participating; /* its data counts in the averages */
    bool spare;         /* up to date but beyond min_replica_size */
    int64_t num_participants;
    /* Whether this rank copies its state to serve healing replicas. */
    bool serve;
    /* Members to pull from (indexes in replica rank order), the assigned
     * source first; n_sources 0 when not healing. */
    size_t sources[16];
    size_t n_sources;
} ftc__manager_plan;

/* Plans a round. q is the quorum with members in replica_id order, r
 * this rank's ftc__quorum_results. allow_heal false: a replica behind
 * does not heal (and does not participate). max_sources in 1..16. */
void ftc__manager_plan_build(const ftc__quorum *q, const ftc__quorum_result *r,
                             int64_t group_rank, bool init_sync,
                             bool allow_heal, int world_size_mode,
                             int64_t min_replica_size, int max_sources,
                             ftc__manager_plan *out);

/* Which members are up to date for this group rank (up: one flag per
 * member of q), as ftc__quorum_results decides it: at max_step, and with
 * init_sync at step 0 only the primary (the group_rank-th member at
 * max_step, cyclically). The others heal in this round (or would, but for
 * allow_heal). */
void ftc__manager_up_to_date(const ftc__quorum *q, const ftc__quorum_result *r,
                             int64_t group_rank, bool init_sync, bool *up);

/* Whether a member_lost event makes this rank abort the process group
 * built for quorum pg_quorum_id with these members, given the event's
 * quorum id (the lighthouse's current one when the member was lost): the
 * lost replica must be a member, and the event of that quorum or a later
 * one of the same epoch (an event of an older quorum is stale: its member
 * may have rejoined since; one of another epoch cannot be ordered). */
bool ftc__manager_event_aborts(const char *lost_id, int64_t event_quorum_id,
                               int64_t pg_quorum_id,
                               const char (*members)[FTC__QUORUM_STR_MAX],
                               size_t n);

/* One rank's vote. */
typedef struct ftc__manager_vote {
    int64_t step; /* the group's step when the round started */
    int64_t at;   /* this rank's step after healing */
    bool ok;
} ftc__manager_vote;

/* The decision from every rank's vote: commit if all are ok and agree on
 * step; *at_min is the lowest `at` (the step to keep after a failed
 * commit: a heal that failed on one rank is healed again). FTC_EPROTO if
 * the steps differ (the message names the ranks). */
int ftc__manager_decide(const ftc__manager_vote *votes, size_t n, bool *commit,
                        int64_t *at_min);

/* ------------------------------------------------------------ records */

/* What a rank writes when it arrives at a round. */
typedef struct ftc__manager_arrival {
    int64_t step;
    int64_t commit_failures;
    bool shrink_only;
    char heal_address[FTC__QUORUM_STR_MAX]; /* its healing server */
    /* The replica groups this rank could not reach since its last round
     * (its process group blamed them), as ftc__quorum_member.suspects:
     * ids one after the other, each NUL-terminated; NULL for none. Owned
     * by a decoded arrival (ftc__manager_arrival_fini). */
    char *suspects;
    size_t suspects_len;
    uint32_t n_suspects;
} ftc__manager_arrival;

/* Frees a decoded arrival's suspects. */
void ftc__manager_arrival_fini(ftc__manager_arrival *a);

/* The union of the arrivals' suspects, each once, at most
 * FTC__QUORUM_SUSPECTS_MAX, as pointers into the arrivals (valid while
 * they are) in ids (that many entries); how many. */
size_t ftc__manager_suspects_union(const ftc__manager_arrival *a, size_t n,
                                   const char **ids);

/* Records are JSON texts from ftc__malloc (NUL-terminated, *len without
 * it); decoders check every field and return FTC_EPROTO naming the bad
 * one. An arrival's "suspects" is an array of replica ids, absent when
 * there are none. */
int ftc__manager_arrival_encode(const ftc__manager_arrival *a, char **out,
                                size_t *len);
int ftc__manager_arrival_decode(const void *p, size_t n,
                                ftc__manager_arrival *a);

int ftc__manager_vote_encode(const ftc__manager_vote *v, char **out,
                             size_t *len);
int ftc__manager_vote_decode(const void *p, size_t n, ftc__manager_vote *v);

/* The leader's answer to a round: the quorum and the group's replica_id,
 * or the failure (code and message) that every rank then returns. */
int ftc__manager_result_encode_quorum(const ftc__quorum *q,
                                      const char *replica_id, char **out,
                                      size_t *len);
int ftc__manager_result_encode_error(int code, const char *message, char **out,
                                     size_t *len);
/* 0 with *q (initialised, members in replica_id order) and replica_id
 * (FTC__QUORUM_STR_MAX bytes); or the leader's code with its message;
 * FTC_EPROTO if malformed. */
int ftc__manager_result_decode(const void *p, size_t n, ftc__quorum *q,
                               char *replica_id);

/* The member data the leader sends: {"heal": [address of rank 0, ...]}. */
int ftc__manager_member_data(const ftc__manager_arrival *arrivals, size_t n,
                             char **out, size_t *len);
/* The healing address of group_rank in a member's data. FTC_ENOENT if
 * absent, FTC_EPROTO if malformed. */
int ftc__manager_member_heal_address(const ftc__quorum_member *m,
                                     int64_t group_rank,
                                     char out[FTC__QUORUM_STR_MAX]);

#endif
