/* Who the job's quorums dropped without a goodbye: a replica frozen or cut
 * off may come back behind the job's committed step, and must then not
 * commit those steps again (ftc__quorum_opts.rollback_after_ms). Replicas
 * new to the job are not in this table: a new run of the job, or the
 * restarted process of a killed group, starts from its own state. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

_Static_assert(offsetof(ftc__quorum_dropped, replica_id) == 0,
               "lower_bound reads replica_id at offset 0");

bool ftc__quorum_was_member(const ftc__quorum_state *s, const char *replica_id)
{
    if (s->inherited) {
        return true;
    }
    bool found;
    ftc__quorum_lower_bound(s->dropped, s->n_dropped, sizeof(*s->dropped),
                            replica_id, &found);
    long i = ftc__quorum_find(&s->prev, replica_id);
    return found || (i >= 0 && (s->prev_gone == NULL || !s->prev_gone[i]));
}

int ftc__quorum_dropped_reserve(ftc__quorum_state *s, const ftc__quorum_opts *o)
{
    size_t want = s->n_dropped + s->prev.n;
    want = want < o->max_replicas ? want : o->max_replicas;
    if (want <= s->cap_dropped) {
        return 0;
    }
    ftc__quorum_dropped *p = ftc__realloc(s->dropped, want * sizeof(*p));
    if (p == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum state: %zu dropped replicas",
                           want);
    }
    s->dropped = p;
    s->cap_dropped = want;
    return 0;
}

bool ftc__quorum_dropped_remove(ftc__quorum_state *s, const char *replica_id)
{
    bool found;
    size_t i = ftc__quorum_lower_bound(s->dropped, s->n_dropped,
                                       sizeof(*s->dropped), replica_id, &found);
    if (!found) {
        return false;
    }
    memmove(&s->dropped[i], &s->dropped[i + 1],
            (s->n_dropped - i - 1) * sizeof(*s->dropped));
    s->n_dropped--;
    return true;
}

/* Makes room for one entry by evicting the one dropped longest ago. */
static void evict_oldest(ftc__quorum_state *s)
{
    size_t oldest = 0;
    for (size_t i = 1; i < s->n_dropped; i++) {
        if (s->dropped[i].since_ms < s->dropped[oldest].since_ms) {
            oldest = i;
        }
    }
    memmove(&s->dropped[oldest], &s->dropped[oldest + 1],
            (s->n_dropped - oldest - 1) * sizeof(*s->dropped));
    s->n_dropped--;
}

static void add(ftc__quorum_state *s, const ftc__quorum_opts *o,
                const char *replica_id, int64_t now)
{
    bool found;
    size_t i = ftc__quorum_lower_bound(s->dropped, s->n_dropped,
                                       sizeof(*s->dropped), replica_id, &found);
    if (found) {
        s->dropped[i].since_ms = now;
        return;
    }
    while (s->n_dropped > 0 && (s->n_dropped >= o->max_replicas ||
                                s->n_dropped >= s->cap_dropped)) {
        evict_oldest(s);
    }
    if (s->cap_dropped == 0) {
        return; /* max_replicas 0 cannot pass the checks; nothing to keep */
    }
    i = ftc__quorum_lower_bound(s->dropped, s->n_dropped, sizeof(*s->dropped),
                                replica_id, &found);
    memmove(&s->dropped[i + 1], &s->dropped[i],
            (s->n_dropped - i) * sizeof(*s->dropped));
    ftc__quorum_dropped *d = &s->dropped[i];
    /* A member's replica_id, checked shorter than the field on its way in. */
    snprintf(d->replica_id, sizeof(d->replica_id), "%s", replica_id);
    d->since_ms = now;
    s->n_dropped++;
}

void ftc__quorum_dropped_update(ftc__quorum_state *s, const ftc__quorum_opts *o,
                                const ftc__quorum *old, const bool *old_gone,
                                const ftc__quorum *q, int64_t now)
{
    for (size_t i = 0; i < q->n; i++) {
        ftc__quorum_dropped_remove(s, q->members[i].replica_id);
    }
    /* Both lists are sorted: one merge pass finds old's members not in q. */
    size_t j = 0;
    for (size_t i = 0; i < old->n; i++) {
        const char *id = old->members[i].replica_id;
        while (j < q->n && strcmp(q->members[j].replica_id, id) < 0) {
            j++;
        }
        bool in_q = j < q->n && strcmp(q->members[j].replica_id, id) == 0;
        if (!in_q && (old_gone == NULL || !old_gone[i])) {
            add(s, o, id, now);
        }
    }
}
