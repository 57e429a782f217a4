/* The lighthouse client's calls (heartbeat, quorum, watch, goodbye,
 * status): their JSON requests and answers, and the public result types. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ft/lighthouse/lighthouse_client.h"
#include "ft/lighthouse/lighthouse_json.h"

/* ------------------------------------------------------- member, quorum */

static bool terminated(const char *s)
{
    return memchr(s, '\0', FTC_LIGHTHOUSE_STR_MAX) != NULL;
}

/* A public member as the core's, its data borrowed (not owned). */
static int member_to_core(const ftc_lighthouse_member *p, ftc__quorum_member *m)
{
    if (!terminated(p->replica_id) || !terminated(p->address) ||
        !terminated(p->store_address)) {
        return ftc__seterr(FTC_EINVAL, "member: a string is not terminated");
    }
    int rc =
        ftc__quorum_member_set(m, p->replica_id, p->address, p->store_address);
    if (rc != 0) {
        return rc;
    }
    if (p->step < 0 || p->commit_failures < 0 ||
        p->world_size > (uint64_t)INT64_MAX) {
        return ftc__seterr(FTC_EINVAL,
                           "member %s: step %" PRId64
                           " and commit_failures %" PRId64
                           " must be >= 0, world_size < 2^63",
                           p->replica_id, p->step, p->commit_failures);
    }
    m->step = p->step;
    m->world_size = p->world_size;
    m->shrink_only = p->shrink_only;
    m->commit_failures = p->commit_failures;
    if (p->data != NULL) {
        json_error_t e;
        json_t *v = json_loads(p->data, JSON_DECODE_ANY, &e);
        if (v == NULL) {
            return ftc__seterr(FTC_EINVAL, "member %s: data is not JSON: %s",
                               p->replica_id, e.text);
        }
        json_decref(v);
        m->data = (char *)p->data;
        m->data_len = strlen(p->data);
    }
    return 0;
}

/* The request's "suspects": the ids the member reports unreachable. */
static int add_suspects(json_t *mj, const ftc_lighthouse_member *p)
{
    if (p->n_suspects == 0) {
        return 0;
    }
    if (p->suspects == NULL || p->n_suspects > FTC__QUORUM_SUSPECTS_MAX) {
        return ftc__seterr(
            FTC_EINVAL, "member %s: %zu suspects (at most %d, not NULL)",
            p->replica_id, p->n_suspects, FTC__QUORUM_SUSPECTS_MAX);
    }
    json_t *a = json_array();
    int rc = a != NULL ? 0 : FTC_ENOMEM;
    for (size_t i = 0; rc == 0 && i < p->n_suspects; i++) {
        rc = ftc__quorum_check_id(p->suspects[i], "suspect");
        if (rc == 0 && json_array_append_new(a, json_string(p->suspects[i]))) {
            rc = ftc__seterr(FTC_ENOMEM, "suspects");
        }
    }
    if (rc == 0 && json_object_set_new(mj, "suspects", a) != 0) {
        return ftc__seterr(FTC_ENOMEM, "suspects");
    }
    if (rc != 0) {
        json_decref(a);
    }
    return rc;
}

void ftc_lighthouse_quorum_fini(ftc_lighthouse_quorum *q)
{
    if (q == NULL) {
        return;
    }
    for (size_t i = 0; i < q->n_members; i++) {
        ftc__free((void *)q->members[i].data);
    }
    ftc__free(q->members);
    memset(q, 0, sizeof(*q));
}

static int quorum_from_core(const ftc__quorum *q, ftc_lighthouse_quorum *out)
{
    memset(out, 0, sizeof(*out));
    if (q->n > 0) {
        out->members = ftc__calloc(q->n, sizeof(*out->members));
        if (out->members == NULL) {
            return ftc__seterr(FTC_ENOMEM, "quorum of %zu", q->n);
        }
    }
    for (size_t i = 0; i < q->n; i++) {
        const ftc__quorum_member *m = &q->members[i];
        ftc_lighthouse_member *p = &out->members[i];
        memcpy(p->replica_id, m->replica_id, sizeof(p->replica_id));
        memcpy(p->address, m->address, sizeof(p->address));
        memcpy(p->store_address, m->store_address, sizeof(p->store_address));
        p->step = m->step;
        p->world_size = m->world_size;
        p->shrink_only = m->shrink_only;
        p->commit_failures = m->commit_failures;
        out->n_members = i + 1;
        if (m->data_len > 0) {
            p->data = ftc__memdup(m->data, m->data_len + 1);
            if (p->data == NULL) {
                ftc_lighthouse_quorum_fini(out);
                return ftc__seterr(FTC_ENOMEM, "member data");
            }
        }
    }
    out->quorum_id = q->quorum_id;
    out->created_wall_ms = q->created_wall_ms;
    return 0;
}

int ftc__lighthouse_quorum_to_core(const ftc_lighthouse_quorum *q,
                                   ftc__quorum *dst)
{
    ftc__quorum_init(dst);
    ftc__quorum t;
    ftc__quorum_init(&t);
    if (q->n_members > 0) {
        t.members = ftc__calloc(q->n_members, sizeof(*t.members));
        if (t.members == NULL) {
            return ftc__seterr(FTC_ENOMEM, "quorum of %zu", q->n_members);
        }
    }
    for (size_t i = 0; i < q->n_members; i++) {
        ftc__quorum_member m;
        int rc = member_to_core(&q->members[i], &m);
        if (rc == 0) {
            rc = ftc__quorum_member_copy(&t.members[i], &m);
        }
        if (rc != 0) {
            ftc__quorum_fini(&t);
            return rc;
        }
        t.n = i + 1;
    }
    t.quorum_id = q->quorum_id;
    t.created_wall_ms = q->created_wall_ms;
    *dst = t;
    return 0;
}

/* ------------------------------------------------------------- helpers */

static int job_path(char *buf, size_t cap, const ftc_lighthouse_client *c,
                    const char *action)
{
    snprintf(buf, cap, "/v1/jobs/%s/%s", ftc__lighthouse_client_job(c), action);
    return 0;
}

/* POSTs req (consumed) to the job's action. */
static int post(ftc_lighthouse_client *c, const char *action, json_t *req,
                ftc__deadline dl, ftc__lighthouse_client_reply *reply)
{
    char *text;
    size_t len;
    int rc = req != NULL ? ftc__lhj_dump(req, &text, &len)
                         : ftc__seterr(FTC_ENOMEM, "request");
    json_decref(req);
    if (rc != 0) {
        return rc;
    }
    char path[128];
    job_path(path, sizeof(path), c, action);
    rc = ftc__lighthouse_client_exchange(c, "POST", path, text, len, dl, reply);
    ftc__free(text);
    return rc;
}

/* The answer's JSON object; FTC_EPROTO if it is none. */
static int answer_object(const ftc__lighthouse_client_reply *reply,
                         json_t **out)
{
    size_t n = ftc__buf_size(&reply->body);
    const char *text = n > 0 ? (const char *)ftc__buf_begin(&reply->body) : "";
    int rc = ftc__lhj_parse_object(text, n, out);
    return rc == 0 ? 0
                   : ftc__seterr(FTC_EPROTO, "lighthouse answer: %s",
                                 ftc_last_error());
}

static int get_epoch(const json_t *j, uint32_t *epoch)
{
    int64_t e = 0;
    int rc = ftc__lhj_get_int(j, "epoch", true, 0, UINT32_MAX, &e);
    *epoch = (uint32_t)e;
    return rc;
}

static int decode_ack(const ftc__lighthouse_client_reply *reply,
                      ftc_lighthouse_ack *out)
{
    json_t *j;
    int rc = answer_object(reply, &j);
    if (rc != 0) {
        return rc;
    }
    ftc_lighthouse_ack a;
    int64_t seq = 0;
    rc = get_epoch(j, &a.epoch);
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "event_seq", true, 0, INT64_MAX, &seq);
    }
    json_decref(j);
    if (rc != 0) {
        return ftc__seterr(FTC_EPROTO, "lighthouse answer: %s",
                           ftc_last_error());
    }
    a.event_seq = (uint64_t)seq;
    if (out != NULL) {
        *out = a;
    }
    return 0;
}

static int check_id(const char *id)
{
    if (id == NULL || id[0] == '\0' || strlen(id) >= FTC_LIGHTHOUSE_STR_MAX) {
        return ftc__seterr(FTC_EINVAL,
                           "replica_id: empty, NULL or longer "
                           "than %d B",
                           FTC_LIGHTHOUSE_STR_MAX - 1);
    }
    return 0;
}

/* The parts of a goodbye after its replica_id, into req (NULL: failed). */
static json_t *add_leaving(json_t *req, const ftc__lhj_leaving *left)
{
    if (req != NULL && left->step >= 0 &&
        json_object_set_new(req, "step", json_integer(left->step)) != 0) {
        json_decref(req);
        req = NULL;
    }
    if (req != NULL && left->finished &&
        json_object_set_new(req, "finished", json_true()) != 0) {
        json_decref(req);
        req = NULL;
    }
    return req;
}

/* Posts req (taken) to action and decodes the acknowledgement. */
static int ack_call(ftc_lighthouse_client *c, const char *action, json_t *req,
                    int64_t timeout_ms, ftc_lighthouse_ack *out)
{
    ftc__lighthouse_client_reply reply;
    ftc__lighthouse_client_reply_init(&reply, 1u << 20);
    int rc = post(c, action, req,
                  ftc__lighthouse_client_deadline(c, timeout_ms), &reply);
    if (rc == 0) {
        rc = reply.status == 200
                 ? decode_ack(&reply, out)
                 : ftc__lighthouse_client_status_error(c, &reply, action);
    }
    ftc__lighthouse_client_reply_fini(&reply);
    return rc;
}

/* heartbeat (maybe with stats) and goodbye (with what the leaving replica
 * says, left): {"replica_id", "stats", "step", "finished"} -> {"epoch",
 * "event_seq"}. */
static int replica_call(ftc_lighthouse_client *c, const char *action,
                        const char *replica_id,
                        const ftc_lighthouse_replica_stats *stats,
                        const ftc__lhj_leaving *left, int64_t timeout_ms,
                        ftc_lighthouse_ack *out)
{
    ftc__clearerr();
    if (c == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse %s: NULL client", action);
    }
    char call[48];
    snprintf(call, sizeof(call), "ftc_lighthouse_client_%s",
             stats != NULL ? "report" : action);
    int rc = ftc__timeout_check(timeout_ms, call);
    rc = rc != 0 ? rc : check_id(replica_id);
    rc = rc != 0 || stats == NULL ? rc : ftc__lhj_replica_stats_check(stats);
    if (rc != 0) {
        return rc;
    }
    json_t *req = json_pack("{s:s}", "replica_id", replica_id);
    if (req != NULL && stats != NULL &&
        json_object_set_new(req, "stats", ftc__lhj_replica_stats_json(stats)) !=
            0) {
        json_decref(req);
        req = NULL;
    }
    if (left != NULL) {
        req = add_leaving(req, left);
    }
    return ack_call(c, action, req, timeout_ms, out);
}

int ftc_lighthouse_client_heartbeat(ftc_lighthouse_client *c,
                                    const char *replica_id, int64_t timeout_ms,
                                    ftc_lighthouse_ack *out)
{
    return replica_call(c, "heartbeat", replica_id, NULL, NULL, timeout_ms,
                        out);
}

int ftc_lighthouse_client_report(ftc_lighthouse_client *c,
                                 const char *replica_id,
                                 const ftc_lighthouse_replica_stats *stats,
                                 int64_t timeout_ms, ftc_lighthouse_ack *out)
{
    if (stats == NULL) {
        ftc__clearerr();
        return ftc__seterr(FTC_EINVAL, "ftc_lighthouse_client_report: NULL "
                                       "stats");
    }
    return replica_call(c, "heartbeat", replica_id, stats, NULL, timeout_ms,
                        out);
}

int ftc_lighthouse_client_goodbye(ftc_lighthouse_client *c,
                                  const char *replica_id, int64_t step,
                                  bool finished, int64_t timeout_ms,
                                  ftc_lighthouse_ack *out)
{
    ftc__lhj_leaving left = {step, finished};
    return replica_call(c, "goodbye", replica_id, NULL, &left, timeout_ms, out);
}

int ftc_lighthouse_client_commit(ftc_lighthouse_client *c,
                                 const char *replica_id, int64_t quorum_id,
                                 int64_t step, int64_t timeout_ms)
{
    ftc__clearerr();
    if (c == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse commit: NULL client");
    }
    int rc = ftc__timeout_check(timeout_ms, "ftc_lighthouse_client_commit");
    rc = rc != 0 ? rc : check_id(replica_id);
    if (rc == 0 && (quorum_id < 0 || step < 1)) {
        rc = ftc__seterr(FTC_EINVAL,
                         "ftc_lighthouse_client_commit: quorum_id %" PRId64
                         " < 0 or step %" PRId64 " < 1",
                         quorum_id, step);
    }
    if (rc != 0) {
        return rc;
    }
    json_t *req =
        json_pack("{s:s, s:I, s:I}", "replica_id", replica_id, "quorum_id",
                  (json_int_t)quorum_id, "step", (json_int_t)step);
    return ack_call(c, "commit", req, timeout_ms, NULL);
}

/* How long to ask the lighthouse to hold a long-poll: a little less than
 * the time left, so that its answer (rather than a client-side timeout,
 * which closes the connection and looks like a death) ends the call. */
static int64_t server_wait_ms(ftc__deadline dl)
{
    if (ftc__deadline_is_never(dl)) {
        return INT64_MAX / 2; /* the lighthouse caps it */
    }
    int64_t left = ftc__deadline_left_ms(dl);
    int64_t margin = left / 10;
    margin = margin < 50 ? 50 : margin > 1000 ? 1000 : margin;
    return left > margin ? left - margin : 0;
}

/* ------------------------------------------------------------- quorum */

void ftc_lighthouse_join_result_fini(ftc_lighthouse_join_result *r)
{
    if (r != NULL) {
        ftc_lighthouse_quorum_fini(&r->quorum);
        memset(r, 0, sizeof(*r));
    }
}

/* Keeps q (taken) as the roster of version, in place of the oldest;
 * dropped if that version is held already (threads sharing the client
 * each got it: storing it twice would evict the base another thread's
 * delta answer still needs). */
static void keep_locked(ftc__lighthouse_roster *ro, ftc__quorum *q,
                        int64_t version)
{
    for (unsigned i = 0; version > 0 && i < FTC__LH_ROSTERS; i++) {
        if (ro->version[i] == version) {
            ftc__quorum_fini(q);
            return;
        }
    }
    unsigned slot = (ro->newest + 1) % FTC__LH_ROSTERS;
    ftc__quorum_fini(&ro->q[slot]);
    ro->q[slot] = *q;
    ro->version[slot] = version;
    ro->newest = slot;
}

/* The slot that holds roster version, or FTC__LH_ROSTERS with the error
 * set. */
static unsigned find_locked(const ftc__lighthouse_roster *ro, int64_t version,
                            const char *shape)
{
    unsigned slot = 0;
    while (slot < FTC__LH_ROSTERS && ro->version[slot] != version) {
        slot++;
    }
    if (slot == FTC__LH_ROSTERS) {
        ftc__seterr(FTC_ESTALE,
                    "%s answer for roster %" PRId64
                    ", which this client no longer holds",
                    shape, version);
    }
    return slot;
}

/* A full answer's quorum, kept as the roster of compact answers to come
 * when it carries a version (an older lighthouse sends none). */
static int from_full(ftc__lighthouse_roster *ro, const json_t *j,
                     ftc_lighthouse_quorum *out)
{
    ftc__quorum q;
    int64_t version = 0;
    int rc = ftc__lhj_quorum(json_object_get(j, "quorum"),
                             FTC__QUORUM_MAX_REPLICAS_CEIL, &q);
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "roster", false, 0, INT64_MAX, &version);
    }
    if (rc == 0) {
        rc = quorum_from_core(&q, out);
    }
    if (rc != 0) {
        ftc__quorum_fini(&q);
        return rc;
    }
    pthread_mutex_lock(&ro->mu);
    keep_locked(ro, &q, version);
    pthread_mutex_unlock(&ro->mu);
    return 0;
}

/* A compact answer applied to the roster it names. On failure that
 * roster is dropped, so a later join asks for a full answer. */
static int from_compact(ftc__lighthouse_roster *ro, const json_t *compact,
                        ftc_lighthouse_quorum *out)
{
    int64_t version = 0;
    int rc = ftc__lhj_get_int(compact, "roster", true, 1, INT64_MAX, &version);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&ro->mu);
    unsigned slot = find_locked(ro, version, "compact");
    if (slot == FTC__LH_ROSTERS) {
        rc = FTC_ESTALE;
    } else {
        rc = ftc__lhj_compact_apply(compact, version, &ro->q[slot]);
        if (rc == 0) {
            rc = quorum_from_core(&ro->q[slot], out);
        }
        if (rc != 0) {
            ro->version[slot] = 0;
        }
    }
    pthread_mutex_unlock(&ro->mu);
    return rc;
}

/* A delta answer applied to the roster it starts from (its base): the
 * new roster is kept beside it. A malformed delta drops the base, so a
 * later join asks for a full answer (not a failure of this client's: no
 * memory). */
static int from_delta(ftc__lighthouse_roster *ro, const json_t *delta,
                      ftc_lighthouse_quorum *out)
{
    int64_t base = 0, version = 0;
    int rc = ftc__lhj_get_int(delta, "base", true, 1, INT64_MAX, &base);
    rc = rc != 0
             ? rc
             : ftc__lhj_get_int(delta, "roster", true, 1, INT64_MAX, &version);
    if (rc != 0) {
        return rc;
    }
    pthread_mutex_lock(&ro->mu);
    unsigned slot = find_locked(ro, base, "delta");
    ftc__quorum q;
    ftc__quorum_init(&q);
    rc = slot == FTC__LH_ROSTERS
             ? FTC_ESTALE
             : ftc__lhj_delta_apply(delta, &ro->q[slot], base, &q);
    rc = rc != 0 ? rc : quorum_from_core(&q, out);
    if (rc == 0) {
        keep_locked(ro, &q, version);
    } else {
        ftc__quorum_fini(&q);
        if (slot < FTC__LH_ROSTERS && rc == FTC_EINVAL) {
            ro->version[slot] = 0;
        }
    }
    pthread_mutex_unlock(&ro->mu);
    return rc;
}

/* One join answer: the quorum (0), or FTC_ETIMEDOUT with the reason. */
/* A timed-out answer may say the quorum that formed left the member out
 * as unreachable: then it carries that quorum (not a roster to keep). */
static int decode_left_out(const json_t *j, ftc_lighthouse_join_result *out)
{
    int rc = ftc__lhj_get_bool(j, "left_out", &out->left_out);
    if (rc != 0 || !out->left_out) {
        return rc;
    }
    rc =
        ftc__lhj_get_int(j, "out_for_ms", true, 0, INT64_MAX, &out->out_for_ms);
    ftc__quorum q;
    ftc__quorum_init(&q);
    if (rc == 0) {
        rc = ftc__lhj_quorum(json_object_get(j, "quorum"),
                             FTC__QUORUM_MAX_REPLICAS_CEIL, &q);
    }
    if (rc == 0) {
        rc = quorum_from_core(&q, &out->quorum);
    }
    ftc__quorum_fini(&q);
    return rc;
}

static int decode_join(ftc_lighthouse_client *c,
                       const ftc__lighthouse_client_reply *reply,
                       ftc_lighthouse_join_result *out)
{
    json_t *j;
    int rc = answer_object(reply, &j);
    if (rc != 0) {
        return rc;
    }
    bool timed_out = false;
    rc = get_epoch(j, &out->epoch);
    if (rc == 0) {
        rc = ftc__lhj_get_bool(j, "timed_out", &timed_out);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_string(j, "reason", false, out->reason,
                                 sizeof(out->reason));
    }
    if (rc == 0 && !timed_out) {
        ftc__lighthouse_roster *ro = ftc__lighthouse_client_roster(c);
        const json_t *compact = json_object_get(j, "compact");
        const json_t *delta = json_object_get(j, "delta");
        rc = compact != NULL ? from_compact(ro, compact, &out->quorum)
             : delta != NULL ? from_delta(ro, delta, &out->quorum)
                             : from_full(ro, j, &out->quorum);
    } else if (rc == 0) {
        rc = decode_left_out(j, out);
    }
    json_decref(j);
    if (rc != 0) {
        return ftc__seterr(FTC_EPROTO, "lighthouse join answer: %s",
                           ftc_last_error());
    }
    if (out->left_out) {
        return ftc__seterr(FTC_ETIMEDOUT,
                           "no quorum: %s (out for %" PRId64 " ms)",
                           out->reason, out->out_for_ms);
    }
    if (timed_out) {
        return ftc__seterr(FTC_ETIMEDOUT, "no quorum: %s", out->reason);
    }
    return 0;
}

/* The roster version to send: the newest held, 0 for none. */
static int64_t held_roster(ftc_lighthouse_client *c)
{
    ftc__lighthouse_roster *ro = ftc__lighthouse_client_roster(c);
    pthread_mutex_lock(&ro->mu);
    int64_t v = ro->version[ro->newest];
    pthread_mutex_unlock(&ro->mu);
    return v;
}

int ftc_lighthouse_client_quorum(ftc_lighthouse_client *c,
                                 const ftc_lighthouse_member *member,
                                 int64_t timeout_ms,
                                 ftc_lighthouse_join_result *out)
{
    ftc__clearerr();
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
    }
    if (c == NULL || member == NULL || out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse quorum: NULL argument");
    }
    int rc = ftc__timeout_check(timeout_ms, "ftc_lighthouse_client_quorum");
    if (rc != 0) {
        return rc;
    }
    ftc__quorum_member m;
    rc = member_to_core(member, &m);
    json_t *mj = rc == 0 ? ftc__lhj_member_json(&m) : NULL;
    if (rc == 0 && mj == NULL) {
        rc = FTC_ENOMEM;
    }
    if (rc == 0) {
        rc = add_suspects(mj, member);
    }
    ftc__deadline dl = ftc__lighthouse_client_deadline(c, timeout_ms);
    int at = -1;
    while (rc == 0) {
        int64_t wait = server_wait_ms(dl);
        int64_t sent = ftc__now_ms();
        ftc__lighthouse_client_reply reply;
        ftc__lighthouse_client_reply_init(&reply, 64u << 20);
        reply.waits = true;
        reply.at = at;
        rc = post(c, "quorum",
                  json_pack("{s:O, s:I, s:I}", "member", mj, "timeout_ms",
                            (json_int_t)wait, "roster",
                            (json_int_t)held_roster(c)),
                  dl, &reply);
        at = reply.at;
        if (rc == FTC__LH_AGAIN) {
            ftc__lighthouse_client_reply_fini(&reply);
            rc = 0;
            continue;
        }
        if (rc == 0) {
            rc = reply.status == 200
                     ? decode_join(c, &reply, out)
                     : ftc__lighthouse_client_status_error(c, &reply, "quorum");
        }
        ftc__lighthouse_client_reply_fini(&reply);
        /* An early timed_out means the lighthouse capped the wait
         * (max_join_wait_ms): ask again while time is left. */
        bool capped = ftc__now_ms() - sent + 100 < wait && !out->left_out;
        if (rc != FTC_ETIMEDOUT || !capped || ftc__deadline_expired(dl)) {
            break;
        }
        rc = 0;
    }
    json_decref(mj);
    return rc;
}

/* -------------------------------------------------------------- watch */

static void free_events(ftc_lighthouse_watch_result *r)
{
    for (size_t i = 0; i < r->n_events; i++) {
        ftc__free(r->events[i].replica_ids);
    }
    ftc__free(r->events);
    r->events = NULL;
    r->n_events = 0;
}

void ftc_lighthouse_watch_result_fini(ftc_lighthouse_watch_result *r)
{
    if (r != NULL) {
        free_events(r);
        ftc_lighthouse_quorum_fini(&r->quorum);
        memset(r, 0, sizeof(*r));
    }
}

static int name_index(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            return (int)i;
        }
    }
    return 0;
}

static int decode_ids(const json_t *arr, ftc_lighthouse_event *e)
{
    if (arr == NULL) {
        return 0;
    }
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n > FTC__QUORUM_MAX_REPLICAS_CEIL) {
        return ftc__seterr(FTC_EINVAL, "replica_ids: expected an array");
    }
    e->replica_ids = n > 0 ? ftc__calloc(n, sizeof(*e->replica_ids)) : NULL;
    if (n > 0 && e->replica_ids == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%zu replica_ids", n);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v) ||
            json_string_length(v) >= FTC_LIGHTHOUSE_STR_MAX) {
            return ftc__seterr(FTC_EINVAL, "replica_ids[%zu]: not an id", i);
        }
        memcpy(e->replica_ids[i], json_string_value(v),
               json_string_length(v) + 1);
        e->n_replica_ids = i + 1;
    }
    return 0;
}

/* One event; *known is false for a kind this client does not know (a
 * newer lighthouse's), which is skipped. */
static int decode_event(const json_t *v, ftc_lighthouse_event *e, bool *known)
{
    static const char *const kinds[] = {"", "quorum", "member_lost", "kill"};
    static const char *const causes[] = {"", "disconnect", "heartbeat",
                                         "goodbye"};
    memset(e, 0, sizeof(*e));
    if (!json_is_object(v)) {
        return ftc__seterr(FTC_EINVAL, "event: expected an object");
    }
    char kind[32], cause[32];
    int64_t seq = 0;
    int rc = ftc__lhj_get_int(v, "seq", true, 0, INT64_MAX, &seq);
    if (rc == 0) {
        rc = ftc__lhj_get_string(v, "kind", true, kind, sizeof(kind));
    }
    if (rc == 0) {
        rc = ftc__lhj_get_string(v, "cause", false, cause, sizeof(cause));
    }
    if (rc == 0) {
        rc = ftc__lhj_get_string(v, "replica_id", false, e->replica_id,
                                 sizeof(e->replica_id));
    }
    if (rc == 0) {
        rc = ftc__lhj_get_int(v, "quorum_id", false, 0, INT64_MAX,
                              &e->quorum_id);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_bool(v, "in_quorum", &e->in_quorum);
    }
    if (rc == 0) {
        rc = decode_ids(json_object_get(v, "replica_ids"), e);
    }
    e->seq = (uint64_t)seq;
    e->kind = (ftc_lighthouse_event_kind)name_index(kind, kinds, 4);
    e->cause = (ftc_lighthouse_lost_cause)name_index(cause, causes, 4);
    *known = e->kind != 0;
    return rc;
}

static int decode_events(const json_t *arr, ftc_lighthouse_watch_result *out)
{
    size_t n = json_array_size(arr);
    if (!json_is_array(arr)) {
        return ftc__seterr(FTC_EINVAL, "events: expected an array");
    }
    out->events = n > 0 ? ftc__calloc(n, sizeof(*out->events)) : NULL;
    if (n > 0 && out->events == NULL) {
        return ftc__seterr(FTC_ENOMEM, "%zu events", n);
    }
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        ftc_lighthouse_event *e = &out->events[out->n_events];
        int rc = decode_event(json_array_get(arr, i), e, &known);
        if (rc == 0 && !known) {
            ftc__free(e->replica_ids);
            continue;
        }
        out->n_events++;
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int decode_watch(const ftc__lighthouse_client_reply *reply,
                        ftc_lighthouse_watch_result *out)
{
    json_t *j;
    int rc = answer_object(reply, &j);
    if (rc != 0) {
        return rc;
    }
    int64_t seq = 0;
    rc = get_epoch(j, &out->epoch);
    if (rc == 0) {
        rc = ftc__lhj_get_int(j, "event_seq", true, 0, INT64_MAX, &seq);
    }
    if (rc == 0) {
        rc = ftc__lhj_get_bool(j, "reset", &out->reset);
    }
    if (rc == 0) {
        rc = decode_events(json_object_get(j, "events"), out);
    }
    const json_t *qj = json_object_get(j, "quorum");
    ftc__quorum q;
    ftc__quorum_init(&q);
    if (rc == 0 && qj != NULL && !json_is_null(qj)) {
        rc = ftc__lhj_quorum(qj, FTC__QUORUM_MAX_REPLICAS_CEIL, &q);
        if (rc == 0) {
            rc = quorum_from_core(&q, &out->quorum);
            out->has_quorum = rc == 0;
        }
        ftc__quorum_fini(&q);
    }
    json_decref(j);
    out->event_seq = (uint64_t)seq;
    if (rc != 0) {
        return ftc__seterr(FTC_EPROTO, "lighthouse watch answer: %s",
                           ftc_last_error());
    }
    return 0;
}

/* Percent-encodes s for a query string. */
static void escape(char *out, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (; *s != '\0' && n + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
}

int ftc_lighthouse_client_watch(ftc_lighthouse_client *c,
                                const char *replica_id, uint32_t epoch,
                                uint64_t since, int64_t timeout_ms,
                                ftc_lighthouse_watch_result *out)
{
    ftc__clearerr();
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
    }
    if (c == NULL || out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse watch: NULL argument");
    }
    if (ftc__timeout_check(timeout_ms, "ftc_lighthouse_client_watch") != 0) {
        return FTC_EINVAL;
    }
    if (replica_id != NULL && check_id(replica_id) != 0) {
        return FTC_EINVAL;
    }
    ftc__deadline dl = ftc__lighthouse_client_deadline(c, timeout_ms);
    char id[3 * FTC_LIGHTHOUSE_STR_MAX + 1] = "";
    if (replica_id != NULL) {
        escape(id, sizeof(id), replica_id);
    }
    char path[sizeof(id) + 256];
    ftc__lighthouse_client_reply reply;
    int rc = FTC__LH_AGAIN, at = -1;
    while (rc == FTC__LH_AGAIN) { /* the wait is worked out for each send */
        snprintf(path, sizeof(path),
                 "/v1/jobs/%s/watch?epoch=%" PRIu32 "&since=%" PRIu64
                 "&timeout_ms=%" PRId64 "%s%s",
                 ftc__lighthouse_client_job(c), epoch, since,
                 server_wait_ms(dl), replica_id != NULL ? "&replica_id=" : "",
                 id);
        ftc__lighthouse_client_reply_init(&reply, 64u << 20);
        reply.waits = true;
        reply.at = at;
        rc = ftc__lighthouse_client_exchange(c, "GET", path, NULL, 0, dl,
                                             &reply);
        at = reply.at;
        if (rc == FTC__LH_AGAIN) {
            ftc__lighthouse_client_reply_fini(&reply);
        }
    }
    if (rc == 0) {
        rc = reply.status == 200
                 ? decode_watch(&reply, out)
                 : ftc__lighthouse_client_status_error(c, &reply, "watch");
    }
    ftc__lighthouse_client_reply_fini(&reply);
    if (rc != 0) {
        uint32_t e = out->epoch;
        ftc_lighthouse_watch_result_fini(out);
        out->epoch = e;
    }
    return rc;
}

/* ------------------------------------------------------------- status */

int ftc_lighthouse_client_status(ftc_lighthouse_client *c, const char *job,
                                 int64_t timeout_ms, char **json)
{
    ftc__clearerr();
    if (json != NULL) {
        *json = NULL;
    }
    if (c == NULL || json == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse status: NULL argument");
    }
    if (ftc__timeout_check(timeout_ms, "ftc_lighthouse_client_status") != 0) {
        return FTC_EINVAL;
    }
    char path[FTC_LIGHTHOUSE_JOB_MAX + 32];
    if (job == NULL) {
        snprintf(path, sizeof(path), "/v1/jobs");
    } else if (!ftc__lighthouse_job_name_ok(job)) {
        return ftc__seterr(FTC_EINVAL,
                           "job name '%.80s' is not "
                           "[A-Za-z0-9._-]{1,64}",
                           job);
    } else {
        snprintf(path, sizeof(path), "/v1/jobs/%s/status", job);
    }
    ftc__lighthouse_client_reply reply;
    ftc__lighthouse_client_reply_init(&reply, 64u << 20);
    int rc = ftc__lighthouse_client_exchange(
        c, "GET", path, NULL, 0, ftc__lighthouse_client_deadline(c, timeout_ms),
        &reply);
    if (rc == 0 && reply.status != 200) {
        rc = ftc__lighthouse_client_status_error(c, &reply, "status");
    }
    if (rc == 0) {
        size_t n = ftc__buf_size(&reply.body);
        char *text = ftc__malloc(n + 1);
        if (text == NULL) {
            rc = ftc__seterr(FTC_ENOMEM, "status of %zu B", n);
        } else {
            if (n > 0) {
                memcpy(text, ftc__buf_begin(&reply.body), n);
            }
            text[n] = '\0';
            *json = text;
        }
    }
    ftc__lighthouse_client_reply_fini(&reply);
    return rc;
}
