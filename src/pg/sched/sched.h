/* Collective schedules: ring, recursive doubling, direct, tree, chain
 * and the rest, chosen by message and group size unless the caller named
 * an algorithm, each written as a plan (plan.h) that any transport runs.
 * They know ranks, streams and sizes, never connections. */
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

/* The group a plan is built for. */
typedef struct ftc__sched_group {
    int rank, size;
    int streams;          /* channels per pair (plan.h's numbering) */
    size_t segment_bytes; /* pipeline segment */
    size_t small_bytes;   /* AUTO: the small algorithm up to this */
    ftc__scratch *scratch;
} ftc__sched_group;

/* Resets p and builds the plan of op. 0, or FTC_ENOMEM (a builder's
 * allocation failed; p->error says so too). A group of one only copies
 * locally (an empty plan). */
int ftc__sched_build(const ftc__sched_group *sg, ftc__plan *p, ftc__op *op);

#endif
