/* The quorum thread: one round per start_quorum. Every rank arrives in
 * the group store; the leader, once all arrived, joins the lighthouse's
 * quorum and writes the answer (or the failure) back; every rank then
 * rebuilds its process group if the quorum id changed, copies its state if
 * a healing replica may pull from it, and heals if it is behind. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ft/lighthouse/lighthouse_client.h"
#include "ft/manager/manager.h"

/* Once every healer released a lent state, how long answers still
 * sending from it (their last bytes are received) may take before they
 * are cut. */
#define FTC__MGR_DRAIN_MS 100
/* A healer's releases of its sources' lent state. */
#define FTC__MGR_RELEASE_MS 1000
/* The most state bytes a replica adopting its source's layout accepts
 * (ftc_manager_set_adopt). */
#define FTC__MGR_ADOPT_MAX_BYTES ((uint64_t)1 << 40)

/* A round's own state on the quorum thread. */
typedef struct round {
    ftc_manager *m;
    int64_t k;
    ftc_manager_quorum_opts qo;
    ftc__manager_arrival arrival;
    ftc__deadline dl;
    ftc__quorum q;
    char replica_id[FTC__QUORUM_STR_MAX];
    ftc__quorum_result res;
    ftc__manager_outcome *out;
    bool *up;                 /* per member: up to date for this group rank */
    ftc__heal_snapshot *lent; /* this round's lent state, if any */
    int64_t lend_start_ns;
} round;

/* ------------------------------------------------------------- leader */

/* Writes the round's answer: the quorum, or the failure rc (with this
 * thread's message) for every rank to return. */
static int publish_answer(round *r, int rc)
{
    char *text = NULL;
    size_t len = 0;
    char key[64];
    ftc__manager_key(key, sizeof(key), r->k, "q", -1);
    int wrc = rc == 0 ? ftc__manager_result_encode_quorum(&r->q, r->replica_id,
                                                          &text, &len)
                      : ftc__manager_result_encode_error(rc, ftc_last_error(),
                                                         &text, &len);
    if (wrc == 0) {
        wrc = ftc__manager_put(r->m, key, text, len, r->m->o.timeout_ms);
    }
    ftc__free(text);
    return wrc;
}

/* Every rank's arrival, in group rank order; their steps must agree. */
static int collect_arrivals(round *r, ftc__manager_arrival *a)
{
    ftc_manager *m = r->m;
    size_t n = (size_t)m->o.group_size;
    ftc_store_value *vals = ftc__calloc(n, sizeof(*vals));
    if (vals == NULL) {
        return ftc__seterr(FTC_ENOMEM, "arrivals");
    }
    int rc =
        ftc__manager_gather(m, r->k, "a", 0, ftc__manager_left_ms(r->dl), vals);
    if (rc == FTC_ETIMEDOUT) {
        rc = ftc__seterr(FTC_ETIMEDOUT,
                         "not every rank of the group reached the quorum in "
                         "time: %s",
                         ftc_last_error());
    }
    for (size_t g = 0; rc == 0 && g < n; g++) {
        rc = ftc__manager_arrival_decode(vals[g].data, vals[g].len, &a[g]);
        if (rc == 0 && a[g].step != a[0].step) {
            rc = ftc__seterr(FTC_EPROTO,
                             "the ranks of replica group %s are at different "
                             "steps: rank 0 at %" PRId64
                             ", rank %zu at %" PRId64,
                             m->base_id, a[0].step, g, a[g].step);
        }
    }
    ftc_store_values_free(vals, n);
    ftc__free(vals);
    return rc;
}

/* The member the leader asks the lighthouse to admit. */
static int make_member(round *r, const ftc__manager_arrival *a,
                       ftc_lighthouse_member *mem, char **data)
{
    ftc_manager *m = r->m;
    memset(mem, 0, sizeof(*mem));
    snprintf(mem->replica_id, sizeof(mem->replica_id), "%s", r->replica_id);
    /* torchft's replica address: the healing server's URL. */
    snprintf(mem->address, sizeof(mem->address), "%s%s",
             strstr(a[0].heal_address, "://") != NULL ? "" : "http://",
             a[0].heal_address);
    snprintf(mem->store_address, sizeof(mem->store_address), "%s",
             m->store_addr);
    mem->step = a[0].step;
    mem->world_size = (uint64_t)m->o.group_size;
    for (int g = 0; g < m->o.group_size; g++) {
        mem->shrink_only = mem->shrink_only || a[g].shrink_only;
        if (a[g].commit_failures > mem->commit_failures) {
            mem->commit_failures = a[g].commit_failures;
        }
    }
    size_t len;
    int rc = ftc__manager_member_data(a, (size_t)m->o.group_size, data, &len);
    mem->data = *data;
    return rc;
}

/* Deletes the keys of the round before k: every rank has arrived at k,
 * so none reads them any more. Best effort. */
static void forget_round(round *r, int64_t k)
{
    char key[64];
    for (int g = 0; g < r->m->o.group_size; g++) {
        ftc__manager_key(key, sizeof(key), k, "a", g);
        ftc_store_client_delete(r->m->store, key, NULL, r->m->o.timeout_ms);
        ftc__manager_key(key, sizeof(key), k, "v", g);
        ftc_store_client_delete(r->m->store, key, NULL, r->m->o.timeout_ms);
    }
    ftc__manager_key(key, sizeof(key), k, "q", -1);
    ftc_store_client_delete(r->m->store, key, NULL, r->m->o.timeout_ms);
}

/* The quorum that formed left this group out: the others reported it
 * unreachable. Kept (with jr's quorum) for the next join. */
static int left_out(round *r, ftc_lighthouse_join_result *jr)
{
    ftc_manager *m = r->m;
    ftc_lighthouse_quorum_fini(&m->left_out_q);
    m->left_out_q = jr->quorum;
    memset(&jr->quorum, 0, sizeof(jr->quorum));
    m->left_out_until_ns = ftc__now_ns() + jr->out_for_ms * 1000000;
    return ftc__seterr(FTC_ETIMEDOUT,
                       "left out of the quorum for %" PRId64
                       " ms: the other replica groups reported this one "
                       "unreachable",
                       jr->out_for_ms);
}

/* A group left out joins again shortly before its time out ends, saying
 * which members of the quorum that left it out it cannot reach from
 * here (connects for half the time left, 0.1-2 s): while it is still
 * cut off it stays out without failing the others' next step, and once
 * it reaches them it is let in. Returns how many it could not reach
 * (their ids in silent, valid until the next left_out). */
static size_t probe_before_join(round *r, const char **silent)
{
    ftc_manager *m = r->m;
    if (m->left_out_until_ns == 0) {
        return 0;
    }
    int64_t left = (m->left_out_until_ns - ftc__now_ns()) / 1000000;
    int64_t budget = left / 2 < 100 ? 100 : (left / 2 > 2000 ? 2000 : left / 2);
    ftc__deadline start = {m->left_out_until_ns - budget * 1000000};
    if (!ftc__deadline_is_never(r->dl) && r->dl.ns < start.ns) {
        start = r->dl;
    }
    ftc__manager_pause(m, start);
    return ftc__manager_probe(&m->left_out_q, r->replica_id,
                              ftc__deadline_in_ms(budget), silent);
}

/* Adds the n ids to the member's suspects (each once, at most
 * FTC__QUORUM_SUSPECTS_MAX; they share its array). */
static void add_suspects(ftc_lighthouse_member *mem, const char **all,
                         const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < mem->n_suspects && !seen; k++) {
            seen = strcmp(all[k], ids[i]) == 0;
        }
        if (!seen && mem->n_suspects < FTC__QUORUM_SUSPECTS_MAX) {
            all[mem->n_suspects++] = ids[i];
        }
    }
}

/* Joins the lighthouse's quorum for the group; its answer reaches every
 * rank through the store, its failure too (torchft's ranks hang when the
 * manager's lighthouse call fails). The leader of a group of one rank
 * keeps the answer in r->q and returns the failure. */
static int lead(round *r)
{
    ftc_manager *m = r->m;
    bool alone = ftc__manager_alone(m);
    ftc__manager_arrival *a = ftc__calloc((size_t)m->o.group_size, sizeof(*a));
    if (a == NULL) {
        int rc = ftc__seterr(FTC_ENOMEM, "arrivals");
        return alone ? rc : publish_answer(r, rc);
    }
    int rc = 0;
    if (alone) {
        a[0] = r->arrival;
    } else {
        rc = collect_arrivals(r, a);
        if (rc == 0 && r->k > 1) {
            forget_round(r, r->k - 1);
        }
    }
    ftc_lighthouse_member mem;
    char *data = NULL;
    const char *suspects[FTC__QUORUM_SUSPECTS_MAX];
    rc = rc != 0 ? rc : make_member(r, a, &mem, &data);
    if (rc == 0) {
        mem.n_suspects =
            ftc__manager_suspects_union(a, (size_t)m->o.group_size, suspects);
        mem.suspects = suspects;
        const char *silent[FTC__QUORUM_SUSPECTS_MAX];
        size_t n_silent = probe_before_join(r, silent);
        add_suspects(&mem, suspects, silent, n_silent);
    }
    ftc_lighthouse_join_result jr;
    memset(&jr, 0, sizeof(jr));
    if (rc == 0) {
        ftc__manager_start_heartbeat(m);
        rc = ftc_lighthouse_client_quorum(m->lh, &mem,
                                          ftc__manager_left_ms(r->dl), &jr);
        /* Let in, or told again: the last time out is over. */
        m->left_out_until_ns = 0;
        if (rc == FTC_ETIMEDOUT && jr.left_out) {
            rc = left_out(r, &jr);
        } else if (rc == FTC_ETIMEDOUT && jr.reason[0] != '\0') {
            rc = ftc__seterr(FTC_ETIMEDOUT,
                             "no quorum within the quorum "
                             "timeout: %s",
                             jr.reason);
        } else if (rc != 0) {
            rc = ftc__adderr(rc, "lighthouse %s", m->lighthouse);
        }
    }
    if (rc == 0) {
        rc = ftc__lighthouse_quorum_to_core(&jr.quorum, &r->q);
    }
    ftc_lighthouse_join_result_fini(&jr);
    ftc__free(data);
    for (int g = 0; !alone && g < m->o.group_size; g++) {
        ftc__manager_arrival_fini(&a[g]); /* decoded: owned */
    }
    ftc__free(a);
    if (alone) {
        return rc;
    }
    int wrc = publish_answer(r, rc);
    ftc__quorum_fini(&r->q);
    return rc != 0 ? rc : wrc;
}

/* -------------------------------------------------------- every rank */

static int arrive(round *r)
{
    char *text;
    size_t len;
    char key[64];
    ftc__manager_key(key, sizeof(key), r->k, "a", r->m->o.group_rank);
    int rc = ftc__manager_arrival_encode(&r->arrival, &text, &len);
    if (rc == 0) {
        rc = ftc__manager_put(r->m, key, text, len, r->m->o.timeout_ms);
        ftc__free(text);
    }
    return rc != 0 ? ftc__adderr(rc, "group store %s", r->m->store_addr) : 0;
}

/* The leader's answer (waited for in the store). */
static int read_answer(round *r)
{
    char key[64];
    ftc__manager_key(key, sizeof(key), r->k, "q", -1);
    ftc__deadline dl = ftc__manager_leader_grace(r->dl);
    void *v = NULL;
    size_t len = 0;
    int rc = ftc_store_client_get(r->m->store, key, &v, &len,
                                  ftc__manager_left_ms(dl));
    if (rc == FTC_ETIMEDOUT) {
        rc = ftc__seterr(FTC_ETIMEDOUT, "the group's leader (rank 0) did not "
                                        "answer the quorum in time");
    }
    if (rc == 0) {
        rc = ftc__manager_unseal(r->m, key, v, &len);
    }
    if (rc == 0) {
        rc = ftc__manager_result_decode(v, len, &r->q, r->replica_id);
    }
    ftc_free(v);
    return rc;
}

/* The primary's store could not be reached: its group is a suspect. */
static void blame_store_owner(round *r)
{
    for (size_t i = 0; i < r->q.n; i++) {
        if (strcmp(r->q.members[i].store_address, r->res.store_address) == 0 &&
            strcmp(r->q.members[i].replica_id, r->replica_id) != 0) {
            ftc__manager_suspect(r->m, r->q.members[i].replica_id);
        }
    }
}

/* The members that never met this rank as the group was built. */
static void blame_absent_peers(round *r)
{
    int ranks[FTC__QUORUM_SUSPECTS_MAX];
    int n = ftc_pg_create_failed_peers(ranks, FTC__QUORUM_SUSPECTS_MAX);
    n = n < FTC__QUORUM_SUSPECTS_MAX ? n : FTC__QUORUM_SUSPECTS_MAX;
    ftc__manager_suspect_ranks(
        r->m, ranks, n, (const char(*)[FTC__QUORUM_STR_MAX])r->res.replica_ids,
        (size_t)r->res.replica_world_size);
}

/* Under pg_mu: a member of the quorum being built or installed
 * (pg_quorum_id, pg_members) that the lighthouse reported lost, copied
 * into id (the ring may be overwritten once pg_mu is released); NULL if
 * none. */
static const char *lost_member_locked(ftc_manager *m,
                                      char id[FTC__QUORUM_STR_MAX])
{
    for (size_t i = 0; i < m->n_lost; i++) {
        if (ftc__manager_event_aborts(m->lost[i].id, m->lost[i].quorum_id,
                                      m->pg_quorum_id, m->pg_members,
                                      m->pg_n)) {
            memcpy(id, m->lost[i].id, FTC__QUORUM_STR_MAX);
            return id;
        }
    }
    return NULL;
}

/* Builds the process group of quorum res on the primary's store under
 * prefix. The watch cancels the build (through rdv_store) when the
 * lighthouse reports a member lost meanwhile: a dead member never
 * publishes its address, and the others would wait for it until the
 * connect timeout. A member reported lost before the build starts fails
 * it at once. */
static int build_group(round *r, const char *prefix, ftc_pg **out)
{
    ftc_manager *m = r->m;
    const ftc__quorum_result *res = &r->res;
    ftc_store_client_opts so;
    ftc_store_client_opts_init(&so);
    so.timeout_ms = m->o.connect_timeout_ms;
    so.token = m->o.token;
    ftc_store_client *sc = NULL;
    ftc_pg_opts po = m->pg_opts;
    po.epoch = (uint64_t)res->quorum_id;
    /* In attempts of at most half a second, each after a look at the
     * lost members: a primary that died (its store with it) is not
     * waited for until the connect timeout. */
    ftc__deadline dl = ftc__deadline_from_timeout(m->o.connect_timeout_ms,
                                                  m->o.connect_timeout_ms);
    char lost_id[FTC__QUORUM_STR_MAX];
    const char *lost = NULL;
    int rc;
    do {
        int64_t left = ftc__deadline_left_ms(dl);
        so.connect_timeout_ms = left < 500 ? left : 500;
        rc = ftc_store_client_connect(res->store_address, &so, &sc);
        pthread_mutex_lock(&m->pg_mu);
        lost = lost_member_locked(m, lost_id);
        pthread_mutex_unlock(&m->pg_mu);
    } while (rc == FTC_ETIMEDOUT && lost == NULL && !ftc__deadline_expired(dl));
    if (rc != 0 && lost == NULL) {
        blame_store_owner(r);
        return rc;
    }
    pthread_mutex_lock(&m->pg_mu);
    lost = lost_member_locked(m, lost_id);
    if (lost == NULL) {
        m->rdv_store = sc;
        m->rdv_seq++;
        m->rdv_why[0] = '\0';
    }
    pthread_mutex_unlock(&m->pg_mu);
    if (lost != NULL) {
        rc = ftc__seterr(
            FTC_EPEER, "replica %s was lost before the group was built", lost);
    } else {
        rc = ftc_pg_create(sc, prefix, (int)res->replica_rank,
                           (int)res->replica_world_size, &po, out);
        char why[FTC__MGR_MSG_MAX];
        pthread_mutex_lock(&m->pg_mu);
        m->rdv_store = NULL;
        memcpy(why, m->rdv_why, sizeof(why));
        pthread_cond_broadcast(&m->pg_cv);
        pthread_mutex_unlock(&m->pg_mu);
        if (rc == FTC_ECANCELED && why[0] != '\0') {
            rc = ftc__seterr(FTC_EPEER, "%s", why);
        } else if (rc != 0) {
            blame_absent_peers(r);
        }
    }
    ftc_store_client_close(sc);
    return rc;
}

/* Rebuilds the cross-replica process group when the quorum id changed:
 * this group rank's peers meet on the primary's store under
 * torchft/<quorum_id>/<group_rank>. A failure is latched (the step votes
 * no); the next quorum then has a new id.
 *
 * This (quorum) thread is the only one that changes m->pg (destroy runs
 * after joining it): it reads m->pg and uses the groups it installs
 * without pg_mu or a borrow, and writes m->pg under pg_mu. */
static void reconfigure(round *r)
{
    ftc_manager *m = r->m;
    const ftc__quorum_result *res = &r->res;
    char(*ids)[FTC__QUORUM_STR_MAX] = NULL;
    pthread_mutex_lock(&m->pg_mu);
    bool same = m->pg_quorum_id == res->quorum_id;
    ftc_pg *old = NULL;
    if (!same) {
        /* Waits until no borrower (a pushed abort, an allreduce being
         * issued) still uses the old group. The members are those of the
         * quorum being built from here on (the watch compares lost
         * members with them). */
        old = ftc__manager_pg_take_out_locked(m);
        m->pg_quorum_id = res->quorum_id;
        ids = ftc__memdup(res->replica_ids, (size_t)res->replica_world_size *
                                                sizeof(*res->replica_ids));
        ftc__free(m->pg_members);
        m->pg_members = ids;
        m->pg_n = ids != NULL ? (size_t)res->replica_world_size : 0;
    }
    pthread_mutex_unlock(&m->pg_mu);
    if (same) {
        int status = m->pg != NULL ? ftc_pg_status(m->pg) : 0;
        /* A broken group is not rebuilt under the same id (its store
         * prefix holds the old addresses): vote no, get a new id. */
        if (m->pg == NULL || status != 0) {
            ftc__manager_latch(m, status != 0 ? status : FTC_EPEER,
                               "the process group of quorum %" PRId64
                               " is unusable; waiting for a new quorum",
                               res->quorum_id);
        }
        return;
    }
    ftc_pg_destroy(old);
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "torchft/%" PRId64 "/%d", res->quorum_id,
             m->o.group_rank);
    ftc_pg *pg = NULL;
    int rc = build_group(r, prefix, &pg);
    if (rc != 0) {
        ftc__manager_latch(
            m, rc, "process group of quorum %" PRId64 " on %s: %s",
            res->quorum_id, res->store_address, ftc_last_error());
        return;
    }
    FTC_MGR_STAT(m, reconfigurations, 1);
    char lost_id[FTC__QUORUM_STR_MAX];
    pthread_mutex_lock(&m->pg_mu);
    m->pg = pg;
    /* A member lost as the build ended. */
    const char *lost = lost_member_locked(m, lost_id);
    pthread_mutex_unlock(&m->pg_mu);
    if (lost != NULL) {
        /* Not under pg_mu (it may block); this thread owns pg (above). */
        ftc__manager_pg_abort_unlocked(pg);
    }
    /* An abort pushed about the group just replaced does not concern this
     * step any more. */
    pthread_mutex_lock(&m->err_mu);
    if (m->err_code != 0 && m->err_quorum_id >= 0 &&
        m->err_quorum_id != res->quorum_id) {
        m->err_code = 0;
        m->err_msg[0] = '\0';
    }
    pthread_mutex_unlock(&m->err_mu);
    if (lost != NULL) {
        ftc__manager_latch_for(m, res->quorum_id, FTC_EPEER,
                               "replica %s was lost while quorum %" PRId64
                               " formed",
                               lost, res->quorum_id);
    }
}

/* The members that are (up) or are not (!up) up to date and have this
 * group rank: their replica ids and their healing addresses for it. */
static size_t members(const round *r, bool up, const char **ids,
                      const char **addrs, char (*buf)[FTC__QUORUM_STR_MAX])
{
    size_t n = 0;
    for (size_t i = 0; r->up != NULL && i < r->q.n; i++) {
        const ftc__quorum_member *mem = &r->q.members[i];
        if (r->up[i] == up && ftc__manager_member_heal_address(
                                  mem, r->m->o.group_rank, buf[n]) == 0) {
            ids[n] = mem->replica_id;
            addrs[n] = buf[n];
            n++;
        }
    }
    return n;
}

/* Tells the healing server the hosts of this quorum's members (their
 * healing addresses for this group rank): the lighthouse named them, so
 * their connections come first. A killed replica comes back from its
 * host, already named, before its own round says it heals from here. */
static void vouch(round *r)
{
    size_t n = r->q.n > 0 ? r->q.n : 1;
    const char **p = ftc__calloc(2 * n, sizeof(*p));
    char(*buf)[FTC__QUORUM_STR_MAX] = ftc__calloc(n, sizeof(*buf));
    if (p != NULL && buf != NULL) {
        size_t k = members(r, true, p, p + n, buf);
        k += members(r, false, p + k, p + n + k, buf + k);
        ftc__heal_server_vouch(r->m->heal_srv, p + n, k);
    }
    ftc__free(p);
    ftc__free(buf);
}

/* Serves this rank's state to the replicas that heal in this round, or
 * stops serving. Borrowed buffers are lent (the caller does not write them
 * before wait_quorum returns; the round ends by giving them back,
 * end_lending); the buffers behind callbacks are saved now, after the
 * prepare function (only when someone heals: it may be costly). A state
 * that cannot be served (prepare, a save callback or an allocation
 * failed) is refused:
 * the healers turn to their other sources or fail at once; this rank's
 * step goes on. */
static void serve(round *r)
{
    ftc_manager *m = r->m;
    vouch(r);
    if (!r->out->plan.serve) {
        ftc__heal_server_publish(m->heal_srv, NULL);
        return;
    }
    size_t n = r->q.n > 0 ? r->q.n : 1;
    const char **healers = ftc__calloc(2 * n, sizeof(*healers));
    char(*buf)[FTC__QUORUM_STR_MAX] = ftc__calloc(n, sizeof(*buf));
    size_t k = healers != NULL && buf != NULL
                   ? members(r, false, healers, healers + n, buf)
                   : 0;
    ftc__heal_snapshot *snap = NULL;
    int rc = 0;
    if (k > 0) {
        rc = ftc__manager_prepare(m, "serving");
    }
    if (k > 0 && rc == 0) {
        rc = ftc__heal_snapshot_lend(
            &m->state, r->arrival.step, atomic_load(&m->batches),
            m->o.heal_chunk_bytes, (unsigned)m->o.heal_threads, &snap);
    }
    if (rc == 0 && snap != NULL && snap->borrows) {
        rc = ftc__heal_server_lend(m->heal_srv, snap, healers, k);
    }
    ftc__free(healers);
    ftc__free(buf);
    if (k == 0 || rc != 0) {
        if (rc != 0) {
            FTC_LOG_WARN("manager.serve",
                         "%s rank %d cannot serve its state of step %" PRId64
                         " to healing replicas: %s",
                         m->base_id, m->o.group_rank, r->arrival.step,
                         ftc_last_error());
            ftc__heal_server_refuse(m->heal_srv, r->arrival.step);
        } else {
            ftc__heal_server_publish(m->heal_srv, NULL);
        }
        ftc__heal_snapshot_unref(snap);
        return;
    }
    if (!snap->borrows) {
        /* Nothing borrowed (every buffer saved): served as a copy, and
         * the round does not wait for the healers. */
        ftc__heal_server_publish(m->heal_srv, snap);
        ftc__heal_snapshot_unref(snap);
        FTC_MGR_STAT(m, snapshots, 1);
        return;
    }
    r->lent = snap;
    r->lend_start_ns = ftc__now_ns();
}

/* Ends the lending: once every healer released the buffers, or after
 * heal_lend_ms with a copy for those still at work; the answers still
 * sending from the buffers get as long again, then are cut. */
static void end_lending(round *r)
{
    ftc_manager *m = r->m;
    if (r->lent == NULL) {
        return;
    }
    ftc__deadline dl = {r->lend_start_ns + m->o.heal_lend_ms * 1000000};
    bool all = ftc__heal_server_lend_wait(m->heal_srv, dl);
    pthread_mutex_lock(&m->mu);
    bool stopping = m->stop;
    pthread_mutex_unlock(&m->mu);
    ftc__heal_snapshot *copy = NULL;
    if (!all && !stopping) {
        FTC_LOG_INFO("manager.lend_bound",
                     "%s rank %d: healers still at work after heal_lend_ms "
                     "(%lld ms): serving a copy",
                     m->base_id, m->o.group_rank, (long long)m->o.heal_lend_ms);
        /* Of the lent state: the callbacks' bytes are not saved again. */
        int rc = ftc__heal_snapshot_copy(r->lent, (unsigned)m->o.heal_threads,
                                         &copy);
        if (rc != 0) {
            FTC_LOG_WARN("manager.heal",
                         "%s: no copy of the state for the "
                         "healers still at work: %s",
                         m->base_id, ftc_last_error());
        } else {
            FTC_MGR_STAT(m, snapshots, 1);
        }
    }
    /* The server's reference keeps the lent state alive until it is
     * reclaimed; reclaim counts the others as answers still sending. */
    ftc__heal_snapshot_unref(r->lent);
    r->lent = NULL;
    ftc__heal_server_reclaim(
        m->heal_srv, copy,
        ftc__deadline_in_ms(all ? FTC__MGR_DRAIN_MS : m->o.heal_lend_ms));
    ftc__heal_snapshot_unref(copy);
    double ms = (double)(ftc__now_ns() - r->lend_start_ns) / 1e6;
    pthread_mutex_lock(&m->stats_mu);
    m->stats.lends++;
    m->stats.last_lend_ms = ms;
    pthread_mutex_unlock(&m->stats_mu);
}

/* Tells every up-to-date member (those that may lend their state in this
 * round) that this replica no longer needs it. */
static void release_sources(round *r)
{
    ftc_manager *m = r->m;
    size_t n = r->q.n > 0 ? r->q.n : 1;
    const char **ids = ftc__calloc(2 * n, sizeof(*ids));
    char(*buf)[FTC__QUORUM_STR_MAX] = ftc__calloc(n, sizeof(*buf));
    size_t k =
        ids != NULL && buf != NULL ? members(r, true, ids, ids + n, buf) : 0;
    ftc__heal_client_release(m->heal_cli, ids + n, k, r->res.max_step,
                             r->replica_id, m->o.token,
                             ftc__deadline_in_ms(FTC__MGR_RELEASE_MS));
    ftc__free(ids);
    ftc__free(buf);
}

/* Shows a heal from `from` as in progress for the lighthouse (NULL: none
 * any more). */
static void heal_progress_start(ftc_manager *m, const char *from)
{
    pthread_mutex_lock(&m->stats_mu);
    snprintf(m->heal_from, sizeof(m->heal_from), "%s",
             from != NULL ? from : "");
    m->heal_started_wall_ms = ftc__wall_ms();
    atomic_store(&m->heal_progress.bytes, 0);
    atomic_store(&m->heal_progress.total_bytes, 0);
    pthread_mutex_unlock(&m->stats_mu);
}

static void heal(round *r)
{
    ftc_manager *m = r->m;
    ftc__manager_plan *p = &r->out->plan;
    char addrs[16][FTC__QUORUM_STR_MAX];
    const char *srcs[16];
    size_t n = 0;
    for (size_t i = 0; i < p->n_sources; i++) {
        if (ftc__manager_member_heal_address(&r->q.members[p->sources[i]],
                                             m->o.group_rank, addrs[n]) == 0) {
            srcs[n] = addrs[n];
            n++;
        }
    }
    /* Read between steps, so stable through the round. */
    bool adopt = m->adopt_fn != NULL;
    /* Only healing into the registered buffers reads them (an adopted
     * state comes with its own layout). */
    int rc = adopt ? 0 : ftc__manager_prepare(m, "healing");
    void **dest = ftc__calloc(m->state.n > 0 ? m->state.n : 1, sizeof(*dest));
    rc = rc != 0 ? rc : dest == NULL ? ftc__seterr(FTC_ENOMEM, "healing") : 0;
    bool staged = adopt;
    rc = rc != 0 || adopt ? rc
                          : ftc__manager_heal_destinations(
                                m, r->qo.heal_in_place, dest, &staged);
    if (rc == 0 && n == 0) {
        rc = ftc__seterr(FTC_EPROTO, "no healing source has an address");
    }
    const char *from =
        p->n_sources > 0 ? r->q.members[p->sources[0]].replica_id : "?";
    int64_t t0 = ftc__now_ns();
    ftc__heal_fetch_result fr;
    memset(&fr, 0, sizeof(fr));
    if (rc == 0) {
        ftc__heal_fetch f;
        memset(&f, 0, sizeof(f));
        f.sources = srcs;
        f.n_sources = n;
        f.step = r->res.max_step;
        f.layout = &m->state;
        f.dest = dest;
        if (adopt) {
            f.adopt = ftc__manager_heal_adopt_layout;
            f.adopt_user = m;
            f.max_adopt_bytes = FTC__MGR_ADOPT_MAX_BYTES;
        }
        f.streams = (unsigned)m->o.heal_streams;
        f.threads = (unsigned)m->o.heal_threads;
        f.token = m->o.token;
        f.progress = &m->heal_progress;
        heal_progress_start(m, from);
        rc = ftc__heal_client_fetch(
            m->heal_cli, &f, ftc__deadline_in_ms(m->o.quorum_timeout_ms), &fr);
        heal_progress_start(m, NULL);
    }
    ftc__free(dest);
    double ms = (double)(ftc__now_ns() - t0) / 1e6;
    ftc__manager_trace_heal(m, t0, rc, r->res.max_step, from, fr.bytes);
    if (rc != 0) {
        ftc__manager_latch(m, rc, "healing to step %" PRId64 " from %s: %s",
                           r->res.max_step, from, ftc_last_error());
        return;
    }
    r->out->healed = true;
    r->out->staged = staged;
    r->out->heal_step = fr.step;
    r->out->heal_batches = fr.batches_committed;
    r->out->heal_bytes = (int64_t)fr.bytes;
    r->out->heal_ms = ms;
    snprintf(r->out->heal_source, sizeof(r->out->heal_source), "%s", from);
    FTC_LOG_INFO("manager.heal",
                 "%s rank %d healed to step %" PRId64 " from %s (%zu "
                 "sources): %llu B in %.1f ms, %u chunks fetched again",
                 m->base_id, m->o.group_rank, fr.step, from, n,
                 (unsigned long long)fr.bytes, ms, fr.refetched);
}

/* Once, before the first round: where the job's events stand (a watch
 * that does not know the epoch is answered at once with it and the last
 * event's number). The watch starts from there when the first quorum is
 * known, so a member lost between that quorum's answer and the watch's
 * first call still cancels the group's build. Not answered in a second:
 * the watch starts from its own first call. */
static void prime_watch(ftc_manager *m)
{
    ftc_lighthouse_watch_result w;
    int rc = ftc_lighthouse_client_watch(m->lh, NULL, 0, 0, 1000, &w);
    pthread_mutex_lock(&m->mu);
    m->watch_primed = true;
    if (rc == 0 && w.reset) {
        m->watch_epoch = w.epoch;
        m->watch_since = w.event_seq;
    }
    pthread_mutex_unlock(&m->mu);
    ftc_lighthouse_watch_result_fini(&w);
}

/* Runs round r; its outcome (rc and message on failure) goes to r->out. */
static void run_round(round *r)
{
    ftc_manager *m = r->m;
    int rc;
    pthread_mutex_lock(&m->mu);
    bool primed = m->watch_primed;
    pthread_mutex_unlock(&m->mu);
    if (!primed) {
        prime_watch(m);
    }
    if (ftc__manager_alone(m)) {
        rc = lead(r);
    } else {
        rc = arrive(r);
        if (rc == 0 && m->o.group_rank == 0) {
            /* The leader's failure reaches the others through the store;
             * the leader too reads its answer there. */
            lead(r);
        }
        rc = rc != 0 ? rc : read_answer(r);
    }
    if (rc == 0 && m->o.group_rank != 0) {
        pthread_mutex_lock(&m->mu);
        memcpy(m->replica_id, r->replica_id, sizeof(m->replica_id));
        pthread_mutex_unlock(&m->mu);
    }
    if (rc == 0) {
        rc = ftc__quorum_results(&r->q, r->replica_id, m->o.group_rank,
                                 m->init_sync, &r->res);
    }
    if (rc != 0) {
        r->out->rc = rc;
        snprintf(r->out->msg, sizeof(r->out->msg), "%s", ftc_last_error());
        return;
    }
    pthread_mutex_lock(&m->mu);
    if (!m->quorum_known) {
        /* The watch starts now, so that a member lost while this first
         * group is built cancels the build too. */
        m->quorum_known = true;
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    ftc__manager_outcome *o = r->out;
    o->quorum_id = r->res.quorum_id;
    o->replica_rank = r->res.replica_rank;
    o->replica_world_size = r->res.replica_world_size;
    o->max_step = r->res.max_step;
    ftc__manager_plan_build(&r->q, &r->res, m->o.group_rank, m->init_sync,
                            !r->qo.no_heal, m->o.world_size_mode,
                            m->o.min_replica_size, m->o.heal_sources, &o->plan);
    r->up = ftc__calloc(r->q.n > 0 ? r->q.n : 1, sizeof(*r->up));
    if (r->up != NULL) {
        ftc__manager_up_to_date(&r->q, &r->res, m->o.group_rank, m->init_sync,
                                r->up);
    }
    reconfigure(r);
    serve(r);
    if (o->plan.heal) {
        heal(r);
    }
    if (r->res.heal) {
        /* Healed, failed to, or not allowed to: either way done. */
        release_sources(r);
    }
    end_lending(r);
}

void *ftc__manager_quorum_main(void *arg)
{
    ftc_manager *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && m->phase != FTC__MGR_RUNNING) {
            pthread_cond_wait(&m->cv, &m->mu);
        }
        if (m->stop) {
            break;
        }
        round r;
        memset(&r, 0, sizeof(r));
        r.m = m;
        r.k = m->round;
        r.qo = m->qo;
        r.arrival = m->arrival;
        r.dl = m->round_dl;
        memcpy(r.replica_id, m->replica_id, sizeof(r.replica_id));
        ftc__manager_outcome out;
        memset(&out, 0, sizeof(out));
        r.out = &out;
        int64_t t0 = m->round_start_ns;
        pthread_mutex_unlock(&m->mu);
        ftc__quorum_init(&r.q);
        run_round(&r);
        ftc__free(r.up);
        ftc__quorum_result_fini(&r.res);
        ftc__quorum_fini(&r.q);
        out.ms = (double)(ftc__now_ns() - t0) / 1e6;
        ftc__manager_trace_round(m, r.k, &out, t0);
        pthread_mutex_lock(&m->mu);
        m->out = out;
        m->phase = FTC__MGR_DONE;
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}
