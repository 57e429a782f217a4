/* Collective schedules: ring, recursive doubling, direct, tree, chain,
 * the hierarchical ones and the rest, chosen by message and group size
 * (and, for large messages, how the ranks sit on hosts) unless the caller
 * named an algorithm, each written as a plan (plan.h) that any transport
 * runs. They know ranks, hosts, streams and sizes, never connections. */
#ifndef FTC_PG_SCHED_SCHED_H
#define FTC_PG_SCHED_SCHED_H

#include "pg/pg_int.h"
#include "pg/sched/plan.h"

/* Memory for a collective's intermediate results, kept between calls. */
typedef struct ftc__scratch {
    uint8_t *buf;
    size_t cap;
} ftc__scratch;

/* At least bytes of it (NULL: no memory); valid until the next call. */
uint8_t *ftc__scratch_get(ftc__scratch *s, size_t bytes);
void ftc__scratch_free(ftc__scratch *s);

/* How a group's ranks sit on hosts, for the hierarchical schedules
 * (FTC_ALGO_HIER): nhost hosts of per_host ranks each; rank_at[h *
 * per_host + i] is the i-th lowest rank of host h, hosts numbered in the
 * order of their lowest ranks. nhost is 0 where there is no two-level
 * layout: one host, one rank per host, or hosts of unequal sizes. */
typedef struct ftc__sched_hosts {
    int nhost, per_host;
    int host, local; /* this rank's host and index within it */
    int *rank_at;
} ftc__sched_hosts;

/* The layout of size ranks where host_of[r] is the lowest rank on r's
 * host. 0 (h->nhost 0 where there is no two-level layout, or host_of is
 * not such a map), or FTC_ENOMEM. */
int ftc__sched_hosts_init(ftc__sched_hosts *h, const int *host_of, int size,
                          int rank);
void ftc__sched_hosts_free(ftc__sched_hosts *h);

/* The group a plan is built for. */
typedef struct ftc__sched_group {
    int rank, size;
    int streams;          /* channels per pair (plan.h's numbering) */
    size_t segment_bytes; /* pipeline segment */
    size_t small_bytes;   /* AUTO: the small algorithm up to this */
    ftc__scratch *scratch;
    const ftc__sched_hosts *hosts; /* NULL: the group is one level */
} ftc__sched_group;

/* Resets p and builds the plan of op. 0, or FTC_ENOMEM (a builder's
 * allocation failed; p->error says so too). A group of one only copies
 * locally (an empty plan). */
int ftc__sched_build(const ftc__sched_group *sg, ftc__plan *p, ftc__op *op);

#endif
