/* A job's replica groups for the operator's view (lighthouse_replicas.h). */
#include "ft/lighthouse/lighthouse_replicas.h"

#include <stdio.h>
#include <string.h>

#include "base/base_int.h"

const char *const ftc__lh_cause_names[FTC__LH_CAUSES] = {"disconnect",
                                                         "heartbeat", "kill"};

void ftc__lh_replicas_init(ftc__lh_replicas *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max > 0 ? max : 1;
}

void ftc__lh_replicas_fini(ftc__lh_replicas *r)
{
    ftc__free(r->v);
    memset(r, 0, sizeof(*r));
}

/* The index of group (length len) in r->v, or where it would go (*found
 * false). */
static size_t search(const ftc__lh_replicas *r, const char *group, size_t len,
                     bool *found)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(r->v[mid].group, group, len);
        if (c == 0 && r->v[mid].group[len] != '\0') {
            c = 1; /* longer: after */
        }
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

/* Makes room by dropping the group seen longest ago; false when nothing
 * can be dropped or grown. */
static bool make_room(ftc__lh_replicas *r)
{
    if (r->n < r->cap) {
        return true;
    }
    if (r->n < r->max) {
        size_t cap = r->cap > 0 ? r->cap * 2 : 8;
        cap = cap > r->max ? r->max : cap;
        ftc__lh_replica *v = ftc__realloc(r->v, cap * sizeof(*v));
        if (v != NULL) {
            r->v = v;
            r->cap = cap;
            return true;
        }
    }
    if (r->n == 0) {
        return false;
    }
    size_t old = 0;
    for (size_t i = 1; i < r->n; i++) {
        old = r->v[i].seen_wall_ms < r->v[old].seen_wall_ms ? i : old;
    }
    memmove(&r->v[old], &r->v[old + 1], (r->n - old - 1) * sizeof(*r->v));
    r->n--;
    return true;
}

static void add(ftc_lighthouse_replica_stats *to,
                const ftc_lighthouse_replica_stats *x)
{
    to->heals += x->heals;
    to->heal_bytes += x->heal_bytes;
    to->heal_seconds += x->heal_seconds;
    to->served_bytes += x->served_bytes;
}

/* replica_id's group, created if new (NULL when it cannot be kept). With
 * current, replica_id is the group's incarnation from now: a new one
 * folds the last one's counters into done, and a late word from the one
 * it replaced is ignored (NULL) rather than counted twice. (A failure is
 * not current: the loss of an old incarnation can be found after its
 * successor joined.) */
static ftc__lh_replica *get(ftc__lh_replicas *r, const char *replica_id,
                            bool current, int64_t wall_ms)
{
    size_t len = strcspn(replica_id, ":");
    bool found;
    size_t i = search(r, replica_id, len, &found);
    if (!found) {
        if (!make_room(r)) {
            return NULL;
        }
        i = search(r, replica_id, len, &found); /* make_room may drop */
        memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
        r->n++;
        ftc__lh_replica *x = &r->v[i];
        memset(x, 0, sizeof(*x));
        memcpy(x->group, replica_id, len);
        x->step = -1;
    }
    ftc__lh_replica *x = &r->v[i];
    if (current && strcmp(x->retired, replica_id) == 0) {
        return NULL;
    }
    if ((current || x->replica_id[0] == '\0') &&
        strcmp(x->replica_id, replica_id) != 0) {
        add(&x->done, &x->now);
        memset(&x->now, 0, sizeof(x->now));
        memcpy(x->retired, x->replica_id, sizeof(x->retired));
        snprintf(x->replica_id, sizeof(x->replica_id), "%s", replica_id);
        x->incarnations++;
    }
    x->seen_wall_ms = wall_ms;
    return x;
}

void ftc__lh_replicas_formed(ftc__lh_replicas *r, const ftc__quorum *q,
                             int64_t wall_ms)
{
    for (size_t i = 0; i < q->n; i++) {
        ftc__lh_replica *x = get(r, q->members[i].replica_id, true, wall_ms);
        if (x != NULL) {
            x->step = q->members[i].step;
        }
    }
}

void ftc__lh_replicas_report(ftc__lh_replicas *r, const char *replica_id,
                             const ftc_lighthouse_replica_stats *st,
                             int64_t wall_ms)
{
    ftc__lh_replica *x = get(r, replica_id, true, wall_ms);
    if (x != NULL) {
        x->now = *st;
    }
}

void ftc__lh_replicas_failed(ftc__lh_replicas *r, const char *replica_id,
                             int cause, int64_t wall_ms)
{
    ftc__lh_replica *x = get(r, replica_id, false, wall_ms);
    if (x != NULL && cause >= 0 && cause < FTC__LH_CAUSES) {
        x->failures[cause]++;
        if (strcmp(x->replica_id, replica_id) == 0) {
            /* A heal cut short by the failure is not in progress. */
            x->now.healing_from[0] = '\0';
        }
    }
}

void ftc__lh_replica_totals(const ftc__lh_replica *x,
                            ftc_lighthouse_replica_stats *out)
{
    *out = x->now;
    add(out, &x->done);
}
