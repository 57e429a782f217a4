/* What the lighthouse shows: a job's status JSON (one locked snapshot)
 * and the jobs list. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse/lighthouse_json.h"

/* Healing entries computed per status (each costs a quorum results). */
#define MAX_HEALING 64

static const char *verdict_name(ftc__quorum_verdict v)
{
    static const char *const names[] = {
        "fast",  "need_min",  "need_half", "wait_straggler",
        "valid", "none_left", "behind"};
    return (size_t)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

static const char *change_name(ftc__quorum_id_change c)
{
    static const char *const names[] = {"kept", "first", "membership",
                                        "commit_failures"};
    return (size_t)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

/* Sets obj[key] = v (v consumed); false once anything failed. */
static bool put(json_t *obj, const char *key, json_t *v)
{
    return obj != NULL && v != NULL && json_object_set_new(obj, key, v) == 0;
}

static bool append(json_t *arr, json_t *v)
{
    return arr != NULL && v != NULL && json_array_append_new(arr, v) == 0;
}

/* A figure that is -1 until it is known, as JSON (null then). */
static json_t *or_null(int64_t v)
{
    return v < 0 ? json_null() : json_integer((json_int_t)v);
}

static json_t *decision_json(const ftc__quorum_decision *d, int64_t now)
{
    json_t *j =
        json_pack("{s:s, s:b, s:s}", "verdict", verdict_name(d->verdict), "met",
                  (int)d->met, "reason", d->reason);
    bool ok = put(j, "next_in_ms",
                  d->next_ms == INT64_MAX
                      ? json_null()
                      : json_integer((json_int_t)(d->next_ms - now)));
    return ok ? j : (json_decref(j), NULL);
}

/* Replica groups left out as unreachable (exclude_ms) and not forgiven
 * yet: how much longer they are out (0: back, on probation) and how many
 * times in a row. */
static json_t *left_out_json(const ftc__quorum_state *s, int64_t now)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < s->n_excluded; i++) {
        const ftc__quorum_excluded *e = &s->excluded[i];
        int64_t left = e->until_ms > now ? e->until_ms - now : 0;
        if (json_array_append_new(
                arr, json_pack("{s:s, s:I, s:I}", "replica_id", e->replica_id,
                               "out_for_ms", (json_int_t)left, "times",
                               (json_int_t)e->strikes)) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

/* Who heals from whom at group rank 0 (the quorum core's own answer). */
static json_t *healing_json(const ftc__quorum *q, int64_t max_step,
                            bool *truncated)
{
    json_t *arr = json_array();
    size_t done = 0;
    for (size_t i = 0; arr != NULL && i < q->n; i++) {
        const ftc__quorum_member *m = &q->members[i];
        if (m->step == max_step && max_step != 0) {
            continue; /* up to date: heals only at step 0 (init_sync) */
        }
        if (done++ == MAX_HEALING) {
            *truncated = true;
            break;
        }
        ftc__quorum_result r;
        if (ftc__quorum_results(q, m->replica_id, 0, true, &r) != 0) {
            json_decref(arr);
            return NULL;
        }
        if (r.heal) {
            const char *from = r.replica_ids[r.recover_src_replica_rank];
            if (!append(arr,
                        json_pack("{s:s, s:I, s:s, s:s}", "replica_id",
                                  m->replica_id, "step", (json_int_t)m->step,
                                  "from", from, "from_address",
                                  r.recover_src_manager_address))) {
                json_decref(arr);
                arr = NULL;
            }
        }
        ftc__quorum_result_fini(&r);
    }
    return arr;
}

static json_t *quorum_status_json(const ftc__quorum *q, int64_t wall)
{
    json_t *j = ftc__lhj_quorum_json(q);
    int64_t max_step = 0;
    for (size_t i = 0; i < q->n; i++) {
        max_step =
            q->members[i].step > max_step ? q->members[i].step : max_step;
    }
    bool truncated = false;
    bool ok = put(j, "age_ms", json_integer(wall - q->created_wall_ms)) &&
              put(j, "max_step", json_integer(max_step)) &&
              put(j, "healing", healing_json(q, max_step, &truncated)) &&
              put(j, "healing_truncated", json_boolean(truncated));
    return ok ? j : (json_decref(j), NULL);
}

static int by_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The replica ids of the waiting watches, sorted, so that a status of n
 * groups looks each up in O(log n) (a scan per heartbeat was O(n^2), 0.1 s
 * of the job's lock at 4,096 groups). NULL when there are none; an
 * allocation failure makes every "watching" false. */
static const char **watch_ids(const ftc__lighthouse_job *job)
{
    const char **ids =
        job->n_watches > 0 ? ftc__malloc(job->n_watches * sizeof(*ids)) : NULL;
    size_t n = 0;
    for (const ftc__lighthouse_req *r = job->watches; ids != NULL && r != NULL;
         r = r->next) {
        ids[n++] = r->replica_id;
    }
    if (ids != NULL) {
        qsort(ids, n, sizeof(*ids), by_id);
    }
    return ids;
}

static bool has_watch(const char **ids, size_t n, const char *replica_id)
{
    return ids != NULL &&
           bsearch(&replica_id, ids, n, sizeof(*ids), by_id) != NULL;
}

static json_t *tables_json(ftc__lighthouse_job *job, int64_t now, json_t *j)
{
    json_t *parts = json_array();
    for (size_t i = 0; parts != NULL && i < job->s.n_participants; i++) {
        const ftc__quorum_participant *p = &job->s.participants[i];
        if (!append(parts,
                    json_pack("{s:s, s:I, s:I, s:b}", "replica_id",
                              p->member.replica_id, "step",
                              (json_int_t)p->member.step, "waiting_ms",
                              (json_int_t)(now - p->joined_ms), "shrink_only",
                              (int)p->member.shrink_only))) {
            json_decref(parts);
            parts = NULL;
        }
    }
    json_t *hbs = json_array();
    const char **watching = watch_ids(job);
    for (size_t i = 0; hbs != NULL && i < job->s.n_heartbeats; i++) {
        const ftc__quorum_heartbeat_record *h = &job->s.heartbeats[i];
        bool healthy =
            ftc__quorum_is_healthy(&job->s, &job->o, h->replica_id, now);
        if (!append(hbs, json_pack("{s:s, s:I, s:b, s:b}", "replica_id",
                                   h->replica_id, "age_ms",
                                   (json_int_t)(now - h->last_ms), "healthy",
                                   (int)healthy, "watching",
                                   (int)has_watch(watching, job->n_watches,
                                                  h->replica_id)))) {
            json_decref(hbs);
            hbs = NULL;
        }
    }
    ftc__free(watching);
    json_t *changes = json_array();
    uint64_t first =
        job->n_changes > FTC__LH_CHANGES ? job->n_changes - FTC__LH_CHANGES : 0;
    for (uint64_t k = job->n_changes; changes != NULL && k > first; k--) {
        const ftc__lighthouse_change *c =
            &job->changes[(k - 1) % FTC__LH_CHANGES];
        if (!append(changes,
                    json_pack("{s:I, s:I, s:I, s:s, s:I, s:I}", "quorum_id",
                              (json_int_t)c->quorum_id, "epoch",
                              (json_int_t)ftc__quorum_id_epoch(c->quorum_id),
                              "counter",
                              (json_int_t)ftc__quorum_id_counter(c->quorum_id),
                              "cause", change_name(c->cause), "members",
                              (json_int_t)c->members, "wall_ms",
                              (json_int_t)c->wall_ms))) {
            json_decref(changes);
            changes = NULL;
        }
    }
    bool ok = put(j, "participants", parts) && put(j, "heartbeats", hbs) &&
              put(j, "changes", changes);
    return ok ? j : (json_decref(j), NULL);
}

/* One failure of the history. */
static json_t *failure_json(const ftc__lh_failure *f)
{
    return json_pack("{s:s, s:s, s:I, s:o, s:o, s:o}", "replica_id",
                     f->replica_id, "cause", f->cause, "wall_ms",
                     (json_int_t)f->wall_ms, "step", or_null(f->step),
                     "survivors_ms", or_null(f->survivors_ms), "back_ms",
                     or_null(f->back_ms));
}

/* The headline in plain words and the figures behind it. */
static json_t *summary_json(const ftc__lh_history *h, int64_t wall)
{
    char headline[512];
    ftc__lh_history_headline(h, wall, headline, sizeof(headline));
    const ftc__lh_failure *f = ftc__lh_history_last_failure(h);
    return json_pack("{s:s, s:I, s:I, s:f, s:o}", "headline", headline,
                     "replica_groups", (json_int_t)h->last.members, "step",
                     (json_int_t)h->last.step, "steps_per_s",
                     ftc__lh_history_rate(h, wall), "last_failure",
                     f != NULL ? failure_json(f) : json_null());
}

/* The samples (oldest first, each [wall_ms, step, members]) and the
 * failures kept. */
static json_t *history_json(const ftc__lh_history *h)
{
    json_t *samples = json_array();
    uint64_t first =
        h->n_samples > FTC__LH_SAMPLES ? h->n_samples - FTC__LH_SAMPLES : 0;
    for (uint64_t k = first; samples != NULL && k < h->n_samples; k++) {
        const ftc__lh_sample *s = &h->samples[k % FTC__LH_SAMPLES];
        if (!append(samples,
                    json_pack("[I, I, I]", (json_int_t)s->wall_ms,
                              (json_int_t)s->step, (json_int_t)s->members))) {
            json_decref(samples);
            samples = NULL;
        }
    }
    json_t *failures = json_array();
    first =
        h->n_failures > FTC__LH_FAILURES ? h->n_failures - FTC__LH_FAILURES : 0;
    for (uint64_t k = first; failures != NULL && k < h->n_failures; k++) {
        if (!append(failures,
                    failure_json(&h->failures[k % FTC__LH_FAILURES]))) {
            json_decref(failures);
            failures = NULL;
        }
    }
    json_t *j = json_pack("{s:i, s:o*, s:o*}", "sample_ms", FTC__LH_SAMPLE_MS,
                          "samples", samples, "failures", failures);
    return samples != NULL && failures != NULL ? j : (json_decref(j), NULL);
}

/* A heal in progress as its leader last reported it, with its rate. */
static json_t *heal_progress_json(const ftc_lighthouse_replica_stats *t,
                                  int64_t wall)
{
    if (t->healing_from[0] == '\0') {
        return json_null();
    }
    int64_t ms = wall - t->healing_started_wall_ms;
    return json_pack("{s:s, s:I, s:I, s:I, s:f}", "from", t->healing_from,
                     "bytes", (json_int_t)t->healing_bytes, "total_bytes",
                     (json_int_t)t->healing_total_bytes, "started_wall_ms",
                     (json_int_t)t->healing_started_wall_ms, "bytes_per_s",
                     ms > 0 ? (double)t->healing_bytes * 1000.0 / (double)ms
                            : 0.0);
}

static json_t *replica_json(const ftc__lh_replica *x, int64_t wall)
{
    ftc_lighthouse_replica_stats t;
    ftc__lh_replica_totals(x, &t);
    json_t *failures = json_object();
    for (int c = 0; failures != NULL && c < FTC__LH_CAUSES; c++) {
        if (!put(failures, ftc__lh_cause_names[c],
                 json_integer((json_int_t)x->failures[c]))) {
            json_decref(failures);
            failures = NULL;
        }
    }
    return json_pack(
        "{s:s, s:s, s:o, s:I, s:I, s:I, s:f, s:I, s:o*, s:o*, s:I}",
        "replica_id", x->replica_id, "group", x->group, "step",
        or_null(x->step), "incarnations", (json_int_t)x->incarnations, "heals",
        (json_int_t)t.heals, "heal_bytes", (json_int_t)t.heal_bytes,
        "heal_seconds", t.heal_seconds, "served_bytes",
        (json_int_t)t.served_bytes, "failures", failures, "healing",
        heal_progress_json(&t, wall), "seen_wall_ms",
        (json_int_t)x->seen_wall_ms);
}

/* Every replica group the job has seen, by name. */
static json_t *replicas_json(const ftc__lh_replicas *r, int64_t wall)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < r->n; i++) {
        if (!append(arr, replica_json(&r->v[i], wall))) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

json_t *ftc__lighthouse_status_json(ftc__lighthouse_job *job, int64_t now,
                                    int64_t wall)
{
    ftc__quorum_decision d;
    if (ftc__quorum_compute(now, &job->s, &job->o, &d) != 0) {
        return NULL;
    }
    int64_t id = job->s.has_prev ? job->s.prev.quorum_id : 0;
    json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "job",
                          job->name, "epoch", (json_int_t)job->epoch,
                          "quorum_id", (json_int_t)id, "counter",
                          (json_int_t)ftc__quorum_id_counter(id), "now_wall_ms",
                          (json_int_t)wall, "event_seq", (json_int_t)job->seq,
                          "joins_waiting", (json_int_t)job->n_joins,
                          "watches_waiting", (json_int_t)job->n_watches);
    bool ok = put(j, "decision", decision_json(&d, now)) &&
              put(j, "committed_step", json_integer(job->s.mark.step)) &&
              put(j, "left_out", left_out_json(&job->s, now)) &&
              put(j, "quorum",
                  job->s.has_prev ? quorum_status_json(&job->s.prev, wall)
                                  : json_null()) &&
              put(j, "options", ftc__lhj_job_options_json(&job->o)) &&
              put(j, "summary", summary_json(&job->hist, wall)) &&
              put(j, "history", history_json(&job->hist)) &&
              put(j, "replicas", replicas_json(&job->reps, wall));
    ftc__quorum_decision_fini(&d);
    return ok ? tables_json(job, now, j) : (json_decref(j), NULL);
}

static int by_name(const void *a, const void *b)
{
    const ftc__lighthouse_job *const *x = a;
    const ftc__lighthouse_job *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

ftc__lighthouse_job **ftc__lighthouse_sorted_jobs(ftc_lighthouse *lh, size_t *n)
{
    *n = 0;
    ftc__lighthouse_job **v =
        lh->n_jobs > 0 ? ftc__malloc(lh->n_jobs * sizeof(*v)) : NULL;
    for (ftc__lighthouse_job *j = lh->jobs; v != NULL && j != NULL;
         j = j->next) {
        v[(*n)++] = j;
    }
    if (v != NULL) {
        qsort(v, *n, sizeof(*v), by_name);
    }
    return v;
}

static json_t *job_row(ftc__lighthouse_job *job, int64_t now)
{
    ftc__quorum_decision d;
    if (ftc__quorum_compute(now, &job->s, &job->o, &d) != 0) {
        return NULL;
    }
    int64_t id = job->s.has_prev ? job->s.prev.quorum_id : 0;
    json_t *row = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:b}", "name", job->name,
        "epoch", (json_int_t)job->epoch, "quorum_id", (json_int_t)id, "counter",
        (json_int_t)ftc__quorum_id_counter(id), "members",
        (json_int_t)job->s.prev.n, "participants",
        (json_int_t)job->s.n_participants, "healthy_replicas",
        (json_int_t)d.healthy_replicas, "verdict", verdict_name(d.verdict),
        "met", (int)d.met);
    ftc__quorum_decision_fini(&d);
    char headline[512];
    ftc__lh_history_headline(&job->hist, ftc__wall_ms(), headline,
                             sizeof(headline));
    return put(row, "headline", json_string(headline))
               ? row
               : (json_decref(row), NULL);
}

json_t *ftc__lighthouse_jobs_json(ftc_lighthouse *lh, int64_t now)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&lh->mu);
    size_t n;
    ftc__lighthouse_job **v = ftc__lighthouse_sorted_jobs(lh, &n);
    if (v == NULL && lh->n_jobs > 0) {
        json_decref(arr);
        arr = NULL;
    }
    for (size_t i = 0; arr != NULL && i < n; i++) {
        pthread_mutex_lock(&v[i]->mu);
        json_t *row = job_row(v[i], now);
        pthread_mutex_unlock(&v[i]->mu);
        if (!append(arr, row)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    pthread_mutex_unlock(&lh->mu);
    ftc__free(v);
    json_t *j = arr != NULL ? json_pack("{s:o}", "jobs", arr) : NULL;
    if (j == NULL) {
        ftc__seterr(FTC_ENOMEM, "jobs list");
    }
    return j;
}
