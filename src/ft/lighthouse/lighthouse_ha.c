/* A lighthouse that serves only while it leads, elected through etcd
 * (ftc/ft.h, "a highly available lighthouse"; docs/decisions.md, "The
 * highly available lighthouse").
 *
 * The election: a standby reads PREFIX/leader every poll_ms; when the key
 * is absent it takes a lease and creates the key attached to it in one
 * transaction, which one standby wins. The winner reserves a block of
 * quorum epochs (PREFIX/epochs, a guarded read-modify-write that only the
 * key's holder can make), then starts its lighthouse. It renews the lease
 * every quarter TTL; its lighthouse forms quorums only until the time the
 * last successful renewal was sent plus the TTL less a tenth, a bound that
 * ends before etcd can expire the lease, so two leaders never decide at
 * once, whatever the network or the scheduler does (a frozen leader wakes
 * with its bound behind it). When the lease is gone or the bound passes it
 * stops its lighthouse and stands by again.
 *
 * The leader also keeps each job's committed mark under PREFIX/jobs/<job>
 * ({"step": S, "finished": F}, written with every renewal when changed,
 * guarded by its key); a new leader reads them before it serves
 * (lighthouse_marks.c). */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base_int.h"
#include "ft/lighthouse/etcd.h"
#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse/lighthouse_json.h"

/* Epochs reserved per election; a leader asks for more below a quarter. */
#define HA_EPOCH_BLOCK 4096u
/* Marks written in one transaction (etcd's default --max-txn-ops). */
#define HA_MARKS_BATCH 128

struct ftc_lighthouse_ha {
    ftc_lighthouse_opts lo; /* its strings below, owned */
    char *bind, *token, *tls_cert, *tls_key;
    ftc_lighthouse_ha_opts o;
    char leader_key[300], epochs_key[300], jobs_prefix[300];
    char name[FTC_HOST_MAX + 16];
    int64_t ttl_s;
    ftc__etcd *etcd;
    pthread_t thr;
    bool thr_running;
    ftc__event stop;
    /* The election thread's state; mu guards the copies others read. */
    ftc_lighthouse *lh; /* serving: leading */
    /* Times on ftc__lighthouse_now_ms's clock. stale_lease: one we could
     * not revoke (etcd unreachable), revoked when seen holding the key. */
    int64_t lease, stale_lease, term, renew_ms, lease_until_ms, retry_ms;
    char holder[FTC__ETCD_VALUE_MAX]; /* the leader seen last, for logs */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool leading;
    int64_t leading_term;
};

void ftc_lighthouse_ha_opts_init(ftc_lighthouse_ha_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->lease_ms = 2000;
    o->poll_ms = 100;
}

static void publish(ftc_lighthouse_ha *h, bool leading, int64_t term)
{
    pthread_mutex_lock(&h->mu);
    h->leading = leading;
    h->leading_term = term;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* A short deadline for one step of the election: a quarter of the TTL,
 * at most 2 s (a stop waits for at most one step). */
static ftc__deadline step_deadline(const ftc_lighthouse_ha *h)
{
    return ftc__deadline_in_ms(h->ttl_s < 8 ? h->ttl_s * 250 : 2000);
}

static void give_up_lease(ftc_lighthouse_ha *h)
{
    if (h->lease != 0 &&
        ftc__etcd_lease_revoke(h->etcd, h->lease, step_deadline(h)) != 0) {
        FTC_LOG_INFO("lighthouse.ha", "lease not revoked (it expires): %s",
                     ftc_last_error());
        h->stale_lease = h->lease;
    }
    h->lease = 0;
}

/* The last epoch handed out, from PREFIX/epochs' value: digits only. */
static int parse_epochs(const ftc_lighthouse_ha *h, const ftc__etcd_kv *kv,
                        unsigned long long *last)
{
    *last = 0;
    if (!kv->found) {
        return 0;
    }
    char *end = NULL;
    *last = strtoull(kv->value, &end, 10);
    if (kv->value[0] < '0' || kv->value[0] > '9' || *end != '\0') {
        return ftc__seterr(FTC_EPROTO,
                           "%s holds '%.40s', not a number: "
                           "refusing to hand out epochs",
                           h->epochs_key, kv->value);
    }
    return 0;
}

/* Reserves the next block of epochs, guarded by our leader key. 0 with
 * [*first, *first + HA_EPOCH_BLOCK), FTC_ESTALE if the key is no longer
 * ours, FTC_EMSGSIZE past the 31-bit epoch space. */
static int reserve_epochs(ftc_lighthouse_ha *h, uint32_t *first)
{
    ftc__deadline dl = step_deadline(h);
    ftc__etcd_kv kv;
    int rc = ftc__etcd_get(h->etcd, h->epochs_key, dl, &kv);
    if (rc != 0) {
        return rc;
    }
    unsigned long long last;
    rc = parse_epochs(h, &kv, &last);
    if (rc != 0) {
        return rc;
    }
    if (last + HA_EPOCH_BLOCK > FTC__QUORUM_EPOCH_MAX) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "%s is %llu: the quorum epochs are used up (delete "
                           "the key only when no job of these lighthouses "
                           "lives)",
                           h->epochs_key, last);
    }
    char next[24];
    snprintf(next, sizeof(next), "%llu", last + HA_EPOCH_BLOCK);
    bool done = false;
    rc = ftc__etcd_put_guarded(h->etcd, h->leader_key, h->term, h->epochs_key,
                               kv.found ? kv.mod_revision : 0, next, dl, &done);
    if (rc == 0 && !done) {
        /* A retried put whose first attempt was applied fails its compare:
         * only the key's holder writes it, so "next" there is ours. */
        unsigned long long now_last;
        done = ftc__etcd_get(h->etcd, h->epochs_key, dl, &kv) == 0 &&
               parse_epochs(h, &kv, &now_last) == 0 &&
               now_last == last + HA_EPOCH_BLOCK;
    }
    if (rc == 0 && !done) {
        rc = ftc__seterr(FTC_ESTALE, "%s changed or %s is not ours",
                         h->epochs_key, h->leader_key);
    }
    *first = (uint32_t)last + 1;
    return rc;
}

/* ------------------------------------------------------ the jobs' marks */

typedef struct stored_marks {
    const ftc_lighthouse_ha *h;
    ftc__lighthouse_mark_rec *recs;
    size_t n, cap;
} stored_marks;

/* One record of PREFIX/jobs/ into the list; one that is not a job's mark
 * is left out with a warning (its job then starts as a new one). */
static int note_mark(void *arg, const char *key, const ftc__etcd_kv *kv)
{
    stored_marks *sm = arg;
    const char *name = key + strlen(sm->h->jobs_prefix);
    json_error_t err;
    json_t *j = json_loads(kv->value, 0, &err);
    ftc__lighthouse_mark_rec rec = {.step = -1};
    bool finished = false;
    int rc =
        ftc__lighthouse_job_name_ok(name) && json_is_object(j) ? 0 : FTC_EINVAL;
    rc = rc != 0 ? rc
                 : ftc__lhj_get_int(j, "step", true, 0, INT64_MAX, &rec.step);
    rc = rc != 0 ? rc : ftc__lhj_get_bool(j, "finished", &finished);
    json_decref(j);
    if (rc != 0) {
        FTC_LOG_WARN("lighthouse.marks",
                     "%s holds '%.60s', not a job's mark: "
                     "left out",
                     key, kv->value);
        return 0;
    }
    snprintf(rec.job, sizeof(rec.job), "%s", name);
    rec.finished = finished;
    if (sm->n < sm->cap) {
        sm->recs[sm->n++] = rec;
    }
    return 0;
}

/* Reads the marks the last leader stored and hands them to lh. */
static int inherit_marks(ftc_lighthouse_ha *h, ftc_lighthouse *lh)
{
    size_t cap = h->lo.max_jobs;
    stored_marks sm = {h, ftc__calloc(cap, sizeof(*sm.recs)), 0, cap};
    if (sm.recs == NULL) {
        return ftc__seterr(FTC_ENOMEM, "lighthouse ha: %zu marks", cap);
    }
    bool more = false;
    int rc = ftc__etcd_list(h->etcd, h->jobs_prefix, cap, step_deadline(h),
                            note_mark, &sm, &more);
    if (rc == 0 && more) {
        FTC_LOG_WARN("lighthouse.marks",
                     "etcd holds marks of more than max_jobs (%zu) jobs "
                     "under %s: the others start as new jobs",
                     cap, h->jobs_prefix);
    }
    rc = rc != 0 ? rc : ftc__lighthouse_inherit_marks(lh, sm.recs, sm.n);
    ftc__free(sm.recs);
    return rc;
}

/* Writes the marks that changed, guarded by our leader key: FTC_ESTALE
 * when the key is no longer ours. */
static int store_marks(ftc_lighthouse_ha *h)
{
    ftc__lighthouse_mark_rec *recs = ftc__calloc(HA_MARKS_BATCH, sizeof(*recs));
    char(*keys)[FTC__ETCD_KEY_MAX] = ftc__calloc(HA_MARKS_BATCH, sizeof(*keys));
    char(*values)[64] = ftc__calloc(HA_MARKS_BATCH, sizeof(*values));
    ftc__etcd_op *ops = ftc__calloc(HA_MARKS_BATCH, sizeof(*ops));
    int rc = recs && keys && values && ops
                 ? 0
                 : ftc__seterr(FTC_ENOMEM, "lighthouse ha: marks");
    size_t n = rc == 0
                   ? ftc__lighthouse_marks_to_store(h->lh, recs, HA_MARKS_BATCH)
                   : 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof(keys[i]), "%s%s", h->jobs_prefix, recs[i].job);
        snprintf(values[i], sizeof(values[i]),
                 "{\"step\":%lld,\"finished\":%s}", (long long)recs[i].step,
                 recs[i].finished ? "true" : "false");
        ops[i] = (ftc__etcd_op){keys[i], recs[i].step >= 0 ? values[i] : NULL};
    }
    bool done = false;
    if (n > 0) {
        rc = ftc__etcd_write_guarded(h->etcd, h->leader_key, h->term, ops, n,
                                     step_deadline(h), &done);
    }
    if (rc == 0 && n > 0 && !done) {
        rc = ftc__seterr(FTC_ESTALE, "%s is not ours", h->leader_key);
    } else if (rc == 0 && n > 0) {
        ftc__lighthouse_marks_stored(h->lh, recs, n);
    }
    ftc__free(recs);
    ftc__free(keys);
    ftc__free(values);
    ftc__free(ops);
    return rc;
}

/* Renewed (or won) at sent_ms: quorums may form until the bound. */
static void renewed(ftc_lighthouse_ha *h, int64_t sent_ms, int64_t ttl_s)
{
    h->lease_until_ms = sent_ms + ttl_s * 900;
    h->renew_ms = sent_ms + ttl_s * 250;
    if (h->lh != NULL) {
        ftc__lighthouse_set_lease(h->lh, h->lease_until_ms);
    }
}

static void step_down(ftc_lighthouse_ha *h, const char *why)
{
    FTC_LOG_WARN("lighthouse.ha", "%s stops leading (term %lld): %s", h->name,
                 (long long)h->term, why);
    ftc__lighthouse_set_lease(h->lh, 1); /* no decision from here on */
    publish(h, false, 0);
    ftc_lighthouse_destroy(h->lh);
    h->lh = NULL;
    give_up_lease(h);
}

/* Starts serving as the leader of term h->term: the lighthouse is
 * created fenced before it listens (past its lease: every request is
 * answered 503 and nothing is decided), gets its epochs and the jobs'
 * stored marks, and only then its lease: no request can create a job, or
 * join one, before the job has its mark. */
static int start_serving(ftc_lighthouse_ha *h)
{
    ftc_lighthouse *lh = NULL;
    int rc = ftc__lighthouse_create_fenced(&h->lo, 1, &lh);
    if (rc != 0) {
        /* Likely to fail again (the port in use, a TLS file): do not take
         * the seat again for a lease. */
        h->retry_ms = ftc__lighthouse_now_ms() + h->ttl_s * 1000;
        return rc;
    }
    uint32_t first;
    rc = reserve_epochs(h, &first);
    if (rc != 0) {
        ftc_lighthouse_destroy(lh);
        return rc;
    }
    ftc__lighthouse_give_epochs(lh, first, HA_EPOCH_BLOCK);
    rc = inherit_marks(h, lh);
    if (rc != 0) {
        /* Serving without them could let laggards commit steps again.
         * Not again before a lease's time: each try reserves epochs. */
        h->retry_ms = ftc__lighthouse_now_ms() + h->ttl_s * 1000;
        ftc_lighthouse_destroy(lh);
        return rc;
    }
    ftc__lighthouse_set_lease(lh, h->lease_until_ms);
    h->lh = lh;
    if (h->o.on_lead != NULL) {
        h->o.on_lead(lh, h->o.on_lead_arg);
    }
    FTC_LOG_INFO("lighthouse.ha", "%s leads (term %lld, epochs from %u)",
                 h->name, (long long)h->term, first);
    publish(h, true, h->term);
    return 0;
}

/* One look at the seat; takes it when it is empty. */
static void stand_by(ftc_lighthouse_ha *h)
{
    if (ftc__lighthouse_now_ms() < h->retry_ms) {
        return;
    }
    ftc__deadline dl = step_deadline(h);
    ftc__etcd_kv kv;
    int rc = ftc__etcd_get(h->etcd, h->leader_key, dl, &kv);
    if (rc == 0 && kv.found && kv.lease == h->stale_lease) {
        /* Our own key from before etcd went away: let go of it now. */
        h->lease = h->stale_lease;
        h->stale_lease = 0;
        give_up_lease(h);
        return;
    }
    if (rc == 0 && kv.found) {
        if (strcmp(kv.value, h->holder) != 0) {
            FTC_LOG_INFO("lighthouse.ha", "%s stands by; %s leads", h->name,
                         kv.value);
            snprintf(h->holder, sizeof(h->holder), "%s", kv.value);
        }
        return;
    }
    int64_t sent = ftc__lighthouse_now_ms();
    rc = rc != 0 ? rc : ftc__etcd_lease_grant(h->etcd, h->ttl_s, dl, &h->lease);
    bool won = false;
    rc = rc != 0 ? rc
                 : ftc__etcd_put_if_absent(h->etcd, h->leader_key, h->name,
                                           h->lease, dl, &won, &h->term, &kv);
    if (rc == 0 && !won && kv.found && kv.lease == h->lease) {
        /* A retried transaction whose first attempt won. */
        won = true;
        h->term = kv.create_revision;
    }
    if (rc == 0 && won) {
        renewed(h, sent, h->ttl_s);
        rc = start_serving(h);
        if (rc == 0) {
            return;
        }
    }
    if (rc != 0) {
        FTC_LOG_WARN("lighthouse.ha", "%s: election: %s", h->name,
                     ftc_last_error());
    }
    give_up_lease(h);
}

/* Stores the marks that changed; steps down when the leader key is no
 * longer ours. A failure to reach etcd is tried again at the next renewal
 * (a lighthouse that cannot renew steps down anyway). */
static void keep_marks(ftc_lighthouse_ha *h)
{
    int rc = store_marks(h);
    if (rc == FTC_ESTALE) {
        step_down(h, ftc_last_error());
    } else if (rc != 0) {
        FTC_LOG_WARN("lighthouse.marks", "%s: marks not stored: %s", h->name,
                     ftc_last_error());
    }
}

/* Renews the lease when due; steps down when it is gone or the bound is
 * reached without a renewal. */
static void lead(ftc_lighthouse_ha *h)
{
    int64_t now = ftc__lighthouse_now_ms();
    if (now >= h->lease_until_ms) {
        step_down(h, "the lease could not be renewed in time");
        return;
    }
    if (now < h->renew_ms) {
        return;
    }
    int64_t left = h->lease_until_ms - now;
    int64_t ttl = 0;
    int rc = ftc__etcd_lease_keepalive(
        h->etcd, h->lease, ftc__deadline_in_ms(left < 2000 ? left : 2000),
        &ttl);
    if (rc == 0 && ttl == 0) {
        step_down(h, "etcd let the lease expire");
    } else if (rc == 0) {
        renewed(h, now, ttl);
        keep_marks(h);
        if (h->lh != NULL &&
            ftc__lighthouse_epochs_left(h->lh) < HA_EPOCH_BLOCK / 4) {
            uint32_t first;
            if (reserve_epochs(h, &first) == 0) {
                ftc__lighthouse_give_epochs(h->lh, first, HA_EPOCH_BLOCK);
            } else {
                FTC_LOG_WARN("lighthouse.ha", "%s: more epochs: %s", h->name,
                             ftc_last_error());
            }
        }
    } else if (ftc__lighthouse_now_ms() >= h->lease_until_ms) {
        step_down(h, ftc_last_error());
    } else {
        h->renew_ms = ftc__lighthouse_now_ms() + 50; /* try again soon */
    }
}

/* Sleeps until ms (ftc__lighthouse_now_ms) or the stop event. */
static bool wait_until(ftc_lighthouse_ha *h, int64_t ms)
{
    int64_t left = ms - ftc__lighthouse_now_ms();
    struct pollfd p = {.fd = h->stop.fd, .events = POLLIN};
    if (left > 0) {
        poll(&p, 1, (int)(left < 1000 ? left : 1000));
    }
    return !ftc__event_is_set(&h->stop);
}

static void *ha_main(void *arg)
{
    ftc_lighthouse_ha *h = arg;
    do {
        if (h->lh == NULL) {
            stand_by(h);
        } else {
            lead(h);
        }
    } while (wait_until(h, h->lh == NULL
                               ? ftc__lighthouse_now_ms() + h->o.poll_ms
                               : h->renew_ms));
    if (h->lh != NULL) {
        /* The next leader starts from what this one committed: nothing
         * is decided from here on, then the last marks are written. */
        ftc__lighthouse_set_lease(h->lh, 1);
        keep_marks(h);
    }
    if (h->lh != NULL) {
        step_down(h, "stopping");
    }
    return NULL;
}

/* ------------------------------------------------------ create/destroy */

static int copy_str(const char *in, char **out)
{
    *out = NULL;
    if (in != NULL && (*out = ftc__strdup(in)) == NULL) {
        return ftc__seterr(FTC_ENOMEM, "lighthouse ha");
    }
    return 0;
}

/* The lighthouse options, with our copies of their strings. */
static int keep_lighthouse_opts(ftc_lighthouse_ha *h,
                                const ftc_lighthouse_opts *in)
{
    int rc = ftc__lighthouse_resolve_opts(in, &h->lo);
    if (rc != 0) {
        return rc;
    }
    char host[FTC_HOST_MAX];
    int port = 0;
    rc =
        ftc__addr_split(h->lo.bind != NULL ? h->lo.bind : "[::]",
                        FTC_LIGHTHOUSE_DEFAULT_PORT, host, sizeof(host), &port);
    if (rc == 0 && port == 0) {
        rc = ftc__seterr(FTC_EINVAL,
                         "lighthouse ha: bind '%s' must name the "
                         "port its clients list",
                         h->lo.bind);
    }
    rc = rc != 0 ? rc : copy_str(h->lo.bind, &h->bind);
    rc = rc != 0 ? rc : copy_str(h->lo.token, &h->token);
    rc = rc != 0 ? rc : copy_str(h->lo.tls_cert, &h->tls_cert);
    rc = rc != 0 ? rc : copy_str(h->lo.tls_key, &h->tls_key);
    h->lo.bind = h->bind;
    h->lo.token = h->token;
    h->lo.tls_cert = h->tls_cert;
    h->lo.tls_key = h->tls_key;
    return rc;
}

static int keep_ha_opts(ftc_lighthouse_ha *h, const ftc_lighthouse_ha_opts *in)
{
    ftc_lighthouse_ha_opts d;
    ftc_lighthouse_ha_opts_init(&d);
    h->o = d;
    int rc = FTC__OPTS_MERGE(&h->o, in, ftc_lighthouse_ha_opts, on_lead_arg);
    if (rc != 0) {
        return rc;
    }
    if (h->o.etcd == NULL || h->o.lease_ms < 1 || h->o.poll_ms < 1 ||
        h->o.lease_ms > 3600000 || h->o.poll_ms > 60000) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse ha: etcd is required, lease_ms %lld "
                           "in [1, 3600000], poll_ms %lld in [1, 60000]",
                           (long long)h->o.lease_ms, (long long)h->o.poll_ms);
    }
    const char *prefix = h->o.prefix != NULL ? h->o.prefix : "ftc/lighthouse";
    if (strlen(prefix) > 256) {
        return ftc__seterr(FTC_EINVAL, "lighthouse ha: prefix over 256 B");
    }
    snprintf(h->leader_key, sizeof(h->leader_key), "%s/leader", prefix);
    snprintf(h->epochs_key, sizeof(h->epochs_key), "%s/epochs", prefix);
    snprintf(h->jobs_prefix, sizeof(h->jobs_prefix), "%s/jobs/", prefix);
    const char *name = h->o.name != NULL ? h->o.name : h->bind;
    if (name == NULL || strlen(name) >= sizeof(h->name) ||
        strlen(name) >= FTC__ETCD_VALUE_MAX) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse ha: name missing or over "
                           "%zu B",
                           sizeof(h->name) - 1);
    }
    snprintf(h->name, sizeof(h->name), "%s", name);
    h->o.etcd = h->o.prefix = h->o.name = NULL; /* copied or not kept */
    h->ttl_s = (h->o.lease_ms + 999) / 1000;
    return 0;
}

int ftc_lighthouse_ha_create(const ftc_lighthouse_opts *opts,
                             const ftc_lighthouse_ha_opts *ha,
                             ftc_lighthouse_ha **out)
{
    ftc__clearerr();
    if (out == NULL || ha == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse ha: NULL argument");
    }
    *out = NULL;
    ftc_lighthouse_ha *h = ftc__calloc(1, sizeof(*h));
    if (h == NULL) {
        return ftc__seterr(FTC_ENOMEM, "lighthouse ha");
    }
    h->stop.fd = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    int rc = keep_lighthouse_opts(h, opts);
    rc = rc != 0 ? rc : keep_ha_opts(h, ha);
    /* An attempt on one etcd endpoint: a quarter of the election's step,
     * so a cut-off member leaves time to try the others. */
    rc = rc != 0 ? rc
                 : ftc__etcd_create(ha->etcd, h->ttl_s * 250 / 4 + 1, &h->etcd);
    rc = rc != 0 ? rc : ftc__event_open(&h->stop);
    rc = rc != 0 ? rc : ftc__thread_start(&h->thr, "ftc-lh-ha", ha_main, h);
    h->thr_running = rc == 0;
    if (rc != 0) {
        ftc_lighthouse_ha_destroy(h);
        return rc;
    }
    *out = h;
    return 0;
}

bool ftc_lighthouse_ha_leading(ftc_lighthouse_ha *h, int64_t *term)
{
    pthread_mutex_lock(&h->mu);
    bool leading = h->leading;
    if (term != NULL) {
        *term = h->leading_term;
    }
    pthread_mutex_unlock(&h->mu);
    return leading;
}

int ftc_lighthouse_ha_wait(ftc_lighthouse_ha *h, bool leading,
                           int64_t timeout_ms)
{
    if (ftc__timeout_check(timeout_ms, "ftc_lighthouse_ha_wait") != 0) {
        return FTC_EINVAL;
    }
    ftc__deadline dl = ftc__deadline_from_timeout(timeout_ms, 60000);
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    while (h->leading != leading && rc == 0) {
        if (ftc__deadline_expired(dl)) {
            rc = ftc__seterr(FTC_ETIMEDOUT, "lighthouse ha: still %s",
                             h->leading ? "leading" : "standing by");
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ms = ftc__deadline_left_ms(dl);
        ms = ms < 1000 ? ms : 1000;
        ts.tv_sec += (time_t)(ms / 1000);
        ts.tv_nsec += (long)(ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

void ftc_lighthouse_ha_destroy(ftc_lighthouse_ha *h)
{
    if (h == NULL) {
        return;
    }
    if (h->thr_running) {
        ftc__event_signal(&h->stop);
        pthread_join(h->thr, NULL);
    }
    if (h->stop.fd >= 0) {
        ftc__event_close(&h->stop);
    }
    ftc__etcd_destroy(h->etcd);
    ftc__free(h->bind);
    ftc__free(h->token);
    ftc__free(h->tls_cert);
    ftc__free(h->tls_key);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    ftc__free(h);
}

/* ------------------------------------ what the leader hands its lighthouse */

void ftc__lighthouse_give_epochs(ftc_lighthouse *lh, uint32_t first,
                                 uint32_t count)
{
    pthread_mutex_lock(&lh->mu);
    lh->epoch_next = first;
    lh->epoch_end = first + count;
    pthread_mutex_unlock(&lh->mu);
}

uint32_t ftc__lighthouse_epochs_left(ftc_lighthouse *lh)
{
    pthread_mutex_lock(&lh->mu);
    uint32_t left = lh->epoch_end - lh->epoch_next;
    pthread_mutex_unlock(&lh->mu);
    return left;
}

int64_t ftc__lighthouse_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ftc__lighthouse_set_lease(ftc_lighthouse *lh, int64_t until_ms)
{
    atomic_store(&lh->lease_until_ms, until_ms);
}

bool ftc__lighthouse_may_decide(const ftc_lighthouse *lh)
{
    int64_t until = atomic_load(&lh->lease_until_ms);
    return until == 0 || ftc__lighthouse_now_ms() < until;
}
