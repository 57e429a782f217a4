/* Builders shared by the quorum core's tests: members, joins and previous
 * quorums in a line each, failing the test on any error. */
#ifndef FTC_TEST_QUORUM_FIXTURE_H
#define FTC_TEST_QUORUM_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"

/* A monotonic "now" far from 0, so tests can go back hours. */
#define QF_NOW ((int64_t)1000000000000)

/* A member with address "addr_<id>" and store "store_<id>". */
ftc__quorum_member qf_member(const char *id, int64_t step);
/* Joins like torchft's tests insert participants and heartbeats. */
void qf_join(ftc__quorum_state *s, const ftc__quorum_opts *o, const char *id,
             int64_t step, bool shrink_only, int64_t commit_failures,
             int64_t now);
/* Sets s->prev to a quorum of the given ids (each at step 1) and the
 * state's id to quorum_id, as torchft's
 * tests assign state.prev_quorum. */
void qf_set_prev(ftc__quorum_state *s, int64_t quorum_id,
                 const char *const *ids, size_t n);
/* Options as torchft's tests write LighthouseOpt. */
ftc__quorum_opts qf_opts(uint64_t min_replicas, int64_t join_timeout_ms,
                         int64_t heartbeat_timeout_ms);
/* The index of id among the participants, failing if absent. */
size_t qf_participant(const ftc__quorum_state *s, const char *id);
/* A quorum of n members built from ids and steps (not sorted). */
void qf_quorum(ftc__quorum *q, int64_t quorum_id, const char *const *ids,
               const int64_t *steps, size_t n);
/* Sends q through the lighthouse's compact answer (encode, JSON text,
 * decode onto a roster whose per-round fields are stale) and fails unless
 * every member comes back equal and every member's results at group ranks
 * 0-2, with and without init_sync, equal those of q itself. */
void qf_check_compact(const ftc__quorum *q);
/* j (taken; NULL fails the test) dumped to text and parsed again: what a
 * client gets on the wire. */
struct json_t *qf_through_text(struct json_t *j);

#endif
