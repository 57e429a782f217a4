/* What the lighthouse shows: a job's status JSON (one locked snapshot),
 * the jobs list, Prometheus metrics and the dashboard page. */
#include <inttypes.h>
#include <stdarg.h>
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
    static const char *const names[] = {"fast",      "need_min",
                                        "need_half", "wait_straggler",
                                        "valid",     "none_left"};
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

static bool has_watch(const ftc__lighthouse_job *job, const char *replica_id)
{
    for (const ftc__lighthouse_req *r = job->watches; r != NULL; r = r->next) {
        if (strcmp(r->replica_id, replica_id) == 0) {
            return true;
        }
    }
    return false;
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
    for (size_t i = 0; hbs != NULL && i < job->s.n_heartbeats; i++) {
        const ftc__quorum_heartbeat_record *h = &job->s.heartbeats[i];
        bool healthy =
            ftc__quorum_is_healthy(&job->s, &job->o, h->replica_id, now);
        if (!append(hbs, json_pack("{s:s, s:I, s:b, s:b}", "replica_id",
                                   h->replica_id, "age_ms",
                                   (json_int_t)(now - h->last_ms), "healthy",
                                   (int)healthy, "watching",
                                   (int)has_watch(job, h->replica_id)))) {
            json_decref(hbs);
            hbs = NULL;
        }
    }
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
              put(j, "quorum",
                  job->s.has_prev ? quorum_status_json(&job->s.prev, wall)
                                  : json_null()) &&
              put(j, "options", ftc__lhj_job_options_json(&job->o)) &&
              put(j, "summary", summary_json(&job->hist, wall)) &&
              put(j, "history", history_json(&job->hist));
    ftc__quorum_decision_fini(&d);
    return ok ? tables_json(job, now, j) : (json_decref(j), NULL);
}

static int by_name(const void *a, const void *b)
{
    const ftc__lighthouse_job *const *x = a;
    const ftc__lighthouse_job *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* The jobs in name order, with lh->mu held. NULL when there are none or on
 * FTC_ENOMEM (*n says which). */
static ftc__lighthouse_job **sorted_jobs(ftc_lighthouse *lh, size_t *n)
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
    ftc__lh_history_headline(&job->hist, ftc__lighthouse_wall_ms(), headline,
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
    ftc__lighthouse_job **v = sorted_jobs(lh, &n);
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

/* ------------------------------------------------------------- metrics */

/* One job's numbers, copied under its lock. */
typedef struct job_numbers {
    char name[FTC_LIGHTHOUSE_JOB_MAX];
    uint64_t counter, quorums, members, participants, healthy;
    uint64_t changes[4], lost[4];
    uint64_t buckets[FTC__LH_WAIT_BUCKETS], wait_count;
    double wait_sum;
    uint64_t max_step;
    ftc__lh_recovery recovery[FTC__LH_RECOVERY_KINDS];
    double steps_per_s;
} job_numbers;

static void snapshot(ftc__lighthouse_job *job, int64_t now, job_numbers *n)
{
    memcpy(n->name, job->name, sizeof(n->name));
    n->counter =
        job->s.has_prev ? ftc__quorum_id_counter(job->s.prev.quorum_id) : 0;
    n->quorums = job->quorums_total;
    n->members = job->s.prev.n;
    n->participants = job->s.n_participants;
    n->healthy = 0;
    for (size_t i = 0; i < job->s.n_heartbeats; i++) {
        n->healthy += ftc__quorum_is_healthy(
            &job->s, &job->o, job->s.heartbeats[i].replica_id, now);
    }
    memcpy(n->changes, job->changes_total, sizeof(n->changes));
    memcpy(n->lost, job->lost_total, sizeof(n->lost));
    memcpy(n->buckets, job->wait_buckets, sizeof(n->buckets));
    n->wait_count = job->wait_count;
    n->wait_sum = job->wait_sum_s;
    memcpy(n->recovery, job->hist.recovery, sizeof(n->recovery));
    n->steps_per_s =
        ftc__lh_history_rate(&job->hist, ftc__lighthouse_wall_ms());
    n->max_step = 0;
    for (size_t i = 0; i < job->s.prev.n; i++) {
        uint64_t st = (uint64_t)job->s.prev.members[i].step; /* >= 0 */
        n->max_step = st > n->max_step ? st : n->max_step;
    }
}

static int out(ftc__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int out(ftc__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int rc = n < 0 ? FTC_EINVAL : ftc__buf_reserve(b, (size_t)n + 1);
    if (rc == 0) {
        va_start(ap, fmt);
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
    }
    return rc;
}

static int family(ftc__buf *b, const char *name, const char *type,
                  const char *help)
{
    return out(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One family of per-job numbers at offset in job_numbers: a single value
 * per job, or (with labels) one per cause 1..3 of an array of four. */
typedef struct family_def {
    const char *name, *type, *help;
    size_t offset;
    const char *const *causes;
} family_def;

static int per_job(ftc__buf *b, const job_numbers *v, size_t n,
                   const family_def *f)
{
    int rc = family(b, f->name, f->type, f->help);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t x[4];
        memcpy(x, (const char *)&v[i] + f->offset,
               (f->causes != NULL ? 4 : 1) * sizeof(uint64_t));
        for (int k = f->causes != NULL ? 1 : 0;
             rc == 0 && k < (f->causes != NULL ? 4 : 1); k++) {
            if (f->causes != NULL) {
                rc = out(b, "%s{job=\"%s\",cause=\"%s\"} %" PRIu64 "\n",
                         f->name, v[i].name, f->causes[k], x[k]);
            } else {
                rc = out(b, "%s{job=\"%s\"} %" PRIu64 "\n", f->name, v[i].name,
                         x[0]);
            }
        }
    }
    return rc;
}

/* One series of a histogram: buckets (cumulative), +Inf, sum, count;
 * labels are "job=\"x\"" and maybe more. */
static int series(ftc__buf *b, const char *name, const char *labels,
                  const double *bounds, const uint64_t *buckets, size_t n,
                  uint64_t count, double sum)
{
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        rc = out(b, "%s_bucket{%s,le=\"%g\"} %" PRIu64 "\n", name, labels,
                 bounds[k], buckets[k]);
    }
    return rc != 0 ? rc
                   : out(b,
                         "%s_bucket{%s,le=\"+Inf\"} %" PRIu64
                         "\n%s_sum{%s} %.6f\n%s_count{%s} %" PRIu64 "\n",
                         name, labels, count, name, labels, sum, name, labels,
                         count);
}

static int histograms(ftc__buf *b, const job_numbers *v, size_t n)
{
    const char *wait = "ftc_lighthouse_join_wait_seconds";
    int rc = family(b, wait, "histogram",
                    "Time from a join request to its quorum answer.");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char labels[FTC_LIGHTHOUSE_JOB_MAX + 16];
        snprintf(labels, sizeof(labels), "job=\"%s\"", v[i].name);
        rc = series(b, wait, labels, ftc__lighthouse_wait_bounds, v[i].buckets,
                    FTC__LH_WAIT_BUCKETS, v[i].wait_count, v[i].wait_sum);
    }
    static const char *const kinds[FTC__LH_RECOVERY_KINDS] = {"survivors",
                                                              "back"};
    const char *rec = "ftc_lighthouse_recovery_seconds";
    if (rc == 0) {
        rc = family(b, rec, "histogram",
                    "From a replica group's loss to the others' next step "
                    "(kind survivors) and to its own (kind back).");
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        for (int k = 0; rc == 0 && k < FTC__LH_RECOVERY_KINDS; k++) {
            char labels[FTC_LIGHTHOUSE_JOB_MAX + 48];
            snprintf(labels, sizeof(labels), "job=\"%s\",kind=\"%s\"",
                     v[i].name, kinds[k]);
            const ftc__lh_recovery *r = &v[i].recovery[k];
            rc = series(b, rec, labels, ftc__lh_recovery_bounds, r->buckets,
                        FTC__LH_RECOVERY_BUCKETS, r->count, r->sum_s);
        }
    }
    const char *rate = "ftc_lighthouse_steps_per_second";
    if (rc == 0) {
        rc = family(b, rate, "gauge",
                    "Committed steps per second over the last 10 s.");
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = out(b, "%s{job=\"%s\"} %.3f\n", rate, v[i].name, v[i].steps_per_s);
    }
    return rc;
}

static int server_metrics(ftc__buf *b, ftc_lighthouse *lh, size_t jobs)
{
    int rc = family(b, "ftc_lighthouse_http_requests_total", "counter",
                    "HTTP responses by status code.");
    for (size_t i = 0; rc == 0 && i < FTC__LH_NCODES; i++) {
        uint64_t x = atomic_load_explicit(&lh->http[i], memory_order_relaxed);
        char code[16];
        snprintf(code, sizeof(code), "%u", ftc__lighthouse_codes[i]);
        rc = out(
            b, "ftc_lighthouse_http_requests_total{code=\"%s\"} %" PRIu64 "\n",
            ftc__lighthouse_codes[i] != 0 ? code : "other", x);
    }
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(lh->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (rc == 0) {
        rc = family(b, "ftc_lighthouse_connections", "gauge",
                    "Open HTTP connections.");
    }
    if (rc == 0) {
        rc = out(b, "ftc_lighthouse_connections %u\n",
                 di != NULL ? di->num_connections : 0);
    }
    static const char *const kinds[FTC__LH_REQ_KINDS] = {"short", "join",
                                                         "watch"};
    const char *lat = "ftc_lighthouse_request_seconds";
    if (rc == 0) {
        rc = family(b, lat, "histogram",
                    "From a request's arrival to its answer, by kind (join "
                    "and watch are long-polls that wait by design).");
    }
    for (int k = 0; rc == 0 && k < FTC__LH_REQ_KINDS; k++) {
        uint64_t buckets[FTC__LH_REQ_BUCKETS];
        for (size_t i = 0; i < FTC__LH_REQ_BUCKETS; i++) {
            buckets[i] = atomic_load_explicit(&lh->req_buckets[k][i],
                                              memory_order_relaxed);
        }
        char labels[32];
        snprintf(labels, sizeof(labels), "kind=\"%s\"", kinds[k]);
        rc = series(
            b, lat, labels, ftc__lighthouse_req_bounds, buckets,
            FTC__LH_REQ_BUCKETS,
            atomic_load_explicit(&lh->req_count[k], memory_order_relaxed),
            (double)atomic_load_explicit(&lh->req_sum_us[k],
                                         memory_order_relaxed) /
                1e6);
    }
    if (rc == 0) {
        rc = family(b, "ftc_lighthouse_jobs", "gauge", "Jobs.");
    }
    return rc == 0 ? out(b, "ftc_lighthouse_jobs %zu\n", jobs) : rc;
}

static int job_metrics(ftc__buf *b, const job_numbers *v, size_t n)
{
    static const char *const changes[4] = {"", "first", "membership",
                                           "commit_failures"};
    static const char *const lost[4] = {"", "disconnect", "heartbeat",
                                        "goodbye"};
#define OFF(f) offsetof(job_numbers, f)
    static const family_def defs[] = {
        {"ftc_lighthouse_quorum_counter", "gauge",
         "Low half (counter) of the current quorum id.", OFF(counter), NULL},
        {"ftc_lighthouse_quorums_total", "counter",
         "Quorums formed (one per step).", OFF(quorums), NULL},
        {"ftc_lighthouse_quorum_changes_total", "counter",
         "Quorum id changes by cause.", OFF(changes), changes},
        {"ftc_lighthouse_members", "gauge", "Members of the current quorum.",
         OFF(members), NULL},
        {"ftc_lighthouse_participants", "gauge",
         "Replicas waiting for the next quorum.", OFF(participants), NULL},
        {"ftc_lighthouse_healthy_replicas", "gauge",
         "Replicas with a live heartbeat.", OFF(healthy), NULL},
        {"ftc_lighthouse_member_lost_total", "counter",
         "Replicas found dead or gone, by cause.", OFF(lost), lost},
        {"ftc_lighthouse_max_step", "gauge",
         "Highest step in the current quorum.", OFF(max_step), NULL},
    };
#undef OFF
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(defs) / sizeof(defs[0]); i++) {
        rc = per_job(b, v, n, &defs[i]);
    }
    return rc == 0 ? histograms(b, v, n) : rc;
}

ftc__lighthouse_blob *ftc__lighthouse_metrics(ftc_lighthouse *lh, int64_t now)
{
    pthread_mutex_lock(&lh->mu);
    size_t n;
    ftc__lighthouse_job **jobs = sorted_jobs(lh, &n);
    job_numbers *v = n > 0 ? ftc__calloc(n, sizeof(*v)) : NULL;
    for (size_t i = 0; v != NULL && i < n; i++) {
        pthread_mutex_lock(&jobs[i]->mu);
        snapshot(jobs[i], now, &v[i]);
        pthread_mutex_unlock(&jobs[i]->mu);
    }
    pthread_mutex_unlock(&lh->mu);
    ftc__free(jobs);
    ftc__buf b;
    ftc__buf_init(&b, 64u << 20);
    int rc = n > 0 && v == NULL ? FTC_ENOMEM : server_metrics(&b, lh, n);
    if (rc == 0) {
        rc = job_metrics(&b, v, n);
    }
    ftc__free(v);
    ftc__lighthouse_blob *blob =
        rc == 0 ? ftc__malloc(sizeof(*blob) + b.len + 1) : NULL;
    if (blob != NULL) {
        atomic_init(&blob->refs, 1);
        blob->len = b.len;
        memcpy(blob->data, b.data, b.len);
        blob->data[b.len] = '\0';
    }
    ftc__buf_free(&b);
    return blob;
}
