/* The lighthouse over real HTTP on loopback, in one process: torchft's
 * lighthouse scenarios through the C client, jobs, long-polls, watches,
 * auth, limits, hostile requests, status, metrics and the dashboard. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lighthouse_kit.h"
#include "testkit.h"

typedef struct fixture {
    ftc_lighthouse *lh;
    char addr[128];
    ftc_lighthouse_client *c;
} fixture;

/* Options for tests of the rules: heartbeats that never expire mid-test
 * however slow the machine (torchft's tests use 5 s). */
static ftc_lighthouse_opts rules_opts(uint64_t min_replicas,
                                      int64_t join_timeout_ms)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    o.min_replicas = min_replicas;
    o.join_timeout_ms = join_timeout_ms;
    o.heartbeat_timeout_ms = 600000;
    return o;
}

static ftc_lighthouse_client *client(const char *addr, const char *job,
                                     const char *token)
{
    ftc_lighthouse_client_opts co;
    ftc_lighthouse_client_opts_init(&co);
    co.job = job;
    co.token = token;
    co.timeout_ms = tk_ms(20000);
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(addr, &co, &c));
    return c;
}

static void start(fixture *f, const ftc_lighthouse_opts *o)
{
    TK_OK(ftc_lighthouse_create(o, &f->lh));
    TK_OK(ftc_lighthouse_address(f->lh, f->addr, sizeof(f->addr)));
    f->c = client(f->addr, NULL, o != NULL ? o->token : NULL);
}

static void stop(fixture *f)
{
    ftc_lighthouse_client_destroy(f->c);
    ftc_lighthouse_destroy(f->lh);
}

/* Joins every member, each on its own thread, in order: each is a
 * participant before the next asks, as in torchft's tests. */
static void join_in_order(fixture *f, ftc_lighthouse_client *c, lt_join *js,
                          const ftc_lighthouse_member *ms, size_t n,
                          const char *job)
{
    for (size_t i = 0; i < n; i++) {
        lt_join_start(&js[i], c, &ms[i], tk_ms(20000));
        if (i + 1 < n) {
            TK_WAIT_UNTIL(lt_is_participant(f->addr, job, ms[i].replica_id),
                          10000);
        }
    }
}

static void expect_joined(lt_join *j)
{
    if (lt_join_wait(j) != 0) {
        fail_msg("join of %s: %s: %s", j->member.replica_id,
                 ftc_err_name(j->rc), j->error);
    }
}

/* ------------------------------------------------ torchft's scenarios */

static void test_lighthouse_e2e(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1);
    start(&f, &o);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "foo", tk_ms(5000), &ack));
    assert_true(ack.epoch >= 1);
    ftc_lighthouse_member m = lt_member("foo", 10);
    ftc_lighthouse_join_result r;
    TK_OK(ftc_lighthouse_client_quorum(f.c, &m, tk_ms(5000), &r));
    assert_int_equal(r.epoch, ack.epoch);
    assert_int_equal(r.quorum.n_members, 1);
    assert_string_equal(r.quorum.members[0].replica_id, "foo");
    assert_int_equal(r.quorum.members[0].step, 10);
    /* torchft's id 1, with this lighthouse's epoch in the high half. */
    assert_int_equal(r.quorum.quorum_id, ((int64_t)ack.epoch << 32) | 1);
    assert_non_null(strstr(r.reason, "quorum found"));
    ftc_lighthouse_join_result_fini(&r);
    stop(&f);
}

static void test_lighthouse_join_during_shrink(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    /* 1. First quorum. */
    ftc_lighthouse_member first[2] = {lt_member("replica0", 1),
                                      lt_member("replica1", 1)};
    lt_join js[3], js2[3];
    join_in_order(&f, f.c, js, first, 2, "default");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    assert_int_equal(js[1].result.quorum.n_members, 2);
    assert_string_equal(js[1].result.quorum.members[1].address,
                        "addr_replica1");
    int64_t id1 = js[1].result.quorum.quorum_id;
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);

    /* 2. A joiner, then replica0 asking shrink_only: the quorum keeps the
     * previous members only; the joiner waits on. */
    ftc_lighthouse_member second[3] = {lt_member("joiner", 1),
                                       lt_member("replica0", 2),
                                       lt_member("replica1", 2)};
    second[1].shrink_only = true;
    join_in_order(&f, f.c, js2, second, 3, "default");
    expect_joined(&js2[1]);
    expect_joined(&js2[2]);
    const ftc_lighthouse_quorum *q = &js2[2].result.quorum;
    assert_int_equal(q->n_members, 2);
    assert_int_equal(lt_find(q, "joiner"), -1);
    assert_int_equal(q->members[1].step, 2);
    assert_int_equal(q->quorum_id, id1); /* same members: same id */
    assert_true(lt_is_participant(f.addr, "default", "joiner"));
    lt_join *joiner = &js2[0];
    ftc_lighthouse_join_result_fini(&js2[1].result);
    ftc_lighthouse_join_result_fini(&js2[2].result);

    /* 3. Without shrink_only the joiner gets in. */
    ftc_lighthouse_member third[2] = {lt_member("replica0", 3),
                                      lt_member("replica1", 3)};
    join_in_order(&f, f.c, js, third, 2, "default");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    expect_joined(joiner);
    q = &joiner->result.quorum;
    assert_int_equal(q->n_members, 3);
    assert_true(lt_find(q, "joiner") >= 0);
    assert_string_equal(q->members[2].replica_id, "replica1");
    assert_int_equal(q->members[2].step, 3);
    assert_true(q->quorum_id != id1);
    assert_int_equal(q->quorum_id, js[0].result.quorum.quorum_id);
    ftc_lighthouse_join_result_fini(&joiner->result);
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);
    stop(&f);
}

static void test_lighthouse_commit_failures(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    lt_join js[2];
    int64_t first_id = 0;
    for (int round = 0; round < 3; round++) {
        ftc_lighthouse_member ms[2] = {lt_member("replica0", 10),
                                       lt_member("replica1", 10)};
        ms[1].commit_failures = round == 2 ? 2 : 0;
        join_in_order(&f, f.c, js, ms, 2, "default");
        expect_joined(&js[0]);
        expect_joined(&js[1]);
        const ftc_lighthouse_quorum *q = &js[0].result.quorum;
        assert_int_equal(q->n_members, 2);
        if (round == 0) {
            first_id = q->quorum_id;
        }
        /* Stable for two rounds; a commit failure bumps the id. */
        assert_int_equal(q->quorum_id, round < 2 ? first_id : first_id + 1);
        assert_int_equal(q->members[1].commit_failures, round == 2 ? 2 : 0);
        ftc_lighthouse_join_result_fini(&js[0].result);
        ftc_lighthouse_join_result_fini(&js[1].result);
    }
    assert_int_equal(lt_status_int(f.addr, "default", "counter"), 2);
    stop(&f);
}

/* ---------------------------------------------------------------- jobs */

static void two_jobs_are_isolated(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    start(&f, &o);
    char *out = NULL;
    assert_int_equal(lt_http(f.addr, "PUT", "/v1/jobs/alpha",
                             "{\"min_replicas\": 2}", NULL, &out),
                     200);
    assert_non_null(strstr(out, "\"min_replicas\":2"));
    free(out);
    ftc_lighthouse_client *a = client(f.addr, "alpha", NULL);
    ftc_lighthouse_client *b = client(f.addr, "beta", NULL);
    /* beta: min_replicas 1, one member suffices. */
    ftc_lighthouse_member b0 = lt_member("b0", 4);
    ftc_lighthouse_join_result rb;
    TK_OK(ftc_lighthouse_client_quorum(b, &b0, tk_ms(5000), &rb));
    assert_int_equal(rb.quorum.n_members, 1);
    /* alpha: needs two; one alone times out with the reason, and is no
     * participant afterwards. */
    ftc_lighthouse_member a0 = lt_member("a0", 1);
    ftc_lighthouse_join_result ra;
    int64_t t0 = tk_now_ms();
    /* The lighthouse answers 10% before the deadline, with the reason:
     * 200 ms of 2 s for its answer to arrive on a loaded machine. */
    TK_EXPECT(ftc_lighthouse_client_quorum(a, &a0, tk_ms(2000), &ra),
              FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= tk_ms(1500));
    assert_non_null(strstr(ra.reason, "need min_replicas 2"));
    assert_non_null(strstr(ftc_last_error(), "need min_replicas 2"));
    assert_int_equal(ra.quorum.n_members, 0);
    assert_false(lt_is_participant(f.addr, "alpha", "a0"));
    uint32_t alpha_epoch = ra.epoch;
    assert_true(alpha_epoch != rb.epoch);
    ftc_lighthouse_join_result_fini(&ra);
    /* alpha forms its own quorum; beta's is untouched. */
    lt_join js[2];
    ftc_lighthouse_member ms[2] = {lt_member("a0", 1), lt_member("a1", 1)};
    join_in_order(&f, a, js, ms, 2, "alpha");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    assert_int_equal(js[1].result.quorum.n_members, 2);
    assert_int_equal(lt_find(&js[1].result.quorum, "b0"), -1);
    assert_int_equal(js[1].result.epoch, alpha_epoch);
    json_t *st = lt_get_json(f.addr, "/v1/jobs/beta/status");
    json_t *members = json_object_get(json_object_get(st, "quorum"), "members");
    assert_int_equal(json_array_size(members), 1);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(st, "options"), "min_replicas")),
                     1);
    json_decref(st);
    json_t *jobs = lt_get_json(f.addr, "/v1/jobs");
    assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), 2);
    json_decref(jobs);
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);
    ftc_lighthouse_join_result_fini(&rb);
    ftc_lighthouse_client_destroy(a);
    ftc_lighthouse_client_destroy(b);
    stop(&f);
}

static void limits_on_jobs_and_tables(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    o.max_jobs = 2;
    o.max_replicas = 2;
    start(&f, &o);
    ftc_lighthouse_client *j2 = client(f.addr, "j2", NULL);
    ftc_lighthouse_client *j3 = client(f.addr, "j3", NULL);
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "a", tk_ms(5000), NULL));
    TK_OK(ftc_lighthouse_client_heartbeat(j2, "a", tk_ms(5000), NULL));
    TK_EXPECT(ftc_lighthouse_client_heartbeat(j3, "a", tk_ms(5000), NULL),
              FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "too_many_jobs"));
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "b", tk_ms(5000), NULL));
    TK_EXPECT(ftc_lighthouse_client_heartbeat(f.c, "c", tk_ms(5000), NULL),
              FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "table_full"));
    char *out = NULL;
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/heartbeat",
                             "{\"replica_id\": \"c\"}", NULL, &out),
                     429);
    free(out);
    /* Bad options change nothing. */
    assert_int_equal(lt_http(f.addr, "PUT", "/v1/jobs/default",
                             "{\"min_replicas\": 3, \"max_replicas\": 0}", NULL,
                             NULL),
                     400);
    json_t *st = lt_get_json(f.addr, "/v1/jobs/default/status");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(st, "options"), "min_replicas")),
                     1);
    json_decref(st);
    ftc_lighthouse_client_destroy(j2);
    ftc_lighthouse_client_destroy(j3);
    stop(&f);
}

/* Unused jobs go after job_idle_ms and come back under a new epoch;
 * declared ones stay, with their own options. */
static void idle_and_declared_jobs(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    o.job_idle_ms = 200;
    start(&f, &o);
    TK_EXPECT(ftc_lighthouse_configure_job(f.lh, "train:min_replicas=x"),
              FTC_EINVAL);
    TK_EXPECT(ftc_lighthouse_configure_job(f.lh, "bad name"), FTC_EINVAL);
    TK_EXPECT(ftc_lighthouse_configure_job(
                  f.lh, "train:min_replicas=2,heartbeat_timeout_ms=0"),
              FTC_EINVAL);
    TK_OK(ftc_lighthouse_configure_job(
        f.lh, "train:min_replicas=2,strict_shrink_only=true"));
    json_t *st = lt_get_json(f.addr, "/v1/jobs/train");
    json_t *opts = json_object_get(st, "options");
    assert_int_equal(json_integer_value(json_object_get(opts, "min_replicas")),
                     2);
    assert_true(json_is_true(json_object_get(opts, "strict_shrink_only")));
    json_decref(st);
    ftc_lighthouse_ack first, again;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "a", tk_ms(5000), &first));
    TK_WAIT_UNTIL(lt_http(f.addr, "GET", "/v1/jobs/default/status", NULL, NULL,
                          NULL) == 404,
                  10000);
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "a", tk_ms(5000), &again));
    assert_true(again.epoch != first.epoch);
    assert_int_equal(
        lt_http(f.addr, "GET", "/v1/jobs/train/status", NULL, NULL, NULL), 200);
    stop(&f);
}

/* ----------------------------------------------------------- long-polls */

static void superseded_join(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    ftc_lighthouse_member a = lt_member("a", 1);
    lt_join first, second;
    lt_join_start(&first, f.c, &a, tk_ms(20000));
    TK_WAIT_UNTIL(lt_is_participant(f.addr, "default", "a"), 10000);
    a.step = 2;
    lt_join_start(&second, f.c, &a, tk_ms(20000));
    assert_int_equal(lt_join_wait(&first), FTC_ESTALE);
    assert_non_null(strstr(first.error, "superseded"));
    ftc_lighthouse_member b = lt_member("b", 2);
    ftc_lighthouse_join_result r;
    TK_OK(ftc_lighthouse_client_quorum(f.c, &b, tk_ms(20000), &r));
    expect_joined(&second);
    assert_int_equal(second.result.quorum.n_members, 2);
    assert_int_equal(second.result.quorum.members[0].step, 2);
    ftc_lighthouse_join_result_fini(&second.result);
    ftc_lighthouse_join_result_fini(&r);
    stop(&f);
}

/* Waiting joins with different deadlines, in neither order: each ends at
 * its own deadline (the lighthouse keeps its long-polls in deadline order
 * and sleeps until the first). */
static void joins_end_in_deadline_order(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(4, 600000);
    start(&f, &o);
    ftc_lighthouse_member a = lt_member("a", 1), b = lt_member("b", 1);
    ftc_lighthouse_member c = lt_member("c", 1);
    lt_join late, soon, later;
    lt_join_start(&late, f.c, &a, tk_ms(30000));
    TK_WAIT_UNTIL(lt_is_participant(f.addr, "default", "a"), 10000);
    lt_join_start(&soon, f.c, &b, tk_ms(300));
    TK_WAIT_UNTIL(lt_is_participant(f.addr, "default", "b") ||
                      atomic_load(&soon.done),
                  10000);
    lt_join_start(&later, f.c, &c, tk_ms(1500));
    /* The lighthouse answered each (a reason), not the client's clock. */
    assert_int_equal(lt_join_wait(&soon), FTC_ETIMEDOUT);
    assert_non_null(strstr(soon.result.reason, "min_replicas"));
    assert_int_equal(lt_join_wait(&later), FTC_ETIMEDOUT);
    assert_non_null(strstr(later.result.reason, "min_replicas"));
    /* b and c left at their deadlines; a still waits for its own. */
    assert_false(lt_is_participant(f.addr, "default", "b"));
    assert_true(lt_is_participant(f.addr, "default", "a"));
    assert_false(atomic_load(&late.done));
    ftc_lighthouse_join_result_fini(&soon.result);
    ftc_lighthouse_join_result_fini(&later.result);
    /* Everyone back: the quorum forms and a's join ends with it. */
    ftc_lighthouse_member m[3] = {b, c, lt_member("d", 1)};
    lt_join js[3];
    join_in_order(&f, f.c, js, m, 2, "default");
    TK_WAIT_UNTIL(lt_is_participant(f.addr, "default", "c"), 10000);
    ftc_lighthouse_join_result r;
    TK_OK(ftc_lighthouse_client_quorum(f.c, &m[2], tk_ms(20000), &r));
    assert_int_equal(r.quorum.n_members, 4);
    expect_joined(&late);
    ftc_lighthouse_join_result_fini(&late.result);
    for (int i = 0; i < 2; i++) {
        expect_joined(&js[i]);
        ftc_lighthouse_join_result_fini(&js[i].result);
    }
    ftc_lighthouse_join_result_fini(&r);
    stop(&f);
}

typedef struct watcher {
    ftc_lighthouse_client *c;
    const char *replica_id;
    uint32_t epoch;
    uint64_t since;
    int64_t timeout_ms;
    int rc;
    int64_t returned_ms;
    ftc_lighthouse_watch_result r;
    pthread_t t;
} watcher;

static void *watch_main(void *arg)
{
    watcher *w = arg;
    w->rc = ftc_lighthouse_client_watch(w->c, w->replica_id, w->epoch, w->since,
                                        w->timeout_ms, &w->r);
    w->returned_ms = tk_now_ms();
    return NULL;
}

static void watch_start(watcher *w, ftc_lighthouse_client *c, const char *id,
                        uint32_t epoch, uint64_t since, int64_t timeout_ms)
{
    memset(w, 0, sizeof(*w));
    w->c = c;
    w->replica_id = id;
    w->epoch = epoch;
    w->since = since;
    w->timeout_ms = timeout_ms;
    assert_int_equal(pthread_create(&w->t, NULL, watch_main, w), 0);
}

static void watch_events(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    start(&f, &o);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "a", tk_ms(5000), &ack));
    assert_int_equal(ack.event_seq, 0);
    /* Epoch 0 (unknown) and a position from the future: reset at once. */
    ftc_lighthouse_watch_result r;
    TK_OK(ftc_lighthouse_client_watch(f.c, NULL, 0, 0, tk_ms(20000), &r));
    assert_true(r.reset);
    assert_int_equal(r.epoch, ack.epoch);
    assert_false(r.has_quorum);
    ftc_lighthouse_watch_result_fini(&r);
    TK_OK(
        ftc_lighthouse_client_watch(f.c, NULL, ack.epoch, 7, tk_ms(20000), &r));
    assert_true(r.reset);
    ftc_lighthouse_watch_result_fini(&r);
    /* Nothing happens: empty at the deadline (the lighthouse's answer,
     * 10% before it, has 200 ms to arrive). */
    int64_t t0 = tk_now_ms();
    TK_OK(
        ftc_lighthouse_client_watch(f.c, NULL, ack.epoch, 0, tk_ms(2000), &r));
    assert_true(tk_now_ms() - t0 >= tk_ms(1500));
    assert_false(r.reset);
    assert_int_equal(r.n_events, 0);
    ftc_lighthouse_watch_result_fini(&r);
    /* A quorum with a new id wakes the watch. */
    watcher w;
    watch_start(&w, f.c, NULL, ack.epoch, 0, tk_ms(20000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    ftc_lighthouse_member a = lt_member("a", 1);
    ftc_lighthouse_join_result jr;
    TK_OK(ftc_lighthouse_client_quorum(f.c, &a, tk_ms(5000), &jr));
    pthread_join(w.t, NULL);
    TK_OK(w.rc);
    assert_int_equal(w.r.n_events, 1);
    assert_int_equal(w.r.events[0].kind, FTC_LIGHTHOUSE_EVENT_QUORUM);
    assert_int_equal(w.r.events[0].seq, 1);
    assert_int_equal(w.r.events[0].quorum_id, jr.quorum.quorum_id);
    assert_int_equal(w.r.events[0].n_replica_ids, 1);
    assert_string_equal(w.r.events[0].replica_ids[0], "a");
    uint64_t seq = w.r.event_seq;
    ftc_lighthouse_watch_result_fini(&w.r);
    /* Goodbye: member_lost to every watcher, then unknown. */
    watch_start(&w, f.c, NULL, ack.epoch, seq, tk_ms(20000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    TK_OK(
        ftc_lighthouse_client_goodbye(f.c, "a", -1, false, tk_ms(5000), NULL));
    pthread_join(w.t, NULL);
    TK_OK(w.rc);
    assert_int_equal(w.r.n_events, 1);
    assert_int_equal(w.r.events[0].kind, FTC_LIGHTHOUSE_EVENT_MEMBER_LOST);
    assert_int_equal(w.r.events[0].cause, FTC_LIGHTHOUSE_LOST_GOODBYE);
    assert_true(w.r.events[0].in_quorum);
    assert_string_equal(w.r.events[0].replica_id, "a");
    assert_int_equal(w.r.events[0].quorum_id, jr.quorum.quorum_id);
    ftc_lighthouse_watch_result_fini(&w.r);
    TK_EXPECT(
        ftc_lighthouse_client_goodbye(f.c, "a", -1, false, tk_ms(5000), NULL),
        FTC_ENOENT);
    /* Events kept since an old position come back in order. */
    TK_OK(
        ftc_lighthouse_client_watch(f.c, NULL, ack.epoch, 0, tk_ms(5000), &r));
    assert_int_equal(r.n_events, 2);
    assert_int_equal(r.events[0].seq, 1);
    assert_int_equal(r.events[1].seq, 2);
    ftc_lighthouse_watch_result_fini(&r);
    ftc_lighthouse_join_result_fini(&jr);
    stop(&f);
}

/* A watcher further behind than the ring gets a reset with the current
 * quorum, never an error (torchft's lagged receiver fails). */
static void watch_behind_the_ring_resets(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    o.event_ring = 2;
    start(&f, &o);
    /* Events: quorum {r0}, r0 lost, quorum {r1}, ... quorum {r3}: 7. */
    char id[8];
    ftc_lighthouse_join_result jr;
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof(id), "r%d", i);
        ftc_lighthouse_member m = lt_member(id, 1);
        TK_OK(ftc_lighthouse_client_quorum(f.c, &m, tk_ms(5000), &jr));
        if (i < 3) {
            ftc_lighthouse_join_result_fini(&jr);
            TK_OK(ftc_lighthouse_client_goodbye(f.c, id, -1, false, tk_ms(5000),
                                                NULL));
        }
    }
    ftc_lighthouse_watch_result r;
    TK_OK(ftc_lighthouse_client_watch(f.c, NULL, jr.epoch, 1, tk_ms(5000), &r));
    assert_true(r.reset);
    assert_int_equal(r.event_seq, 7);
    assert_true(r.has_quorum);
    assert_int_equal(r.quorum.quorum_id, jr.quorum.quorum_id);
    assert_string_equal(r.quorum.members[0].replica_id, "r3");
    ftc_lighthouse_watch_result_fini(&r);
    TK_OK(ftc_lighthouse_client_watch(f.c, NULL, jr.epoch, 5, tk_ms(5000), &r));
    assert_false(r.reset);
    assert_int_equal(r.n_events, 2);
    assert_int_equal(r.events[0].seq, 6);
    assert_int_equal(r.events[1].kind, FTC_LIGHTHOUSE_EVENT_QUORUM);
    ftc_lighthouse_watch_result_fini(&r);
    ftc_lighthouse_join_result_fini(&jr);
    stop(&f);
}

/* An abort from another thread ends a pending long-poll at once; the
 * lighthouse sees the dropped connection as that replica's death. */
static void abort_ends_a_pending_watch(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    start(&f, &o);
    ftc_lighthouse_client *c2 = client(f.addr, NULL, NULL);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "w", tk_ms(5000), &ack));
    watcher w, other;
    watch_start(&w, f.c, "w", ack.epoch, ack.event_seq, tk_ms(60000));
    watch_start(&other, c2, NULL, ack.epoch, ack.event_seq, tk_ms(60000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 2,
                  10000);
    int64_t t0 = tk_now_ms();
    ftc_lighthouse_client_abort(f.c);
    pthread_join(w.t, NULL);
    printf("abort -> FTC_ECANCELED in %lld ms\n",
           (long long)(w.returned_ms - t0));
    TK_EXPECT(w.rc, FTC_ECANCELED);
    assert_true(w.returned_ms - t0 < tk_ms(5000));
    /* Sticky until cleared. */
    TK_EXPECT(ftc_lighthouse_client_heartbeat(f.c, "w", tk_ms(5000), NULL),
              FTC_ECANCELED);
    ftc_lighthouse_client_clear_abort(f.c);
    /* The other watcher heard of the disconnect. */
    pthread_join(other.t, NULL);
    TK_OK(other.rc);
    assert_int_equal(other.r.n_events, 1);
    assert_int_equal(other.r.events[0].kind, FTC_LIGHTHOUSE_EVENT_MEMBER_LOST);
    assert_int_equal(other.r.events[0].cause, FTC_LIGHTHOUSE_LOST_DISCONNECT);
    assert_string_equal(other.r.events[0].replica_id, "w");
    assert_false(other.r.events[0].in_quorum);
    ftc_lighthouse_watch_result_fini(&other.r);
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "w", tk_ms(5000), NULL));
    ftc_lighthouse_client_destroy(c2);
    stop(&f);
}

/* A newer watch of the same replica takes over; the older ends 409. */
static void superseded_watch(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    start(&f, &o);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "w", tk_ms(5000), &ack));
    watcher w1;
    watch_start(&w1, f.c, "w", ack.epoch, 0, tk_ms(60000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    watcher w2;
    /* Ends empty at its deadline: the lighthouse's answer, 10% before
     * it, has 200 ms to arrive. */
    watch_start(&w2, f.c, "w", ack.epoch, 0, tk_ms(2000));
    pthread_join(w1.t, NULL);
    TK_EXPECT(w1.rc, FTC_ESTALE);
    pthread_join(w2.t, NULL);
    TK_OK(w2.rc);
    assert_int_equal(w2.r.n_events, 0);
    stop(&f);
}

/* Destroy answers every pending request and frees everything (ASan). */
static void destroy_with_pending_requests(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "b", tk_ms(5000), &ack));
    ftc_lighthouse_member a = lt_member("a", 1);
    lt_join j;
    lt_join_start(&j, f.c, &a, 1500);
    watcher w;
    watch_start(&w, f.c, "b", ack.epoch, ack.event_seq, 1500);
    TK_WAIT_UNTIL(lt_is_participant(f.addr, "default", "a"), 10000);
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    int64_t t0 = tk_now_ms();
    ftc_lighthouse_destroy(f.lh);
    printf("destroy with pending requests: %lld ms\n",
           (long long)(tk_now_ms() - t0));
    /* The lighthouse is gone: the calls retry until their deadline. */
    TK_EXPECT(lt_join_wait(&j), FTC_ETIMEDOUT);
    pthread_join(w.t, NULL);
    TK_EXPECT(w.rc, FTC_ETIMEDOUT);
    ftc_lighthouse_client_destroy(f.c);
}

/* ---------------------------------------------------------------- auth */

static void kill_needs_a_token(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    start(&f, &o);
    char *out = NULL;
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/replicas/a/kill",
                             "", NULL, &out),
                     403);
    assert_non_null(strstr(out, "no_token_configured"));
    free(out);
    stop(&f);

    o.token = "s3cret";
    o.public_reads = true;
    start(&f, &o);
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/heartbeat",
                             "{\"replica_id\": \"a\"}", NULL, &out),
                     401);
    assert_non_null(strstr(out, "unauthorized"));
    free(out);
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/heartbeat",
                             "{\"replica_id\": \"a\"}", "wrong", NULL),
                     403);
    ftc_lighthouse_client *anon = client(f.addr, NULL, NULL);
    TK_EXPECT(ftc_lighthouse_client_heartbeat(anon, "a", tk_ms(5000), NULL),
              FTC_EAUTH);
    ftc_lighthouse_client_destroy(anon);
    /* With public_reads, reads stay open. */
    json_t *jobs = lt_get_json(f.addr, "/v1/jobs");
    json_decref(jobs);
    ftc_lighthouse_member a = lt_member("a", 1);
    ftc_lighthouse_join_result jr;
    TK_OK(ftc_lighthouse_client_quorum(f.c, &a, tk_ms(5000), &jr));
    watcher w;
    watch_start(&w, f.c, NULL, jr.epoch, 1, tk_ms(20000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/replicas/a/kill",
                             "", NULL, NULL),
                     401);
    assert_int_equal(lt_http(f.addr, "POST",
                             "/v1/jobs/default/replicas/nobody/kill", "",
                             "s3cret", NULL),
                     404);
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/replicas/a/kill",
                             "", "s3cret", NULL),
                     200);
    pthread_join(w.t, NULL);
    TK_OK(w.rc);
    assert_int_equal(w.r.n_events, 1);
    assert_int_equal(w.r.events[0].kind, FTC_LIGHTHOUSE_EVENT_KILL);
    assert_string_equal(w.r.events[0].replica_id, "a");
    ftc_lighthouse_watch_result_fini(&w.r);
    ftc_lighthouse_join_result_fini(&jr);
    stop(&f);

    /* By default the token guards reads too (they hand out addresses). */
    o.public_reads = false;
    start(&f, &o);
    assert_int_equal(lt_http(f.addr, "GET", "/v1/jobs", NULL, NULL, NULL), 401);
    assert_int_equal(lt_http(f.addr, "GET", "/metrics", NULL, "wrong", NULL),
                     403);
    assert_int_equal(lt_http(f.addr, "GET", "/metrics", NULL, "s3cret", NULL),
                     200);
    /* The page's 401 asks a browser for the token, which it then sends as
     * a Basic password (any user name). */
    static const struct {
        const char *authorization; /* NULL: none */
        const char *status_line;
    } reads[] = {
        {NULL, "HTTP/1.1 401"},
        {"Basic bWU6czNjcmV0", "HTTP/1.1 200"},     /* me:s3cret */
        {"Basic OnMzY3JldA==", "HTTP/1.1 200"},     /* :s3cret */
        {"Basic bWU6d3Jvbmc=", "HTTP/1.1 403"},     /* me:wrong */
        {"Basic bWU6czNjcmV0AHg=", "HTTP/1.1 403"}, /* me:s3cret\0x */
        {"Basic not base64!", "HTTP/1.1 403"},
    };
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        char req[256], reply[4096];
        int n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\n");
        if (reads[i].authorization != NULL) {
            n += snprintf(req + n, sizeof(req) - (size_t)n,
                          "Authorization: %s\r\n", reads[i].authorization);
        }
        snprintf(req + n, sizeof(req) - (size_t)n, "Connection: close\r\n\r\n");
        bool closed;
        lt_raw(f.addr, req, strlen(req), reply, sizeof(reply), 5000, &closed);
        print_message("%s -> %.12s\n",
                      reads[i].authorization ? reads[i].authorization : "-",
                      reply);
        assert_int_equal(
            strncmp(reply, reads[i].status_line, strlen(reads[i].status_line)),
            0);
        if (reads[i].authorization == NULL) {
            assert_non_null(strstr(reply, "WWW-Authenticate: Basic realm="));
        }
    }
    stop(&f);
}

/* A value of the lighthouse's /metrics, read with the token. */
static unsigned long long metric(const char *addr, const char *name)
{
    char *text = NULL;
    assert_int_equal(lt_http(addr, "GET", "/metrics", NULL, "s3cret", &text),
                     200);
    char line[128];
    snprintf(line, sizeof(line), "\n%s ", name);
    const char *at = strstr(text, line);
    assert_non_null(at);
    unsigned long long v = strtoull(at + strlen(line), NULL, 10);
    free(text);
    return v;
}

/* A flood of held-open connections from addresses that never sent the
 * token (slowloris, as from ten other hosts) takes only their share of
 * the table: the job's member still gets new connections and is served. */
static void flood_leaves_room_for_members(void **state)
{
    (void)state;
    enum { MAX = 64, PER_ADDRESS = 8, FROM = 10, EACH = 16 };
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    o.token = "s3cret";
    o.max_connections = MAX;
    o.max_connections_per_ip = PER_ADDRESS;
    start(&f, &o);
    /* The member (127.0.0.1) has sent the token (its first connection
     * was a stranger's when it came, and counts as one while it lasts). */
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "a", tk_ms(5000), NULL));
    unsigned long long before =
        metric(f.addr, "ftc_lighthouse_connections_refused_total") +
        metric(f.addr, "ftc_lighthouse_stranger_connections");
    int fds[FROM * EACH];
    for (int a = 0; a < FROM; a++) {
        char from[32];
        snprintf(from, sizeof(from), "127.0.0.%d", 2 + a);
        for (int i = 0; i < EACH; i++) {
            fds[a * EACH + i] =
                lt_connect_from(from, f.addr, "POST /v1/jobs/default/heart");
        }
    }
    /* Each was admitted or refused as it came. */
    TK_WAIT_UNTIL(
        metric(f.addr, "ftc_lighthouse_connections_refused_total") +
                metric(f.addr, "ftc_lighthouse_stranger_connections") ==
            before + FROM * EACH,
        20000);
    assert_int_equal(metric(f.addr, "ftc_lighthouse_stranger_connections"),
                     MAX - MAX / 4);
    /* New connections of the member: a fresh client is served. */
    ftc_lighthouse_client *again = client(f.addr, NULL, "s3cret");
    TK_OK(ftc_lighthouse_client_heartbeat(again, "a", tk_ms(5000), NULL));
    char *json = NULL;
    TK_OK(ftc_lighthouse_client_status(again, "default", tk_ms(5000), &json));
    assert_non_null(strstr(json, "\"a\""));
    ftc_free(json);
    ftc_lighthouse_client_destroy(again);
    for (int i = 0; i < FROM * EACH; i++) {
        close(fds[i]);
    }
    stop(&f);
}

/* -------------------------------------------------- hostile requests */

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Each bad request is refused (4xx or closed); the lighthouse keeps
 * serving, a pending watch is undisturbed and no state changed. */
static void hostile_requests(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1000);
    o.max_body_bytes = 1024;
    o.idle_connection_timeout_ms = 1000;
    start(&f, &o);
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "good", tk_ms(5000), &ack));
    watcher w;
    watch_start(&w, f.c, NULL, ack.epoch, 0, tk_ms(60000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    char reply[4096];
    bool closed;
    const char *hb = "POST /v1/jobs/default/heartbeat HTTP/1.1\r\nHost: x\r\n";
    char req[4096];

    /* A declared body over the limit: 413 before any byte of it. */
    snprintf(req, sizeof(req), "%sContent-Length: 999999999\r\n\r\n", hb);
    lt_raw(f.addr, req, strlen(req), reply, sizeof(reply), 5000, &closed);
    assert_true(starts(reply, "HTTP/1.1 413"));
    /* An absurd length. */
    snprintf(req, sizeof(req),
             "%sContent-Length: 99999999999999999999999\r\n\r\n", hb);
    lt_raw(f.addr, req, strlen(req), reply, sizeof(reply), 5000, &closed);
    assert_true(closed || starts(reply, "HTTP/1.1 4"));
    /* A chunked body growing over the limit: MHD cannot answer in the
     * middle of a body, so the connection is closed. */
    char chunk[1500];
    memset(chunk, 'x', sizeof(chunk));
    int n =
        snprintf(req, sizeof(req), "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n",
                 hb, (unsigned)sizeof(chunk));
    memcpy(req + n, chunk, sizeof(chunk));
    memcpy(req + n + sizeof(chunk), "\r\n0\r\n\r\n", 7);
    lt_raw(f.addr, req, (size_t)n + sizeof(chunk) + 7, reply, sizeof(reply),
           5000, &closed);
    assert_true(closed);
    assert_null(strstr(reply, "200"));
    /* Half a body, then silence: closed at the idle timeout. */
    snprintf(req, sizeof(req), "%sContent-Length: 100\r\n\r\n{\"replica", hb);
    int64_t t0 = tk_now_ms();
    lt_raw(f.addr, req, strlen(req), reply, sizeof(reply), 15000, &closed);
    printf("half a body: closed after %lld ms\n",
           (long long)(tk_now_ms() - t0));
    assert_true(closed);
    assert_null(strstr(reply, "200"));
    /* Not HTTP at all. */
    lt_raw(f.addr, "GARBAGE\r\n\r\n", 11, reply, sizeof(reply), 5000, &closed);
    assert_true(closed || starts(reply, "HTTP/1.1 400"));
    /* Well-framed but bad JSON, wrong types, long ids, bad names. */
    static const struct {
        const char *method, *path, *body;
        long status;
        const char *error;
    } bad[] = {
        {"POST", "/v1/jobs/default/heartbeat", "{\"replica_id\": ", 400,
         "invalid"},
        {"POST", "/v1/jobs/default/heartbeat", "{\"replica_id\": 7}", 400,
         "invalid"},
        {"POST", "/v1/jobs/default/quorum",
         "{\"member\": {\"replica_id\": \"x\", \"step\": -1}}", 400, "invalid"},
        {"POST", "/v1/jobs/default/quorum",
         "{\"member\": {\"replica_id\": \"x\", \"data\": [[[[]]]]}, "
         "\"timeout_ms\": \"soon\"}",
         400, "invalid"},
        {"POST", "/v1/jobs/bad$name/heartbeat", "{\"replica_id\": \"x\"}", 400,
         "invalid"},
        {"GET", "/v1/jobs/default/heartbeat", NULL, 405, "method_not_allowed"},
        {"GET", "/v2/nothing", NULL, 404, "not_found"},
        {"GET", "/v1/jobs/nojob/status", NULL, 404, "not_found"},
        {"GET", "/v1/jobs/default/watch?since=-1", NULL, 400, "invalid"},
        {"POST", "/v1/jobs/default/goodbye", "{\"replica_id\": \"nobody\"}",
         404, "not_found"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        long status = lt_http(f.addr, bad[i].method, bad[i].path, bad[i].body,
                              NULL, &out);
        if (status != bad[i].status || out == NULL ||
            strstr(out, bad[i].error) == NULL ||
            strstr(out, "\"detail\"") == NULL) {
            fail_msg("%s %s: %ld %s", bad[i].method, bad[i].path, status,
                     out ? out : "");
        }
        free(out);
    }
    char *longid = malloc(400);
    snprintf(longid, 400, "{\"replica_id\": \"%0300d\"}", 0);
    assert_int_equal(lt_http(f.addr, "POST", "/v1/jobs/default/heartbeat",
                             longid, NULL, NULL),
                     413);
    free(longid);
    /* Others unaffected: the watch still waits, heartbeats work, and the
     * only replica known is the good one. */
    assert_int_equal(lt_status_int(f.addr, "default", "watches_waiting"), 1);
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "good", tk_ms(5000), NULL));
    json_t *st = lt_get_json(f.addr, "/v1/jobs/default/status");
    json_t *hbs = json_object_get(st, "heartbeats");
    assert_int_equal(json_array_size(hbs), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(hbs, 0), "replica_id")),
                        "good");
    assert_int_equal(json_integer_value(json_object_get(st, "event_seq")), 0);
    json_decref(st);
    json_t *jobs = lt_get_json(f.addr, "/v1/jobs");
    assert_int_equal(json_array_size(json_object_get(jobs, "jobs")), 1);
    json_decref(jobs);
    ftc_lighthouse_client_abort(f.c);
    pthread_join(w.t, NULL);
    TK_EXPECT(w.rc, FTC_ECANCELED);
    stop(&f);
}

/* ----------------------------------------- status, metrics, dashboard */

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at != NULL;
         at = strstr(at + 1, needle)) {
        n++;
    }
    return n;
}

static void status_metrics_and_page(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    lt_join js[2];
    ftc_lighthouse_member ms[2] = {lt_member("a", 5), lt_member("b", 3)};
    join_in_order(&f, f.c, js, ms, 2, "default");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    int64_t id = js[0].result.quorum.quorum_id;

    json_t *st = lt_get_json(f.addr, "/v1/jobs/default/status");
    assert_string_equal(json_string_value(json_object_get(st, "job")),
                        "default");
    assert_int_equal(json_integer_value(json_object_get(st, "quorum_id")), id);
    json_t *q = json_object_get(st, "quorum");
    assert_int_equal(json_array_size(json_object_get(q, "members")), 2);
    assert_int_equal(json_integer_value(json_object_get(q, "max_step")), 5);
    assert_int_equal(json_integer_value(json_object_get(q, "counter")), 1);
    json_t *heal = json_array_get(json_object_get(q, "healing"), 0);
    assert_string_equal(json_string_value(json_object_get(heal, "replica_id")),
                        "b");
    assert_string_equal(json_string_value(json_object_get(heal, "from")), "a");
    json_t *d = json_object_get(st, "decision");
    assert_non_null(json_string_value(json_object_get(d, "reason")));
    assert_string_equal(json_string_value(json_object_get(d, "verdict")),
                        "need_min");
    json_t *ch = json_array_get(json_object_get(st, "changes"), 0);
    assert_string_equal(json_string_value(json_object_get(ch, "cause")),
                        "first");
    json_t *hb = json_array_get(json_object_get(st, "heartbeats"), 0);
    assert_true(json_is_true(json_object_get(hb, "healthy")));
    /* The operator's view: the headline and the history behind it. */
    json_t *sum = json_object_get(st, "summary");
    assert_int_equal(json_integer_value(json_object_get(sum, "replica_groups")),
                     2);
    assert_int_equal(json_integer_value(json_object_get(sum, "step")), 5);
    assert_true(json_is_null(json_object_get(sum, "last_failure")));
    assert_non_null(strstr(json_string_value(json_object_get(sum, "headline")),
                           "training: 2 replica groups, step 5, "));
    json_t *samples =
        json_object_get(json_object_get(st, "history"), "samples");
    assert_int_equal(json_array_size(samples), 1);
    assert_int_equal(
        json_integer_value(json_array_get(json_array_get(samples, 0), 1)), 5);
    json_decref(st);

    char *metrics = NULL;
    assert_int_equal(lt_http(f.addr, "GET", "/metrics", NULL, NULL, &metrics),
                     200);
    static const char *const lines[] = {
        "ftc_lighthouse_quorums_total{ftc_job=\"default\"} 1\n",
        "ftc_lighthouse_members{ftc_job=\"default\"} 2\n",
        "ftc_lighthouse_max_step{ftc_job=\"default\"} 5\n",
        "ftc_lighthouse_quorum_counter{ftc_job=\"default\"} 1\n",
        "ftc_lighthouse_quorum_changes_total{ftc_job=\"default\",cause="
        "\"first\"} "
        "1\n",
        "ftc_lighthouse_join_wait_seconds_count{ftc_job=\"default\"} 2\n",
        "# TYPE ftc_lighthouse_join_wait_seconds histogram\n",
        "ftc_lighthouse_member_lost_total{ftc_job=\"default\",cause="
        "\"heartbeat\"}"
        " 0\n",
        "ftc_lighthouse_http_requests_total{code=\"200\"} ",
        "ftc_lighthouse_connections ",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (strstr(metrics, lines[i]) == NULL) {
            fail_msg("metrics lack '%s':\n%s", lines[i], metrics);
        }
    }
    free(metrics);

    char *page = NULL;
    assert_int_equal(lt_http(f.addr, "GET", "/", NULL, NULL, &page), 200);
    assert_non_null(strstr(page, "<!DOCTYPE html>"));
    assert_non_null(strstr(page, "<script>"));
    assert_non_null(strstr(page, "/v1/jobs"));
    /* Self-contained: nothing from another host. */
    assert_null(strstr(page, "http://"));
    assert_null(strstr(page, "https://"));
    /* One script from elsewhere than the page: the lighthouse's own copy
     * of the charting library. */
    const char *src = strstr(page, "src=");
    assert_non_null(src);
    assert_int_equal(strncmp(src, "src=\"/assets/chart.min.js\"", 26), 0);
    assert_null(strstr(src + 1, "src="));
    assert_null(strstr(page, "<link"));
    /* The snapshot rendered in: the headline, without JavaScript. */
    assert_non_null(strstr(page, "<p class=\"headline\">training: 2 "
                                 "replica groups, step 5, "));
    free(page);
    char *chart = NULL;
    assert_int_equal(
        lt_http(f.addr, "GET", "/assets/chart.min.js", NULL, NULL, &chart),
        200);
    assert_non_null(strstr(chart, "Chart.js v3.9.1"));
    free(chart);

    /* ftc status prints the job and its members. */
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s status --addr %s --job default",
             FTC_CLI_PATH, f.addr);
    FILE *p = popen(cmd, "r");
    char out[8192];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "job default"));
    assert_non_null(strstr(out, "addr_b"));
    assert_non_null(strstr(out, "training: 2 replica groups, step 5, "));
    /* --watch: views one after another into a pipe, in place on a
     * terminal (script gives it a pseudo-terminal). */
    snprintf(cmd, sizeof(cmd),
             "%s status --addr %s --job default --watch --interval 0.05 "
             "--count 3",
             FTC_CLI_PATH, f.addr);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_int_equal(count_of(out, "ftc status at "), 3);
    assert_int_equal(count_of(out, "training: 2 replica groups, step 5"), 3);
    assert_null(strstr(out, "\033["));
    char tty[600];
    snprintf(tty, sizeof(tty), "script -qec '%s' /dev/null", cmd);
    p = popen(tty, "r");
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_int_equal(count_of(out, "\033[H\033[2J"), 3);
    assert_int_equal(count_of(out, "training: 2 replica groups, step 5"), 3);
    snprintf(cmd, sizeof(cmd), "%s status --addr %s", FTC_CLI_PATH, f.addr);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "default: training: 2 replica groups"));
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);
    stop(&f);
}

/* The status JSON's failure of the operator's view: b's presence (its
 * watch) drops, so b is lost (disconnect); a retries step 5 alone, then
 * commits it (survivors back), and b's next incarnation joins at a's step
 * (back). */
static json_t *last_failure(const char *addr)
{
    json_t *st = lt_get_json(addr, "/v1/jobs/default/status");
    json_t *f = json_object_get(json_object_get(st, "summary"), "last_failure");
    json_incref(f);
    json_decref(st);
    return f;
}

static bool has_failure(const char *addr)
{
    json_t *f = last_failure(addr);
    bool yes = json_is_object(f);
    json_decref(f);
    return yes;
}

static void status_follows_a_failure(void **state)
{
    (void)state;
    fixture f;
    ftc_lighthouse_opts o = rules_opts(2, 1000);
    start(&f, &o);
    lt_join js[2];
    ftc_lighthouse_member ms[2] = {lt_member("a:1", 5), lt_member("b:1", 5)};
    join_in_order(&f, f.c, js, ms, 2, "default");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);
    /* From now on a may train alone. */
    TK_OK(ftc_lighthouse_configure_job(f.lh, "default:min_replicas=1"));
    ftc_lighthouse_client *bc = client(f.addr, NULL, NULL);
    watcher w;
    ftc_lighthouse_ack ack;
    TK_OK(ftc_lighthouse_client_heartbeat(bc, "b:1", tk_ms(5000), &ack));
    watch_start(&w, bc, "b:1", ack.epoch, ack.event_seq, tk_ms(20000));
    TK_WAIT_UNTIL(lt_status_int(f.addr, "default", "watches_waiting") == 1,
                  10000);
    ftc_lighthouse_client_abort(bc); /* its connection drops: b is lost */
    pthread_join(w.t, NULL);
    ftc_lighthouse_watch_result_fini(&w.r);
    TK_WAIT_UNTIL(has_failure(f.addr), 10000);
    json_t *lost = last_failure(f.addr);
    assert_string_equal(json_string_value(json_object_get(lost, "replica_id")),
                        "b:1");
    assert_string_equal(json_string_value(json_object_get(lost, "cause")),
                        "disconnect");
    assert_true(json_is_null(json_object_get(lost, "step")));
    assert_true(json_is_null(json_object_get(lost, "survivors_ms")));
    json_decref(lost);
    ftc_lighthouse_join_result jr;
    for (int64_t step = 5; step <= 6; step++) { /* the retry, then past it */
        ftc_lighthouse_member a = lt_member("a:1", step);
        TK_OK(ftc_lighthouse_client_quorum(f.c, &a, tk_ms(5000), &jr));
        ftc_lighthouse_join_result_fini(&jr);
    }
    lost = last_failure(f.addr);
    assert_int_equal(json_integer_value(json_object_get(lost, "step")), 5);
    assert_true(json_integer_value(json_object_get(lost, "survivors_ms")) >= 0);
    assert_true(json_is_null(json_object_get(lost, "back_ms")));
    json_decref(lost);
    /* b's next incarnation asks first, a's ask completes the quorum. */
    ftc_lighthouse_member back[2] = {lt_member("b:2", 7), lt_member("a:1", 7)};
    join_in_order(&f, f.c, js, back, 2, "default");
    expect_joined(&js[0]);
    expect_joined(&js[1]);
    lost = last_failure(f.addr);
    assert_true(json_integer_value(json_object_get(lost, "back_ms")) >= 0);
    json_decref(lost);
    json_t *st = lt_get_json(f.addr, "/v1/jobs/default/status");
    const char *headline = json_string_value(
        json_object_get(json_object_get(st, "summary"), "headline"));
    assert_non_null(strstr(headline, "training: 2 replica groups, step 7, "));
    assert_non_null(strstr(headline, "; last failure: b lost (disconnect) "));
    assert_non_null(strstr(headline, ", the others went on after "));
    assert_non_null(strstr(headline, ", back after "));
    json_t *failures =
        json_object_get(json_object_get(st, "history"), "failures");
    assert_int_equal(json_array_size(failures), 1);
    json_decref(st);
    ftc_lighthouse_client_destroy(bc);
    ftc_lighthouse_join_result_fini(&js[0].result);
    ftc_lighthouse_join_result_fini(&js[1].result);
    stop(&f);
}

/* TCP_RTO_MAX_MS of Linux 6.14 (older libc headers lack it). */
#define RTO_MAX_MS_OPT 44

/* Of the TCP sockets among descriptors 0-4095 with an end on port
 * (local: the server's side, else the client's), how many have
 * TCP_RTO_MAX_MS at want. Only system calls: run in a forked child. */
static int count_capped(int port, bool local, int want)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        struct stat st;
        struct sockaddr_in a;
        socklen_t len = sizeof(a);
        int v = 0;
        socklen_t vlen = sizeof(v);
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            (local ? getsockname(fd, (struct sockaddr *)&a, &len)
                   : getpeername(fd, (struct sockaddr *)&a, &len)) != 0 ||
            a.sin_family != AF_INET || ntohs(a.sin_port) != port) {
            continue;
        }
        n += getsockopt(fd, IPPROTO_TCP, RTO_MAX_MS_OPT, &v, &vlen) == 0 &&
             v == want;
    }
    return n;
}

/* count_capped over this process's sockets, counted by a forked child in
 * its copy of the descriptor table: the lighthouse's threads close
 * connections meanwhile, and a scan of the live table would race them
 * (TSan saw the fstat of a descriptor being closed). */
static int sockets_capped(int port, bool local, int want)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        int n = count_capped(port, local, want);
        _exit(write(p[1], &n, sizeof(n)) == (ssize_t)sizeof(n) ? 0 : 1);
    }
    close(p[1]);
    int n = -1, status = 0;
    assert_int_equal(read(p[0], &n, sizeof(n)), (ssize_t)sizeof(n));
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return n;
}

/* Both ends of a lighthouse connection cap TCP's retransmission timeout
 * at 1 s, so an answer sent into a partition arrives within a second of
 * its end (not after the exponential backoff: 3 s after a 3 s partition,
 * measured with `ftc bench ft --what partition`). */
static void connections_retransmit_within_a_second(void **state)
{
    (void)state;
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    int v = 0;
    socklen_t vlen = sizeof(v);
    bool kernel_has =
        getsockopt(probe, IPPROTO_TCP, RTO_MAX_MS_OPT, &v, &vlen) == 0;
    close(probe);
    fixture f;
    ftc_lighthouse_opts o = rules_opts(1, 1);
    start(&f, &o);
    int port = (int)strtol(strrchr(f.addr, ':') + 1, NULL, 10);
    /* Kept alive in the client's pool after the call. */
    TK_OK(ftc_lighthouse_client_heartbeat(f.c, "r", tk_ms(5000), NULL));
    if (!kernel_has) {
        printf("this kernel has no TCP_RTO_MAX_MS (before 6.14): the "
               "default backoff stays\n");
    } else {
        assert_true(sockets_capped(port, true, 1000) >= 1);
        assert_true(sockets_capped(port, false, 1000) >= 1);
    }
    stop(&f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lighthouse_e2e),
        cmocka_unit_test(test_lighthouse_join_during_shrink),
        cmocka_unit_test(test_lighthouse_commit_failures),
        cmocka_unit_test(two_jobs_are_isolated),
        cmocka_unit_test(limits_on_jobs_and_tables),
        cmocka_unit_test(idle_and_declared_jobs),
        cmocka_unit_test(superseded_join),
        cmocka_unit_test(joins_end_in_deadline_order),
        cmocka_unit_test(watch_events),
        cmocka_unit_test(watch_behind_the_ring_resets),
        cmocka_unit_test(abort_ends_a_pending_watch),
        cmocka_unit_test(superseded_watch),
        cmocka_unit_test(destroy_with_pending_requests),
        cmocka_unit_test(kill_needs_a_token),
        cmocka_unit_test(hostile_requests),
        cmocka_unit_test(flood_leaves_room_for_members),
        cmocka_unit_test(status_metrics_and_page),
        cmocka_unit_test(status_follows_a_failure),
        cmocka_unit_test(connections_retransmit_within_a_second),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
