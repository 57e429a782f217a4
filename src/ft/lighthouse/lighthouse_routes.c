/* The lighthouse HTTP API v1 (docs/protocol.md): URL routing, methods,
 * auth rules, request decoding, and the calls into the job layer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse/lighthouse_json.h"

typedef enum route_id {
    R_NONE,
    R_PAGE,
    R_CHART_JS,
    R_METRICS,
    R_JOBS,
    R_JOB, /* PUT options, GET = status, DELETE */
    R_HEARTBEAT,
    R_QUORUM,
    R_WATCH,
    R_GOODBYE,
    R_COMMIT,
    R_STATUS,
    R_KILL,
} route_id;

typedef struct route {
    route_id id;
    char job[FTC_LIGHTHOUSE_JOB_MAX + 1]; /* one more: too long is seen */
    char replica_id[FTC__QUORUM_STR_MAX + 1];
} route;

static const struct {
    const char *name;
    route_id id;
    const char *method;
} actions[] = {
    {"heartbeat", R_HEARTBEAT, "POST"}, {"quorum", R_QUORUM, "POST"},
    {"watch", R_WATCH, "GET"},          {"goodbye", R_GOODBYE, "POST"},
    {"commit", R_COMMIT, "POST"},       {"status", R_STATUS, "GET"},
};

/* Copies at most cap - 1 bytes of s (truncation shows as a full buffer). */
static void copy_n(char *dst, size_t cap, const char *s, size_t n)
{
    n = n < cap - 1 ? n : cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void parse(const char *url, route *rt)
{
    memset(rt, 0, sizeof(*rt));
    if (strcmp(url, "/") == 0) {
        rt->id = R_PAGE;
        return;
    }
    if (strcmp(url, "/assets/chart.min.js") == 0) {
        rt->id = R_CHART_JS;
        return;
    }
    if (strcmp(url, "/metrics") == 0) {
        rt->id = R_METRICS;
        return;
    }
    if (strcmp(url, "/v1/jobs") == 0 || strcmp(url, "/v1/jobs/") == 0) {
        rt->id = R_JOBS;
        return;
    }
    if (strncmp(url, "/v1/jobs/", 9) != 0) {
        return;
    }
    const char *p = url + 9;
    size_t n = strcspn(p, "/");
    copy_n(rt->job, sizeof(rt->job), p, n);
    p += n;
    if (*p == '\0') {
        rt->id = R_JOB;
        return;
    }
    p++;
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
        if (strcmp(p, actions[i].name) == 0) {
            rt->id = actions[i].id;
            return;
        }
    }
    /* replicas/{replica_id}/kill; a replica_id may contain '/'. */
    size_t len = strlen(p);
    if (strncmp(p, "replicas/", 9) == 0 && len > 14 &&
        strcmp(p + len - 5, "/kill") == 0) {
        copy_n(rt->replica_id, sizeof(rt->replica_id), p + 9, len - 14);
        rt->id = R_KILL;
    }
}

static bool is_write(route_id id, const char *method)
{
    switch (id) {
    case R_HEARTBEAT:
    case R_QUORUM:
    case R_WATCH:
    case R_GOODBYE:
    case R_COMMIT:
    case R_KILL:
        return true;
    case R_JOB:
        return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    default:
        return false;
    }
}

bool ftc__lighthouse_route_needs_token(const ftc_lighthouse *lh,
                                       const char *method, const char *url)
{
    route rt;
    parse(url, &rt);
    if (rt.id == R_NONE) {
        return !lh->public_reads;
    }
    return is_write(rt.id, method) || !lh->public_reads;
}

static const char *method_of(route_id id)
{
    for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
        if (actions[i].id == id) {
            return actions[i].method;
        }
    }
    return id == R_KILL ? "POST" : "GET";
}

static bool method_ok(route_id id, const char *method)
{
    if (id == R_JOB) {
        return strcmp(method, "PUT") == 0 || strcmp(method, "GET") == 0 ||
               strcmp(method, "HEAD") == 0 || strcmp(method, "DELETE") == 0;
    }
    const char *want = method_of(id);
    return strcmp(method, want) == 0 ||
           (strcmp(want, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* ------------------------------------------------------------- helpers */

/* Errors of ftc__lighthouse_job_get and of the job calls, where FTC_EMSGSIZE is
 * a full table or too many jobs (429), not a long input (413, found while
 * decoding), and FTC_EFINISHED a join below the step its job finished at. */
static enum MHD_Result job_error(ftc__lighthouse_req *r, int rc,
                                 const char *full)
{
    if (rc == FTC_EMSGSIZE) {
        return ftc__lighthouse_queue_error(r, 429, full, ftc_last_error());
    }
    if (rc == FTC_EFINISHED) {
        return ftc__lighthouse_queue_error(r, 409, "job_finished",
                                           ftc_last_error());
    }
    return ftc__lighthouse_queue_ftc_error(r, rc);
}

/* After a job call with the job locked: takes r's answer if it was
 * answered inline, unlocks, resumes whatever the call answered, and
 * queues r's answer (or nothing: r was suspended). */
static enum MHD_Result finish(ftc__lighthouse_req *r, ftc__lighthouse_job *job,
                              int rc, ftc__lighthouse_blob *ack,
                              ftc__lighthouse_resume *rs)
{
    bool answered = r->state == FTC__LH_ANSWERED;
    ftc__lighthouse_blob *b = r->answer;
    r->answer = NULL;
    ftc__lighthouse_job_unlock(job);
    ftc__lighthouse_resume_all(rs);
    if (rc != 0) {
        ftc__lighthouse_blob_unref(ack);
        return job_error(r, rc, "table_full");
    }
    if (ack != NULL) {
        return ftc__lighthouse_queue(r, 200, "application/json", ack);
    }
    return answered ? ftc__lighthouse_queue(r, r->status, "application/json", b)
                    : MHD_YES;
}

static const char *query(ftc__lighthouse_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* An optional unsigned integer query argument. */
static int query_u64(ftc__lighthouse_req *r, const char *key, uint64_t max,
                     bool *has, uint64_t *out)
{
    const char *v = query(r, key);
    *has = v != NULL;
    if (v == NULL) {
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || x > max) {
        return ftc__seterr(FTC_EINVAL,
                           "query %s=%.40s: not an integer in "
                           "[0, %llu]",
                           key, v, (unsigned long long)max);
    }
    *out = x;
    return 0;
}

static const char *body(ftc__lighthouse_req *r, size_t *len)
{
    *len = ftc__buf_size(&r->body);
    return *len > 0 ? (const char *)ftc__buf_begin(&r->body) : "";
}

/* ------------------------------------------------------------ handlers */

/* The acknowledgement of a call that succeeded (*rc 0), or NULL; no
 * memory for it fails the call (*rc FTC_ENOMEM), which else would get
 * no answer at all. */
static ftc__lighthouse_blob *ack_of(ftc__lighthouse_job *job, int *rc)
{
    ftc__lighthouse_blob *ack = *rc == 0 ? ftc__lighthouse_job_ack(job) : NULL;
    if (*rc == 0 && ack == NULL) {
        *rc = ftc__seterr(FTC_ENOMEM, "the acknowledgement");
    }
    return ack;
}

/* heartbeat (creates the job; may carry the replica's stats) and goodbye
 * (does not; may carry the steps it committed): a replica_id in, an
 * acknowledgement out. */
static enum MHD_Result do_replica(ftc__lighthouse_req *r, const route *rt,
                                  bool goodbye)
{
    char id[FTC__QUORUM_STR_MAX];
    size_t len;
    const char *text = body(r, &len);
    ftc_lighthouse_replica_stats stats;
    bool has_stats = false;
    ftc__lhj_leaving left;
    int rc = ftc__lhj_replica_request(text, len, id, goodbye ? NULL : &stats,
                                      &has_stats, &left);
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(r->lh, rt->job, !goodbye, &job);
    if (rc != 0) {
        return job_error(r, rc, "too_many_jobs");
    }
    ftc__lighthouse_resume rs = {NULL};
    int64_t now = ftc__now_ms();
    rc = goodbye ? ftc__lighthouse_job_goodbye(job, id, left.step,
                                               left.finished, now, &rs)
                 : ftc__lighthouse_job_heartbeat(job, id, now, &rs);
    if (rc == 0 && has_stats) {
        ftc__lighthouse_job_report(job, id, &stats);
    }
    ftc__lighthouse_blob *ack = ack_of(job, &rc);
    return finish(r, job, rc, ack, &rs);
}

/* A member asks to commit a step of its quorum: an acknowledgement, or
 * 409 when the quorum is over for it. */
static enum MHD_Result do_commit(ftc__lighthouse_req *r, const route *rt)
{
    char id[FTC__QUORUM_STR_MAX];
    int64_t quorum_id, step;
    size_t len;
    const char *text = body(r, &len);
    int rc = ftc__lhj_commit_request(text, len, id, &quorum_id, &step);
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(r->lh, rt->job, false, &job);
    if (rc != 0) {
        return job_error(r, rc, "too_many_jobs");
    }
    ftc__lighthouse_resume rs = {NULL};
    rc = ftc__lighthouse_job_commit(job, id, quorum_id, step, ftc__now_ms(),
                                    &rs);
    ftc__lighthouse_blob *ack = ack_of(job, &rc);
    return finish(r, job, rc, ack, &rs);
}

static enum MHD_Result do_quorum(ftc__lighthouse_req *r, const route *rt)
{
    ftc__quorum_member m;
    int64_t timeout;
    size_t len;
    const char *text = body(r, &len);
    int rc = ftc__lhj_join_request(text, len, FTC__QUORUM_MAX_DATA_CEIL, &m,
                                   &timeout, &r->roster);
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(r->lh, rt->job, true, &job);
    if (rc != 0) {
        ftc__quorum_member_fini(&m);
        return job_error(r, rc, "too_many_jobs");
    }
    if (m.data_len > job->o.max_data_bytes) {
        size_t n = m.data_len;
        uint32_t max = job->o.max_data_bytes;
        ftc__lighthouse_job_unlock(job);
        ftc__quorum_member_fini(&m);
        ftc__seterr(FTC_EMSGSIZE, "member.data: %zu B > max %u B", n, max);
        return ftc__lighthouse_queue_ftc_error(r, FTC_EMSGSIZE);
    }
    ftc__lighthouse_resume rs = {NULL};
    rc = ftc__lighthouse_job_join(job, r, &m, timeout, ftc__now_ms(), &rs);
    ftc__quorum_member_fini(&m);
    return finish(r, job, rc, NULL, &rs);
}

static enum MHD_Result do_watch(ftc__lighthouse_req *r, const route *rt)
{
    const char *id = query(r, "replica_id");
    if (id != NULL && strlen(id) >= sizeof(r->replica_id)) {
        ftc__seterr(FTC_EMSGSIZE, "replica_id: %zu B > max %zu B", strlen(id),
                    sizeof(r->replica_id) - 1);
        return ftc__lighthouse_queue_ftc_error(r, FTC_EMSGSIZE);
    }
    bool has_epoch, has_since, has_timeout;
    uint64_t epoch = 0, since = 0, timeout = 0;
    int rc = query_u64(r, "epoch", UINT32_MAX, &has_epoch, &epoch);
    if (rc == 0) {
        rc = query_u64(r, "since", INT64_MAX, &has_since, &since);
    }
    if (rc == 0) {
        rc = query_u64(r, "timeout_ms", INT64_MAX, &has_timeout, &timeout);
    }
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    snprintf(r->replica_id, sizeof(r->replica_id), "%s", id != NULL ? id : "");
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(r->lh, rt->job, true, &job);
    if (rc != 0) {
        return job_error(r, rc, "too_many_jobs");
    }
    ftc__lighthouse_resume rs = {NULL};
    rc = ftc__lighthouse_job_watch(
        job, r, has_epoch, (uint32_t)epoch, has_since, since,
        has_timeout ? (int64_t)timeout : -1, ftc__now_ms(), &rs);
    return finish(r, job, rc, NULL, &rs);
}

static enum MHD_Result do_kill(ftc__lighthouse_req *r, const route *rt)
{
    if (!r->lh->has_token) {
        return ftc__lighthouse_queue_error(
            r, 403, "no_token_configured",
            "kill needs a lighthouse started with a "
            "token (--token-file or FTC_TOKEN)");
    }
    if (rt->replica_id[0] == '\0' ||
        strlen(rt->replica_id) >= FTC__QUORUM_STR_MAX) {
        return ftc__lighthouse_queue_error(r, 400, "invalid",
                                           "replica_id: empty or too long");
    }
    ftc__lighthouse_job *job;
    int rc = ftc__lighthouse_job_get(r->lh, rt->job, false, &job);
    if (rc != 0) {
        return job_error(r, rc, "too_many_jobs");
    }
    ftc__lighthouse_resume rs = {NULL};
    rc = ftc__lighthouse_job_kill(job, rt->replica_id, &rs);
    ftc__lighthouse_blob *ack = ack_of(job, &rc);
    return finish(r, job, rc, ack, &rs);
}

static enum MHD_Result do_configure(ftc__lighthouse_req *r, const route *rt)
{
    size_t len;
    const char *text = body(r, &len);
    json_t *obj;
    int rc = ftc__lhj_parse_object(text, len, &obj);
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(r->lh, rt->job, true, &job);
    if (rc != 0) {
        json_decref(obj);
        return job_error(r, rc, "too_many_jobs");
    }
    ftc__lighthouse_resume rs = {NULL};
    rc = ftc__lighthouse_job_configure(job, obj, ftc__now_ms(), &rs);
    json_decref(obj);
    ftc__lighthouse_blob *b = NULL;
    if (rc == 0) {
        json_t *j = json_pack("{s:s, s:I, s:o}", "job", job->name, "epoch",
                              (json_int_t)job->epoch, "options",
                              ftc__lhj_job_options_json(&job->o));
        b = j != NULL ? ftc__lighthouse_blob_json(j) : NULL;
        json_decref(j);
        rc = b == NULL ? ftc__seterr(FTC_ENOMEM, "answer") : 0;
    }
    /* FTC_EINVAL from the options is a bad request, nothing full. */
    return finish(r, job, rc, b, &rs);
}

static enum MHD_Result do_delete(ftc__lighthouse_req *r, const route *rt)
{
    int rc = ftc__lighthouse_job_delete(r->lh, rt->job, ftc__now_ms());
    if (rc == FTC_EEXIST || rc == FTC_EMISUSE) {
        return ftc__lighthouse_queue_error(
            r, 409, rc == FTC_EEXIST ? "job_in_use" : "declared_job",
            ftc_last_error());
    }
    if (rc != 0) {
        return ftc__lighthouse_queue_ftc_error(r, rc);
    }
    json_t *j = json_pack("{s:s, s:b}", "job", rt->job, "deleted", 1);
    enum MHD_Result ok = ftc__lighthouse_queue_json(r, 200, j);
    json_decref(j);
    return ok;
}

static enum MHD_Result do_status(ftc__lighthouse_req *r, const route *rt)
{
    ftc__lighthouse_job *job;
    int rc = ftc__lighthouse_job_get(r->lh, rt->job, false, &job);
    if (rc != 0) {
        return job_error(r, rc, "too_many_jobs");
    }
    json_t *j = ftc__lighthouse_status_json(job, ftc__now_ms(), ftc__wall_ms());
    ftc__lighthouse_job_unlock(job);
    enum MHD_Result ok = ftc__lighthouse_queue_json(r, 200, j);
    json_decref(j);
    return ok;
}

static enum MHD_Result do_read(ftc__lighthouse_req *r, route_id id)
{
    if (id == R_PAGE) {
        return ftc__lighthouse_queue(
            r, 200, "text/html; charset=utf-8",
            ftc__lighthouse_page(r->lh, query(r, "job")));
    }
    if (id == R_CHART_JS) {
        size_t len;
        const char *js = ftc__lighthouse_chart_js(&len);
        return ftc__lighthouse_queue_static(r, "text/javascript; charset=utf-8",
                                            js, len);
    }
    if (id == R_METRICS) {
        return ftc__lighthouse_queue(
            r, 200, "text/plain; version=0.0.4",
            ftc__lighthouse_metrics(r->lh, ftc__now_ms()));
    }
    json_t *j = ftc__lighthouse_jobs_json(r->lh, ftc__now_ms());
    enum MHD_Result ok = ftc__lighthouse_queue_json(r, 200, j);
    json_decref(j);
    return ok;
}

enum MHD_Result ftc__lighthouse_route(ftc__lighthouse_req *r,
                                      const char *method, const char *url)
{
    route rt;
    parse(url, &rt);
    if (rt.id == R_NONE) {
        return ftc__lighthouse_queue_error(r, 404, "not_found",
                                           "no such route");
    }
    if (!method_ok(rt.id, method)) {
        return ftc__lighthouse_queue_error(
            r, 405, "method_not_allowed",
            rt.id == R_JOB ? "use PUT, GET or DELETE" : method_of(rt.id));
    }
    if (!ftc__lighthouse_may_decide(r->lh)) {
        /* A leader past its lease answers nothing, so that no client
         * follows it back from its successor. */
        return ftc__lighthouse_queue_error(r, 503, "not_leading",
                                           "this lighthouse's lease ended");
    }
    switch (rt.id) {
    case R_PAGE:
    case R_CHART_JS:
    case R_METRICS:
    case R_JOBS:
        return do_read(r, rt.id);
    case R_HEARTBEAT:
        return do_replica(r, &rt, false);
    case R_QUORUM:
        return do_quorum(r, &rt);
    case R_WATCH:
        return do_watch(r, &rt);
    case R_GOODBYE:
        return do_replica(r, &rt, true);
    case R_COMMIT:
        return do_commit(r, &rt);
    case R_KILL:
        return do_kill(r, &rt);
    case R_JOB:
        return strcmp(method, "PUT") == 0      ? do_configure(r, &rt)
               : strcmp(method, "DELETE") == 0 ? do_delete(r, &rt)
                                               : do_status(r, &rt);
    case R_STATUS:
        return do_status(r, &rt);
    case R_NONE:
        break;
    }
    return ftc__lighthouse_queue_error(r, 404, "not_found", "no such route");
}
