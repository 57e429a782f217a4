/* The lighthouse's Prometheus metrics (GET /metrics): the server's, each
 * job's and each replica group's, read under the locks and written after
 * (docs/operations.md lists them). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ft/lighthouse/lighthouse.h"

/* One job's numbers, copied under its lock. */
typedef struct job_numbers {
    char name[FTC_LIGHTHOUSE_JOB_MAX];
    uint64_t counter, quorums, members, participants, healthy;
    uint64_t changes[4], lost[4], commits[4], answers[4], bodies[4];
    uint64_t buckets[FTC__LH_WAIT_BUCKETS], wait_count;
    double wait_sum;
    uint64_t max_step;
    ftc__lh_recovery recovery[FTC__LH_RECOVERY_KINDS];
    double steps_per_s;
    ftc__lh_replica *reps; /* a copy; NULL when none (or no memory) */
    size_t n_reps;
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
    memcpy(n->commits, job->commits_total, sizeof(n->commits));
    memcpy(n->answers, job->answers_total, sizeof(n->answers));
    memcpy(n->bodies, job->bodies_total, sizeof(n->bodies));
    memcpy(n->buckets, job->wait_buckets, sizeof(n->buckets));
    n->wait_count = job->wait_count;
    n->wait_sum = job->wait_sum_s;
    memcpy(n->recovery, job->hist.recovery, sizeof(n->recovery));
    n->steps_per_s = ftc__lh_history_rate(&job->hist, ftc__wall_ms());
    n->reps =
        job->reps.n > 0 ? ftc__malloc(job->reps.n * sizeof(*n->reps)) : NULL;
    n->n_reps = n->reps != NULL ? job->reps.n : 0;
    if (n->reps != NULL) {
        memcpy(n->reps, job->reps.v, n->n_reps * sizeof(*n->reps));
    }
    n->max_step = 0;
    for (size_t i = 0; i < job->s.prev.n; i++) {
        uint64_t st = (uint64_t)job->s.prev.members[i].step; /* >= 0 */
        n->max_step = st > n->max_step ? st : n->max_step;
    }
}

static int family(ftc__buf *b, const char *name, const char *type,
                  const char *help)
{
    return ftc__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                           type);
}

/* One family of per-job numbers at offset in job_numbers: a single value
 * per job, or (with labels) one per cause 1..3 of an array of four. */
/* A per-job family; with causes, one series per cause (slots 1-3 of a
 * uint64_t[4], up to the first NULL) under the label named label. */
typedef struct family_def {
    const char *name, *type, *help;
    size_t offset;
    const char *const *causes;
    const char *label;
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
             rc == 0 && k < (f->causes != NULL ? 4 : 1) &&
             (f->causes == NULL || f->causes[k] != NULL);
             k++) {
            if (f->causes != NULL) {
                rc = ftc__buf_printf(
                    b, "%s{ftc_job=\"%s\",%s=\"%s\"} %" PRIu64 "\n", f->name,
                    v[i].name, f->label, f->causes[k], x[k]);
            } else {
                rc = ftc__buf_printf(b, "%s{ftc_job=\"%s\"} %" PRIu64 "\n",
                                     f->name, v[i].name, x[0]);
            }
        }
    }
    return rc;
}

/* One series of a histogram: buckets (cumulative), +Inf, sum, count;
 * labels are "ftc_job=\"x\"" and maybe more. */
static int series(ftc__buf *b, const char *name, const char *labels,
                  const double *bounds, const uint64_t *buckets, size_t n,
                  uint64_t count, double sum)
{
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        rc = ftc__buf_printf(b, "%s_bucket{%s,le=\"%g\"} %" PRIu64 "\n", name,
                             labels, bounds[k], buckets[k]);
    }
    return rc != 0 ? rc
                   : ftc__buf_printf(b,
                                     "%s_bucket{%s,le=\"+Inf\"} %" PRIu64
                                     "\n%s_sum{%s} %.6f\n%s_count{%s} %" PRIu64
                                     "\n",
                                     name, labels, count, name, labels, sum,
                                     name, labels, count);
}

static int histograms(ftc__buf *b, const job_numbers *v, size_t n)
{
    const char *wait = "ftc_lighthouse_join_wait_seconds";
    int rc = family(b, wait, "histogram",
                    "Time from a join request to its quorum answer.");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char labels[FTC_LIGHTHOUSE_JOB_MAX + 16];
        snprintf(labels, sizeof(labels), "ftc_job=\"%s\"", v[i].name);
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
            snprintf(labels, sizeof(labels), "ftc_job=\"%s\",kind=\"%s\"",
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
        rc = ftc__buf_printf(b, "%s{ftc_job=\"%s\"} %.3f\n", rate, v[i].name,
                             v[i].steps_per_s);
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
        rc = ftc__buf_printf(
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
        rc = ftc__buf_printf(b, "ftc_lighthouse_connections %u\n",
                             di != NULL ? di->num_connections : 0);
    }
    uint64_t refused, strangers;
    ftc__http_admit_counts(&lh->admit, &refused, &strangers);
    if (rc == 0) {
        rc = family(b, "ftc_lighthouse_connections_refused_total", "counter",
                    "Connections refused at accept: from addresses that "
                    "never sent the token, past their share of the table.");
    }
    if (rc == 0) {
        rc = ftc__buf_printf(b,
                             "ftc_lighthouse_connections_refused_total "
                             "%" PRIu64 "\n",
                             refused);
    }
    if (rc == 0) {
        rc = family(b, "ftc_lighthouse_stranger_connections", "gauge",
                    "Open connections from addresses that never sent the "
                    "token.");
    }
    if (rc == 0) {
        rc = ftc__buf_printf(
            b, "ftc_lighthouse_stranger_connections %" PRIu64 "\n", strangers);
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
    return rc == 0 ? ftc__buf_printf(b, "ftc_lighthouse_jobs %zu\n", jobs) : rc;
}

static int job_metrics(ftc__buf *b, const job_numbers *v, size_t n)
{
    static const char *const changes[4] = {"", "first", "membership",
                                           "commit_failures"};
    static const char *const lost[4] = {"", "disconnect", "heartbeat",
                                        "goodbye"};
    static const char *const shapes[4] = {"", "full", "compact", "delta"};
    static const char *const verdicts[4] = {"", "granted", "refused", NULL};
#define OFF(f) offsetof(job_numbers, f)
    static const family_def defs[] = {
        {"ftc_lighthouse_quorum_counter", "gauge",
         "Low half (counter) of the current quorum id.", OFF(counter), NULL,
         NULL},
        {"ftc_lighthouse_quorums_total", "counter",
         "Quorums formed (one per step).", OFF(quorums), NULL, NULL},
        {"ftc_lighthouse_quorum_changes_total", "counter",
         "Quorum id changes by cause.", OFF(changes), changes, "cause"},
        {"ftc_lighthouse_members", "gauge", "Members of the current quorum.",
         OFF(members), NULL, NULL},
        {"ftc_lighthouse_participants", "gauge",
         "Replicas waiting for the next quorum.", OFF(participants), NULL,
         NULL},
        {"ftc_lighthouse_healthy_replicas", "gauge",
         "Replicas with a live heartbeat.", OFF(healthy), NULL, NULL},
        {"ftc_lighthouse_member_lost_total", "counter",
         "Replicas found dead or gone, by cause.", OFF(lost), lost, "cause"},
        {"ftc_lighthouse_commits_total", "counter",
         "Commits members asked for, granted or refused (a member the "
         "lighthouse reported lost, a quorum over).",
         OFF(commits), verdicts, "verdict"},
        {"ftc_lighthouse_max_step", "gauge",
         "Highest step in the current quorum.", OFF(max_step), NULL, NULL},
        {"ftc_lighthouse_join_answers_total", "counter",
         "Quorum answers sent, by shape (compact: the round's part only).",
         OFF(answers), shapes, "shape"},
        {"ftc_lighthouse_join_bodies_total", "counter",
         "Quorum answer bodies built, by shape (at most one of each per "
         "quorum).",
         OFF(bodies), shapes, "shape"},
    };
#undef OFF
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(defs) / sizeof(defs[0]); i++) {
        rc = per_job(b, v, n, &defs[i]);
    }
    return rc == 0 ? histograms(b, v, n) : rc;
}

/* s with Prometheus' label escapes (\\, \", \n) into out (cap bytes). */
static const char *label(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s != '\0' && k + 3 < cap; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            out[k++] = '\\';
        }
        out[k++] = *s == '\n' ? 'n' : *s;
    }
    out[k] = '\0';
    return out;
}

/* The figures shown per replica group. */
typedef enum replica_figure {
    R_STEP,
    R_INCARNATIONS,
    R_FAILURES, /* one sample per cause */
    R_HEALS,
    R_HEAL_BYTES,
    R_HEAL_SECONDS,
    R_SERVED_BYTES,
    R_HEALING_BYTES,
} replica_figure;

typedef struct replica_family {
    const char *name, *type, *help;
    replica_figure what;
} replica_family;

static double replica_value(const ftc__lh_replica *x, replica_figure what,
                            int cause)
{
    ftc_lighthouse_replica_stats t;
    ftc__lh_replica_totals(x, &t);
    switch (what) {
    case R_STEP:
        return (double)(x->step > 0 ? x->step : 0);
    case R_INCARNATIONS:
        return (double)x->incarnations;
    case R_FAILURES:
        return (double)x->failures[cause];
    case R_HEALS:
        return (double)t.heals;
    case R_HEAL_BYTES:
        return (double)t.heal_bytes;
    case R_HEAL_SECONDS:
        return t.heal_seconds;
    case R_SERVED_BYTES:
        return (double)t.served_bytes;
    case R_HEALING_BYTES:
        return t.healing_from[0] != '\0' ? (double)t.healing_bytes : 0;
    }
    return 0;
}

static int replica_family_out(ftc__buf *b, const job_numbers *v, size_t n,
                              const replica_family *f)
{
    int rc = family(b, f->name, f->type, f->help);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char job[2 * FTC_LIGHTHOUSE_JOB_MAX], rep[2 * FTC__QUORUM_STR_MAX];
        label(v[i].name, job, sizeof(job));
        for (size_t r = 0; rc == 0 && r < v[i].n_reps; r++) {
            const ftc__lh_replica *x = &v[i].reps[r];
            label(x->group, rep, sizeof(rep));
            bool by_cause = f->what == R_FAILURES;
            for (int c = 0; rc == 0 && c < (by_cause ? FTC__LH_CAUSES : 1);
                 c++) {
                rc = by_cause
                         ? ftc__buf_printf(b,
                                           "%s{ftc_job=\"%s\",replica=\"%s\","
                                           "cause=\"%s\"} %.17g\n",
                                           f->name, job, rep,
                                           ftc__lh_cause_names[c],
                                           replica_value(x, f->what, c))
                         : ftc__buf_printf(
                               b, "%s{ftc_job=\"%s\",replica=\"%s\"} %.17g\n",
                               f->name, job, rep, replica_value(x, f->what, 0));
            }
        }
    }
    return rc;
}

static int replica_metrics(ftc__buf *b, const job_numbers *v, size_t n)
{
    static const replica_family defs[] = {
        {"ftc_lighthouse_replica_step", "gauge",
         "The replica group's committed steps in its latest quorum.", R_STEP},
        {"ftc_lighthouse_replica_incarnations_total", "counter",
         "Processes of the replica group seen (1 + restarts).", R_INCARNATIONS},
        {"ftc_lighthouse_replica_failures_total", "counter",
         "Failures of the replica group by cause (an operator's kill is "
         "one).",
         R_FAILURES},
        {"ftc_lighthouse_replica_heals_total", "counter",
         "States the replica group's leader healed from others.", R_HEALS},
        {"ftc_lighthouse_replica_heal_bytes_total", "counter",
         "Bytes its leader received by healing.", R_HEAL_BYTES},
        {"ftc_lighthouse_replica_heal_seconds_total", "counter",
         "Time its leader's heal transfers took.", R_HEAL_SECONDS},
        {"ftc_lighthouse_replica_served_bytes_total", "counter",
         "Bytes its leader's heal server sent to healing replicas.",
         R_SERVED_BYTES},
        {"ftc_lighthouse_replica_healing_bytes", "gauge",
         "Bytes received so far by a heal in progress (0: none).",
         R_HEALING_BYTES},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(defs) / sizeof(defs[0]); i++) {
        rc = replica_family_out(b, v, n, &defs[i]);
    }
    return rc;
}

ftc__lighthouse_blob *ftc__lighthouse_metrics(ftc_lighthouse *lh, int64_t now)
{
    pthread_mutex_lock(&lh->mu);
    size_t n;
    ftc__lighthouse_job **jobs = ftc__lighthouse_sorted_jobs(lh, &n);
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
    if (rc == 0) {
        rc = replica_metrics(&b, v, n);
    }
    for (size_t i = 0; v != NULL && i < n; i++) {
        ftc__free(v[i].reps);
    }
    ftc__free(v);
    ftc__lighthouse_blob *blob = rc == 0 ? ftc__lighthouse_blob_buf(&b) : NULL;
    ftc__buf_free(&b);
    return blob;
}
