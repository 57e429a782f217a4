/* A job's replica groups for the operator's view (status JSON, /metrics):
 * per group (a replica_id up to its ':'), its latest step, the failures
 * it suffered by cause, and what its leader reports with its heartbeats
 * (heals, bytes, time, bytes served, a heal in progress), added up over
 * its incarnations. Pure bookkeeping under the job's lock; wall times are
 * passed in. At most `max` groups are kept: past that, the one not seen
 * for longest makes room. */
#ifndef FTC_FT_LIGHTHOUSE_REPLICAS_H
#define FTC_FT_LIGHTHOUSE_REPLICAS_H

#include <stddef.h>
#include <stdint.h>

#include "ft/quorum/quorum.h"
#include "ftc/ft.h"

/* Failure causes counted per group. */
enum {
    FTC__LH_CAUSE_DISCONNECT,
    FTC__LH_CAUSE_HEARTBEAT,
    FTC__LH_CAUSE_KILL,
    FTC__LH_CAUSES
};
extern const char *const ftc__lh_cause_names[FTC__LH_CAUSES];

typedef struct ftc__lh_replica {
    char group[FTC__QUORUM_STR_MAX];      /* the replica_id up to ':' */
    char replica_id[FTC__QUORUM_STR_MAX]; /* its latest incarnation */
    char retired[FTC__QUORUM_STR_MAX];    /* the one it replaced */
    int64_t step;                         /* in its latest quorum; -1 */
    uint64_t incarnations;                /* replica_ids seen */
    /* Reported counters: done = the earlier incarnations' sum, now = the
     * current one's latest report; the totals are their sums. */
    ftc_lighthouse_replica_stats done, now;
    uint64_t failures[FTC__LH_CAUSES];
    int64_t seen_wall_ms; /* in a quorum or a report */
} ftc__lh_replica;

typedef struct ftc__lh_replicas {
    ftc__lh_replica *v; /* sorted by group */
    size_t n, cap, max;
} ftc__lh_replicas;

void ftc__lh_replicas_init(ftc__lh_replicas *r, size_t max);
void ftc__lh_replicas_fini(ftc__lh_replicas *r);

/* Each member of q is seen at its step. */
void ftc__lh_replicas_formed(ftc__lh_replicas *r, const ftc__quorum *q,
                             int64_t wall_ms);
/* replica_id's leader reported st. */
void ftc__lh_replicas_report(ftc__lh_replicas *r, const char *replica_id,
                             const ftc_lighthouse_replica_stats *st,
                             int64_t wall_ms);
/* replica_id failed for cause (FTC__LH_CAUSE_*). */
void ftc__lh_replicas_failed(ftc__lh_replicas *r, const char *replica_id,
                             int cause, int64_t wall_ms);
/* A group's totals over its incarnations (healing_*: the current one's). */
void ftc__lh_replica_totals(const ftc__lh_replica *x,
                            ftc_lighthouse_replica_stats *out);

#endif
