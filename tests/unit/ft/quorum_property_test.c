/* Randomised properties of the quorum core with a fixed seed: answers are
 * deterministic and independent of arrival order, match a naive model of
 * torchft's rules, and every member's result is consistent with the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ft/quorum/quorum_int.h"
#include "quorum_kit.h"
#include "testkit.h"

#define POOL 12 /* replica ids r00..r11 */

static uint64_t rng;

/* splitmix64: small, fixed and the same everywhere. */
static uint64_t next_u64(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t below(int64_t n)
{
    return (int64_t)(next_u64() % (uint64_t)n);
}

static bool chance(int percent)
{
    return below(100) < percent;
}

/* One replica of a scenario, as the lighthouse saw it. */
typedef struct replica {
    char id[8];
    bool joined, heartbeat;
    int64_t joined_ms, heartbeat_ms;
    int64_t step, commit_failures;
    bool shrink_only;
} replica;

typedef struct scenario {
    replica r[POOL];
    bool prev[POOL]; /* member of the previous quorum */
    bool has_prev;
    ftc__quorum_opts o;
    int64_t now;
} scenario;

static void make_scenario(scenario *sc)
{
    memset(sc, 0, sizeof(*sc));
    ftc__quorum_opts_init(&sc->o);
    sc->o.min_replicas = (uint64_t)below(5);
    sc->o.join_timeout_ms = chance(20) ? 0 : below(3) * 1000;
    sc->o.heartbeat_timeout_ms = 1000 + below(4) * 1000;
    sc->o.strict_shrink_only = chance(30);
    sc->now = QF_NOW;
    int64_t T = sc->o.heartbeat_timeout_ms;
    for (int i = 0; i < POOL; i++) {
        replica *r = &sc->r[i];
        snprintf(r->id, sizeof(r->id), "r%02d", i);
        r->joined = chance(55);
        /* Times straddle both timeouts, and hit them exactly now and then. */
        r->joined_ms = sc->now - below(2 * (sc->o.join_timeout_ms + 1));
        r->heartbeat = !r->joined ? chance(50) : chance(70);
        r->heartbeat_ms = chance(10) ? sc->now - T : sc->now - below(2 * T);
        if (chance(3)) {
            r->heartbeat_ms = sc->now + below(100);
        }
        r->step = below(4);
        r->shrink_only = chance(8);
        r->commit_failures = chance(10) ? 1 + below(3) : 0;
    }
    sc->has_prev = chance(60);
    /* Mostly replicas that came back, so that fast quorums are common. */
    for (int i = 0; sc->has_prev && i < POOL; i++) {
        sc->prev[i] = chance(sc->r[i].joined ? 50 : 10);
    }
    if (sc->has_prev) {
        sc->prev[below(POOL)] = true; /* a quorum is never empty */
    }
}

static void shuffle(int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)below(i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Builds the state through the API in a random order: joins, then the
 * heartbeats that came after them. */
static void build(const scenario *sc, ftc__quorum_state *s)
{
    TK_OK(ftc__quorum_state_init(s, 0));
    int order[POOL];
    for (int i = 0; i < POOL; i++) {
        order[i] = i;
    }
    shuffle(order, POOL);
    for (int k = 0; k < POOL; k++) {
        const replica *r = &sc->r[order[k]];
        if (r->joined) {
            qf_join(s, &sc->o, r->id, r->step, r->shrink_only,
                    r->commit_failures, r->joined_ms);
        }
    }
    shuffle(order, POOL);
    for (int k = 0; k < POOL; k++) {
        const replica *r = &sc->r[order[k]];
        if (r->heartbeat) {
            TK_OK(ftc__quorum_heartbeat(s, &sc->o, r->id, r->heartbeat_ms));
        }
    }
    if (sc->has_prev) {
        const char *ids[POOL];
        size_t n = 0;
        int porder[POOL];
        for (int i = 0; i < POOL; i++) {
            porder[i] = i;
        }
        shuffle(porder, POOL);
        for (int k = 0; k < POOL; k++) {
            if (sc->prev[porder[k]]) {
                ids[n++] = sc->r[porder[k]].id;
            }
        }
        qf_set_prev(s, 5, ids, n);
    }
}

/* ---- a naive model of torchft's quorum_compute (plus ftc's empty-quorum
 * guard), written from the Rust source with linear scans only ---- */

typedef struct model_decision {
    ftc__quorum_verdict verdict;
    int members[POOL]; /* indexes into sc->r, ascending = replica_id order */
    int n_members;
    char reason[FTC__QUORUM_REASON_MAX];
} model_decision;

static bool model_healthy(const scenario *sc, int i)
{
    const replica *r = &sc->r[i];
    if (!r->joined && !r->heartbeat) {
        return false;
    }
    int64_t last = r->heartbeat ? r->heartbeat_ms : r->joined_ms;
    int64_t elapsed = sc->now > last ? sc->now - last : 0;
    return elapsed < sc->o.heartbeat_timeout_ms;
}

static void model_compute(const scenario *sc, model_decision *m)
{
    memset(m, 0, sizeof(*m));
    int hr = 0;
    int hp = 0;
    int p = 0;
    bool shrink = false;
    int64_t first_joined = INT64_MAX;
    int cand[POOL];
    int nc = 0;
    for (int i = 0; i < POOL; i++) {
        bool healthy = model_healthy(sc, i);
        hr += healthy;
        p += sc->r[i].joined;
        if (healthy && sc->r[i].joined) {
            hp++;
            cand[nc++] = i;
            shrink = shrink || sc->r[i].shrink_only;
            if (sc->r[i].joined_ms < first_joined) {
                first_joined = sc->r[i].joined_ms;
            }
        }
    }
    char meta[128];
    snprintf(meta, sizeof(meta),
             "[%d/%d participants healthy][%d heartbeating][shrink_only=%s]",
             hp, p, hr, shrink ? "true" : "false");
    bool fast = sc->has_prev;
    if (sc->has_prev) {
        if (shrink) {
            int kept = 0;
            for (int k = 0; k < nc; k++) {
                if (sc->prev[cand[k]]) {
                    cand[kept++] = cand[k];
                }
            }
            nc = kept;
        }
        for (int i = 0; i < POOL; i++) {
            if (sc->prev[i] && !(sc->r[i].joined && model_healthy(sc, i))) {
                fast = false;
            }
        }
    }
    int counted = sc->o.strict_shrink_only ? nc : hp;
    if (fast && (uint64_t)counted >= sc->o.min_replicas) {
        m->verdict = FTC__QUORUM_FAST;
        snprintf(m->reason, sizeof(m->reason), "Fast quorum found! %s", meta);
        goto members;
    }
    if ((uint64_t)counted < sc->o.min_replicas) {
        m->verdict = FTC__QUORUM_NEED_MIN;
        snprintf(m->reason, sizeof(m->reason),
                 "New quorum not ready, only have %d participants, need "
                 "min_replicas %llu %s",
                 counted, (unsigned long long)sc->o.min_replicas, meta);
        return;
    }
    if (counted <= hr / 2) {
        m->verdict = FTC__QUORUM_NEED_HALF;
        snprintf(m->reason, sizeof(m->reason),
                 "New quorum not ready, only have %d participants, need at "
                 "least half of %d healthy workers %s",
                 counted, hr, meta);
        return;
    }
    int64_t waited = sc->now > first_joined ? sc->now - first_joined : 0;
    if (hp != hr && waited < sc->o.join_timeout_ms) {
        m->verdict = FTC__QUORUM_WAIT_STRAGGLER;
        snprintf(m->reason, sizeof(m->reason),
                 "Valid quorum with %d participants, waiting for %d healthy "
                 "but not participating stragglers due to join timeout %s",
                 hp, hr - hp, meta);
        return;
    }
    if (nc == 0) {
        m->verdict = FTC__QUORUM_NONE_LEFT;
        snprintf(m->reason, sizeof(m->reason),
                 "New quorum not ready, shrink_only leaves no member of the "
                 "previous quorum %s",
                 meta);
        return;
    }
    m->verdict = FTC__QUORUM_VALID;
    snprintf(m->reason, sizeof(m->reason), "Valid quorum found %s", meta);
members:
    memcpy(m->members, cand, sizeof(cand));
    m->n_members = nc;
}

/* Decisions equal in all that a shell sees. */
static void assert_same_decision(const ftc__quorum_state *a,
                                 const ftc__quorum_decision *da,
                                 const ftc__quorum_state *b,
                                 const ftc__quorum_decision *db)
{
    assert_int_equal(da->met, db->met);
    assert_int_equal(da->verdict, db->verdict);
    assert_string_equal(da->reason, db->reason);
    assert_int_equal(da->next_ms, db->next_ms);
    assert_int_equal(da->n_members, db->n_members);
    for (size_t i = 0; i < da->n_members; i++) {
        const ftc__quorum_member *ma =
            &a->participants[da->member_idx[i]].member;
        const ftc__quorum_member *mb =
            &b->participants[db->member_idx[i]].member;
        assert_string_equal(ma->replica_id, mb->replica_id);
        assert_int_equal(ma->step, mb->step);
    }
}

static void check_against_model(const scenario *sc, const ftc__quorum_state *s,
                                const ftc__quorum_decision *d)
{
    model_decision m;
    model_compute(sc, &m);
    assert_int_equal(d->verdict, m.verdict);
    assert_string_equal(d->reason, m.reason);
    assert_int_equal(d->met, m.verdict == FTC__QUORUM_FAST ||
                                 m.verdict == FTC__QUORUM_VALID);
    if (!d->met) {
        assert_int_equal(d->n_members, 0);
        return;
    }
    assert_true(d->n_members > 0);
    assert_int_equal(d->n_members, m.n_members);
    for (int i = 0; i < m.n_members; i++) {
        const ftc__quorum_member *got =
            &s->participants[d->member_idx[i]].member;
        assert_string_equal(got->replica_id, sc->r[m.members[i]].id);
        assert_int_equal(got->step, sc->r[m.members[i]].step);
    }
}

static ftc__quorum_decision compute(int64_t now, const ftc__quorum_state *s,
                                    const ftc__quorum_opts *o)
{
    ftc__quorum_decision d;
    TK_OK(ftc__quorum_compute(now, s, o, &d));
    return d;
}

/* The answer cannot change before next_ms, and next_ms is in the future. */
static void check_next_ms(const scenario *sc, const ftc__quorum_state *s,
                          const ftc__quorum_decision *d)
{
    if (d->next_ms == INT64_MAX) {
        return;
    }
    assert_true(d->next_ms > sc->now);
    ftc__quorum_decision later = compute(d->next_ms - 1, s, &sc->o);
    assert_same_decision(s, d, s, &later);
    ftc__quorum_decision_fini(&later);
}

/* Forming the quorum: the id rule, the new previous quorum and who stays. */
static void check_tick(const scenario *sc, ftc__quorum_state *s,
                       const ftc__quorum_decision *d)
{
    char ids[POOL][8];
    size_t n = d->n_members;
    bool failed = false;
    for (size_t i = 0; i < n; i++) {
        const ftc__quorum_member *m = &s->participants[d->member_idx[i]].member;
        memcpy(ids[i], m->replica_id, sizeof(ids[i]));
        failed = failed || m->commit_failures > 0;
    }
    bool same = sc->has_prev && s->prev.n == n;
    for (size_t i = 0; same && i < n; i++) {
        same = strcmp(s->prev.members[i].replica_id, ids[i]) == 0;
    }
    size_t before = s->n_participants;
    int64_t id_before = s->prev.quorum_id;
    ftc__quorum_tick_result t;
    TK_OK(ftc__quorum_tick(s, &sc->o, sc->now, 77, &t));
    assert_true(t.met);
    ftc__quorum_id_change want = !sc->has_prev ? FTC__QUORUM_ID_FIRST
                                 : !same       ? FTC__QUORUM_ID_MEMBERSHIP
                                 : failed      ? FTC__QUORUM_ID_COMMIT_FAILURES
                                               : FTC__QUORUM_ID_KEPT;
    assert_int_equal(t.change, want);
    int64_t want_id = !sc->has_prev                 ? 1
                      : want == FTC__QUORUM_ID_KEPT ? id_before
                                                    : id_before + 1;
    assert_int_equal(s->prev.quorum_id, want_id);
    assert_int_equal(s->prev.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(s->prev.members[i].replica_id, ids[i]);
    }
    assert_int_equal(s->n_participants, before - n);
    for (size_t i = 0; i < s->n_participants; i++) {
        assert_int_equal(
            ftc__quorum_find(&s->prev, s->participants[i].member.replica_id),
            -1);
        assert_int_equal(s->participants[i].joined_ms, sc->now);
    }
}

/* Every member's result, for one group rank, agrees with every other's. */
static void check_results(const ftc__quorum *q, int64_t group_rank,
                          bool init_sync)
{
    size_t n = q->n;
    ftc__quorum_result r[POOL];
    int64_t max_step = 0;
    int64_t max_cf = 0;
    size_t at_max = 0;
    for (size_t i = 0; i < n; i++) {
        TK_OK(ftc__quorum_results(q, q->members[i].replica_id, group_rank,
                                  init_sync, &r[i]));
        if (i == 0 || q->members[i].step > max_step) {
            max_step = q->members[i].step;
        }
        if (q->members[i].commit_failures > max_cf) {
            max_cf = q->members[i].commit_failures;
        }
    }
    for (size_t i = 0; i < n; i++) {
        at_max += q->members[i].step == max_step;
    }
    bool rank_seen[POOL] = {false};
    bool max_rank_seen[POOL] = {false};
    int sent_to[POOL] = {0};
    size_t not_healing_at_zero = 0;
    for (size_t i = 0; i < n; i++) {
        const ftc__quorum_result *x = &r[i];
        /* A consistent view: same id, members, primary and max step. */
        assert_int_equal(x->quorum_id, q->quorum_id);
        assert_int_equal(x->replica_world_size, n);
        assert_int_equal(x->max_step, max_step);
        assert_int_equal(x->max_world_size, at_max);
        assert_int_equal(x->commit_failures, max_cf);
        assert_string_equal(x->store_address, r[0].store_address);
        for (size_t k = 0; k < n; k++) {
            assert_string_equal(x->replica_ids[k], r[0].replica_ids[k]);
            if (k > 0) {
                assert_true(strcmp(x->replica_ids[k - 1], x->replica_ids[k]) <
                            0);
            }
        }
        /* Distinct ranks 0..n-1, each naming this member. */
        assert_true(x->replica_rank >= 0 && (size_t)x->replica_rank < n);
        assert_false(rank_seen[x->replica_rank]);
        rank_seen[x->replica_rank] = true;
        assert_string_equal(x->replica_ids[x->replica_rank],
                            q->members[i].replica_id);
        int64_t step = q->members[i].step;
        if (step == max_step) {
            assert_true(x->max_replica_rank >= 0 &&
                        (size_t)x->max_replica_rank < at_max);
            assert_false(max_rank_seen[x->max_replica_rank]);
            max_rank_seen[x->max_replica_rank] = true;
        } else {
            assert_int_equal(x->max_replica_rank, -1);
        }
        /* Who heals: everyone behind; at step 0 with init_sync everyone
         * but the primary, whose store is the one every rank uses. */
        bool primary =
            strcmp(x->store_address, q->members[i].store_address) == 0;
        bool want_heal =
            step != max_step || (init_sync && max_step == 0 && !primary);
        assert_int_equal(x->heal, want_heal);
        if (primary) {
            assert_int_equal(step, max_step);
        }
        if (max_step == 0 && init_sync && !x->heal) {
            not_healing_at_zero++;
        }
        if (!x->heal) {
            assert_int_equal(x->recover_src_replica_rank, -1);
            assert_string_equal(x->recover_src_manager_address, "");
            continue;
        }
        /* A healer's source is up to date and not healing itself. */
        int64_t src = x->recover_src_replica_rank;
        assert_true(src >= 0 && (size_t)src < n);
        long si = ftc__quorum_find(q, x->replica_ids[src]);
        assert_true(si >= 0);
        assert_int_equal(q->members[si].step, max_step);
        assert_false(r[si].heal);
        assert_string_equal(x->recover_src_manager_address,
                            q->members[si].address);
        /* ... and lists it among its destinations exactly once. */
        int listed = 0;
        for (size_t k = 0; k < r[si].n_recover_dst; k++) {
            listed += r[si].recover_dst_replica_ranks[k] == x->replica_rank;
        }
        assert_int_equal(listed, 1);
        sent_to[x->replica_rank]++;
    }
    if (max_step == 0 && init_sync) {
        assert_int_equal(not_healing_at_zero, 1);
    }
    /* Destinations are exactly the healers, each once, ascending. */
    size_t healers = 0;
    size_t listed_total = 0;
    for (size_t i = 0; i < n; i++) {
        healers += r[i].heal;
        listed_total += r[i].n_recover_dst;
    }
    assert_int_equal(listed_total, healers);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < r[i].n_recover_dst; k++) {
            int64_t dst = r[i].recover_dst_replica_ranks[k];
            assert_int_equal(sent_to[dst], 1);
            if (k > 0) {
                assert_true(r[i].recover_dst_replica_ranks[k - 1] < dst);
            }
        }
        assert_true(r[i].n_recover_dst == 0 || !r[i].heal);
    }
    for (size_t i = 0; i < n; i++) {
        ftc__quorum_result_fini(&r[i]);
    }
}

/* The same quorum, members in another order, gives the same results. */
static void check_results_order_free(const ftc__quorum *q)
{
    ftc__quorum copy;
    ftc__quorum_init(&copy);
    TK_OK(ftc__quorum_copy(&copy, q));
    for (size_t i = copy.n; i > 1; i--) {
        size_t j = (size_t)below((int64_t)i);
        ftc__quorum_member t = copy.members[i - 1];
        copy.members[i - 1] = copy.members[j];
        copy.members[j] = t;
    }
    for (size_t i = 0; i < q->n; i++) {
        ftc__quorum_result a, b;
        int64_t g = below(4);
        TK_OK(ftc__quorum_results(q, q->members[i].replica_id, g, true, &a));
        TK_OK(
            ftc__quorum_results(&copy, q->members[i].replica_id, g, true, &b));
        assert_int_equal(a.replica_rank, b.replica_rank);
        assert_int_equal(a.recover_src_replica_rank,
                         b.recover_src_replica_rank);
        assert_string_equal(a.store_address, b.store_address);
        assert_int_equal(a.n_recover_dst, b.n_recover_dst);
        for (size_t k = 0; k < a.n_recover_dst; k++) {
            assert_int_equal(a.recover_dst_replica_ranks[k],
                             b.recover_dst_replica_ranks[k]);
        }
        ftc__quorum_result_fini(&a);
        ftc__quorum_result_fini(&b);
    }
    ftc__quorum_fini(&copy);
}

static long iterations(void)
{
    const char *env = getenv("FTC_QUORUM_PROPERTY_ITERS");
    long n = env ? strtol(env, NULL, 10) : 0;
    return n > 0 ? n : 20000;
}

static void random_scenarios_hold_every_property(void **state)
{
    (void)state;
    rng = 20240607;
    long n = iterations();
    long formed = 0;
    long healed = 0;
    long at_zero = 0;
    long verdicts[FTC__QUORUM_NONE_LEFT + 1] = {0};
    for (long it = 0; it < n; it++) {
        scenario sc;
        make_scenario(&sc);
        ftc__quorum_state s1, s2;
        build(&sc, &s1);
        build(&sc, &s2); /* another random arrival order */
        ftc__quorum_decision d1 = compute(sc.now, &s1, &sc.o);
        ftc__quorum_decision again = compute(sc.now, &s1, &sc.o);
        ftc__quorum_decision d2 = compute(sc.now, &s2, &sc.o);
        assert_same_decision(&s1, &d1, &s1, &again);
        assert_same_decision(&s1, &d1, &s2, &d2);
        check_against_model(&sc, &s1, &d1);
        check_next_ms(&sc, &s1, &d1);
        verdicts[d1.verdict]++;
        if (d1.met) {
            formed++;
            check_tick(&sc, &s1, &d1);
            for (int64_t g = 0; g < 3; g++) {
                check_results(&s1.prev, g, true);
                check_results(&s1.prev, g, false);
            }
            check_results_order_free(&s1.prev);
            qf_check_compact(&s1.prev);
            bool zero = true;
            for (size_t i = 0; i < s1.prev.n; i++) {
                zero = zero && s1.prev.members[i].step == 0;
            }
            at_zero += zero;
            for (size_t i = 1; i < s1.prev.n; i++) {
                if (s1.prev.members[i].step != s1.prev.members[0].step) {
                    healed++;
                    break;
                }
            }
        }
        ftc__quorum_decision_fini(&d1);
        ftc__quorum_decision_fini(&again);
        ftc__quorum_decision_fini(&d2);
        ftc__quorum_state_fini(&s1);
        ftc__quorum_state_fini(&s2);
    }
    printf("%ld scenarios: %ld formed, %ld with mixed steps, %ld all at step "
           "0; verdicts fast %ld min %ld half %ld straggler %ld valid %ld "
           "none-left %ld\n",
           n, formed, healed, at_zero, verdicts[FTC__QUORUM_FAST],
           verdicts[FTC__QUORUM_NEED_MIN], verdicts[FTC__QUORUM_NEED_HALF],
           verdicts[FTC__QUORUM_WAIT_STRAGGLER], verdicts[FTC__QUORUM_VALID],
           verdicts[FTC__QUORUM_NONE_LEFT]);
    /* The generator must reach every branch, or the test proves little. */
    for (int v = 0; v <= FTC__QUORUM_NONE_LEFT; v++) {
        assert_true(verdicts[v] > n / 1000);
    }
    assert_true(healed > n / 100);
    assert_true(at_zero > n / 1000);
}

/* Random rules: min_replicas 1-4, join timeout 0-199 ms, heartbeat
 * timeout 1-300 ms, either shrink_only rule, and in half the runs
 * replicas left out as unreachable for 1-100 ms. */
static ftc__quorum_opts random_rules(void)
{
    ftc__quorum_opts o =
        qf_opts((uint64_t)below(4) + 1, below(200), 1 + below(300));
    o.strict_shrink_only = chance(50);
    o.exclude_ms = chance(50) ? 1 + below(100) : 0;
    return o;
}

/* Gives m one to three random replicas it could not reach. */
static void random_suspects(ftc__quorum_member *m)
{
    char ids[3][8];
    const char *p[3];
    size_t n = 1 + (size_t)below(3);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "r%02d", (int)below(POOL));
        p[i] = ids[i];
    }
    TK_OK(ftc__quorum_member_set_suspects(m, p, n));
}

/* A state driven as the lighthouse drives it: ticked only after an input
 * that can change the decision or at its wake-up time, and not at all
 * when the hint says nothing can form. */
typedef struct driven {
    ftc__quorum_state s;
    int64_t wake_ms;
} driven;

static void drive_tick(driven *d, const ftc__quorum_opts *o, int64_t now,
                       bool shortcut)
{
    if (shortcut && ftc__quorum_cannot_form(&d->s, o, now)) {
        d->wake_ms = d->s.hint.until_ms;
        return;
    }
    for (int guard = 0; guard < 2 * POOL + 2; guard++) {
        ftc__quorum_tick_result t;
        TK_OK(ftc__quorum_tick(&d->s, o, now, 0, &t));
        d->wake_ms = t.next_ms;
        if (!t.met) {
            return;
        }
    }
    fail_msg("ticks kept forming quorums");
}

/* Forgiven exclusions (forgotten at a tick, which the shortcut skips)
 * decide nothing: both states drop them before they are compared. */
static void expect_same_state(ftc__quorum_state *a, ftc__quorum_state *b,
                              const ftc__quorum_opts *o, int64_t now)
{
    ftc__quorum_exclude_forgive(a, o, now);
    ftc__quorum_exclude_forgive(b, o, now);
    assert_int_equal(a->has_prev, b->has_prev);
    assert_int_equal(a->n_participants, b->n_participants);
    assert_int_equal(a->prev.quorum_id, b->prev.quorum_id);
    assert_int_equal(a->prev.n, b->prev.n);
    for (size_t i = 0; i < a->prev.n; i++) {
        assert_string_equal(a->prev.members[i].replica_id,
                            b->prev.members[i].replica_id);
    }
    assert_int_equal(a->n_excluded, b->n_excluded);
    for (size_t i = 0; i < a->n_excluded; i++) {
        assert_string_equal(a->excluded[i].replica_id,
                            b->excluded[i].replica_id);
        assert_int_equal(a->excluded[i].until_ms, b->excluded[i].until_ms);
    }
}

/* One input to both states; whether it may change the decision (what
 * makes the lighthouse tick). Options change too (PUT /v1/jobs/{job}),
 * and small tables make joins prune heartbeats. */
static bool same_input(driven *a, driven *b, ftc__quorum_opts *o, int64_t now)
{
    char id[8];
    snprintf(id, sizeof(id), "r%02d", (int)below(POOL));
    int op = (int)below(20);
    if (op < 10) {
        ftc__quorum_member m = qf_member(id, below(3));
        m.shrink_only = chance(10);
        m.commit_failures = chance(10);
        if (chance(20)) {
            random_suspects(&m);
        }
        int rc = ftc__quorum_join(&a->s, o, &m, now);
        TK_EXPECT(ftc__quorum_join(&b->s, o, &m, now), rc);
        ftc__quorum_member_clear_suspects(&m);
        return rc == 0;
    }
    if (op < 14) {
        bool was = ftc__quorum_is_healthy(&b->s, o, id, now);
        int rc = ftc__quorum_heartbeat(&a->s, o, id, now);
        TK_EXPECT(ftc__quorum_heartbeat(&b->s, o, id, now), rc);
        return rc == 0 && !was;
    }
    if (op < 16) {
        int rc = ftc__quorum_leave(&a->s, id);
        TK_EXPECT(ftc__quorum_leave(&b->s, id), rc);
        return rc == 0;
    }
    if (op < 18) {
        int rc = ftc__quorum_forget(&a->s, id);
        TK_EXPECT(ftc__quorum_forget(&b->s, id), rc);
        return rc == 0;
    }
    if (op == 18) {
        int field = (int)below(4);
        if (field == 0) {
            o->min_replicas = (uint64_t)below(4) + 1;
        } else if (field == 1) {
            o->join_timeout_ms = below(200);
        } else if (field == 2) {
            o->heartbeat_timeout_ms = 1 + below(300);
        } else if (chance(50)) {
            o->exclude_ms = chance(50) ? 1 + below(100) : 0;
        } else {
            o->strict_shrink_only = !o->strict_shrink_only;
        }
        return true;
    }
    return false; /* only time passes */
}

/* ftc__quorum_cannot_form is only a shortcut: the lighthouse that takes
 * it forms exactly the quorums that ticking after every input forms, in
 * the same order, with the same ids; whenever it says no quorum can form
 * the full decision agrees; the time it sleeps to is not past the
 * decision's own. Random inputs over time, every rule (min_replicas, the
 * half guard, stragglers, fast quorums, shrink_only, expiring heartbeats,
 * replicas reported unreachable and left out, options changed, full
 * tables). */
static void shortcut_forms_the_same_quorums(void **state)
{
    (void)state;
    rng = 20261207;
    long skipped = 0;
    for (long it = 0; it < iterations() / 20; it++) {
        ftc__quorum_opts o = random_rules();
        o.max_replicas = 3 + (uint32_t)below(10);
        driven a = {.wake_ms = INT64_MAX}, b = {.wake_ms = INT64_MAX};
        TK_OK(ftc__quorum_state_init(&a.s, 0));
        TK_OK(ftc__quorum_state_init(&b.s, 0));
        int64_t now = QF_NOW;
        for (int k = 0; k < 150; k++) {
            now += below(60);
            drive_tick(&a, &o, now, false);
            if (now >= b.wake_ms) {
                drive_tick(&b, &o, now, true);
            }
            expect_same_state(&a.s, &b.s, &o, now);
            bool may_change = same_input(&a, &b, &o, now);
            drive_tick(&a, &o, now, false);
            if (may_change && ftc__quorum_cannot_form(&b.s, &o, now)) {
                /* The full decision agrees, and the shortcut's wake-up is
                 * not later than the decision's own. */
                ftc__quorum_decision d = compute(now, &b.s, &o);
                assert_false(d.met);
                assert_true(b.s.hint.until_ms <= d.next_ms);
                ftc__quorum_decision_fini(&d);
                skipped++;
            }
            if (may_change) {
                drive_tick(&b, &o, now, true);
            }
            expect_same_state(&a.s, &b.s, &o, now);
        }
        ftc__quorum_state_fini(&a.s);
        ftc__quorum_state_fini(&b.s);
    }
    assert_true(skipped > iterations() / 20);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_scenarios_hold_every_property),
        cmocka_unit_test(shortcut_forms_the_same_quorums),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
