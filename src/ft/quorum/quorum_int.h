/* Helpers shared by the quorum core's files: saturating time arithmetic and
 * binary search over the tables it keeps sorted by replica_id. */
#ifndef FTC_FT_QUORUM_INT_H
#define FTC_FT_QUORUM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"

/* now - then, 0 when then is later (torchft's saturating duration_since),
 * INT64_MAX when the difference does not fit. */
int64_t ftc__quorum_elapsed_ms(int64_t now, int64_t then);
/* a + b saturated to INT64_MAX (b >= 0). */
int64_t ftc__quorum_add_ms(int64_t a, int64_t b);

/* The first index in a sorted array of n elements, stride bytes each, whose
 * replica_id (the first field of every element type here) is not below id;
 * *found says whether it equals id. */
size_t ftc__quorum_lower_bound(const void *base, size_t n, size_t stride,
                               const char *id, bool *found);

/* Whether two option sets decide alike (the hint's rules: min_replicas,
 * the timeouts, strict_shrink_only). */
bool ftc__quorum_same_rules(const ftc__quorum_opts *a,
                            const ftc__quorum_opts *b);

/* Room for the members of s->prev that the next quorum may drop, within
 * o->max_replicas; FTC_ENOMEM changes nothing. */
int ftc__quorum_dropped_reserve(ftc__quorum_state *s,
                                const ftc__quorum_opts *o);
/* q (sorted) replaces old (sorted) with other members: old's members not
 * in q are dropped since now (the oldest evicted beyond o->max_replicas)
 * unless old_gone says they were forgotten (NULL: none was), q's members
 * are not. Needs ftc__quorum_dropped_reserve first. */
void ftc__quorum_dropped_update(ftc__quorum_state *s, const ftc__quorum_opts *o,
                                const ftc__quorum *old, const bool *old_gone,
                                const ftc__quorum *q, int64_t now);
/* Removes replica_id's dropped entry; whether it had one. */
bool ftc__quorum_dropped_remove(ftc__quorum_state *s, const char *replica_id);

/* Leaves out of d's members (d->member_idx: the healthy participants)
 * those still out as unreachable and then, with reports, the fewest that
 * end every pair the reports name (quorum_exclude.c); fills d's excluded
 * fields and lowers d->next_ms to the end of a time out that matters.
 * Nothing when o->exclude_ms is 0. FTC_ENOMEM. */
int ftc__quorum_exclude_pick(int64_t now, const ftc__quorum_state *s,
                             const ftc__quorum_opts *o, bool reports,
                             ftc__quorum_decision *d);
/* Marks the members of q (a formed quorum) that have an entry as let
 * in again: reported again, they stay out twice as long. */
void ftc__quorum_exclude_members_back(ftc__quorum_state *s,
                                      const ftc__quorum *q);
/* Forgets the entries out of trouble for 4 times their last time out. */
void ftc__quorum_exclude_forgive(ftc__quorum_state *s,
                                 const ftc__quorum_opts *o, int64_t now);
/* Room to record `more` replicas as out, within o->max_replicas;
 * FTC_ENOMEM changes nothing. */
int ftc__quorum_exclude_reserve(ftc__quorum_state *s, const ftc__quorum_opts *o,
                                size_t more);
/* Records replica_id as out from now (one more strike); returns for how
 * long. Needs ftc__quorum_exclude_reserve first. */
int64_t ftc__quorum_exclude_record(ftc__quorum_state *s,
                                   const ftc__quorum_opts *o,
                                   const char *replica_id, int64_t now);
/* Whether replica_id has an entry (out now, or not yet forgiven). */
bool ftc__quorum_has_exclusion(const ftc__quorum_state *s,
                               const char *replica_id);

#endif
