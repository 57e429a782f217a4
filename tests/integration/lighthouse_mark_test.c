/* The job's committed step over real HTTP: a goodbye carries the steps its
 * replica committed, a laggard back from an earlier quorum waits with the
 * reason while nobody that has the committed step is there, the job option
 * rollback_after_ms decides how long, a new run starts at once, a finished
 * job refuses latecomers, and an operator can forget a job (DELETE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lighthouse_kit.h"
#include "testkit.h"

/* method on /v1/jobs/{job} (body may be NULL): fails unless the answer
 * has status want and contains `has` ("" for anything). */
static void job_call(const char *addr, const char *method, const char *job,
                     const char *body, long want, const char *has)
{
    char path[96], *out = NULL;
    snprintf(path, sizeof(path), "/v1/jobs/%s", job);
    long got = lt_http(addr, method, path, body, NULL, &out);
    if (got != want || out == NULL || strstr(out, has) == NULL) {
        fail_msg("%s %s: %ld %s, expected %ld with %s", method, path, got,
                 out != NULL ? out : "", want, has);
    }
    free(out);
}

static void join_alone(ftc_lighthouse_client *c, const char *id, int64_t step)
{
    ftc_lighthouse_member m = lt_member(id, step);
    ftc_lighthouse_join_result r;
    TK_OK(ftc_lighthouse_client_quorum(c, &m, tk_ms(5000), &r));
    assert_int_equal(r.quorum.n_members, 1);
    assert_string_equal(r.quorum.members[0].replica_id, id);
    ftc_lighthouse_join_result_fini(&r);
}

/* A lighthouse on 127.0.0.1 whose quorums need 2 replicas, that never
 * rolls back below the committed step; its address in addr. */
static ftc_lighthouse *pair_lighthouse(int64_t heartbeat_timeout_ms,
                                       char addr[128])
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    assert_int_equal(o.rollback_after_ms, 60000);
    o.bind = "127.0.0.1:0";
    o.heartbeat_timeout_ms = heartbeat_timeout_ms;
    o.rollback_after_ms = INT64_MAX;
    o.min_replicas = 2;
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    TK_OK(ftc_lighthouse_address(lh, addr, 128));
    return lh;
}

/* x and y join at step: they form a quorum of two, whose id is returned. */
static int64_t join_pair(ftc_lighthouse_client *c, const char *x, const char *y,
                         int64_t step)
{
    lt_join js[2];
    const char *ids[] = {x, y};
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_member m = lt_member(ids[i], step);
        lt_join_start(&js[i], c, &m, tk_ms(10000));
    }
    int64_t q = -1;
    for (int i = 0; i < 2; i++) {
        TK_OK(lt_join_wait(&js[i]));
        assert_int_equal(js[i].result.quorum.n_members, 2);
        q = js[i].result.quorum.quorum_id;
        ftc_lighthouse_join_result_fini(&js[i].result);
    }
    return q;
}

static void a_laggard_waits_for_the_committed_step(void **state)
{
    (void)state;
    char addr[128];
    ftc_lighthouse *lh = pair_lighthouse(600000, addr); /* nothing expires */
    ftc_lighthouse_client *c = lt_client(addr);

    /* a and c train together to step 7; then a commits step 8 without c
     * and leaves, saying so. */
    join_pair(c, "a", "c", 7);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 7);
    job_call(addr, "PUT", "default", "{\"min_replicas\": 1}", 200, "");
    TK_OK(ftc_lighthouse_client_goodbye(c, "a", 8, false, tk_ms(5000), NULL));
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 8);
    /* A goodbye of an unknown replica changes nothing. */
    TK_EXPECT(
        ftc_lighthouse_client_goodbye(c, "a", 90, false, tk_ms(5000), NULL),
        FTC_ENOENT);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 8);

    /* c was left at step 7 (frozen, say): alone it would commit step 8
     * again. */
    ftc_lighthouse_member m = lt_member("c", 7);
    ftc_lighthouse_join_result r;
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &m, tk_ms(1500), &r),
              FTC_ETIMEDOUT);
    assert_non_null(
        strstr(r.reason, "reached step 7 but step 8 was committed"));
    assert_int_equal(r.quorum.n_members, 0);
    ftc_lighthouse_join_result_fini(&r);
    json_t *st = lt_get_json(addr, "/v1/jobs/default/status");
    json_t *opts = json_object_get(st, "options");
    assert_int_equal(
        json_integer_value(json_object_get(opts, "rollback_after_ms")),
        INT64_MAX);
    json_decref(st);

    /* The operator lets the job go on from what is left (torchft's rule). */
    job_call(addr, "PUT", "default", "{\"rollback_after_ms\": 0}", 200,
             "\"rollback_after_ms\":0");
    join_alone(c, "c", 7);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 7);
    job_call(addr, "PUT", "default", "{\"rollback_after_ms\": -1}", 400, "");

    /* A new run of the job (replicas it never had) starts at once from
     * its own state, even with the wait back to forever. */
    job_call(addr, "PUT", "default",
             "{\"rollback_after_ms\": 9223372036854775807}", 200, "");
    TK_OK(ftc_lighthouse_client_goodbye(c, "c", 9, false, tk_ms(5000), NULL));
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 9);
    join_alone(c, "rerun", 0);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 0);

    /* A run that reached its end says so: the job is finished there, and
     * a latecomer below that step is answered at once, 409 job_finished. */
    TK_OK(
        ftc_lighthouse_client_goodbye(c, "rerun", 4, true, tk_ms(5000), NULL));
    m = lt_member("latecomer", 2);
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &m, tk_ms(20000), &r),
              FTC_EFINISHED);
    assert_true(tk_now_ms() - t0 < tk_ms(10000));
    assert_non_null(strstr(ftc_last_error(), "409 job_finished"));
    assert_non_null(strstr(ftc_last_error(), "the job finished at step 4"));
    ftc_lighthouse_join_result_fini(&r);

    /* The operator forgets the job: then the latecomer starts a new one.
     * Not while a replica of it lives, nor a declared job, nor one that is
     * not there. */
    TK_OK(ftc_lighthouse_client_heartbeat(c, "alive", tk_ms(5000), NULL));
    job_call(addr, "DELETE", "default", NULL, 409, "job_in_use");
    TK_OK(ftc_lighthouse_client_goodbye(c, "alive", -1, false, tk_ms(5000),
                                        NULL));
    /* Its answered long-polls close a moment after their answer. */
    TK_WAIT_UNTIL(
        lt_http(addr, "DELETE", "/v1/jobs/default", NULL, NULL, NULL) == 200,
        10000);
    job_call(addr, "DELETE", "default", NULL, 404, "");
    /* A new job: the lighthouse's default options again. */
    job_call(addr, "PUT", "default", "{\"min_replicas\": 1}", 200,
             "\"rollback_after_ms\":9223372036854775807");
    join_alone(c, "latecomer", 2);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 2);
    TK_OK(ftc_lighthouse_configure_job(lh, "declared"));
    job_call(addr, "DELETE", "declared", NULL, 409, "declared_job");

    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

/* Waits (watching) until the lighthouse reported id lost. */
static void wait_lost(ftc_lighthouse_client *c, const char *id)
{
    ftc_lighthouse_watch_result w;
    TK_OK(ftc_lighthouse_client_watch(c, NULL, 0, 0, tk_ms(5000), &w));
    uint32_t epoch = w.epoch;
    uint64_t since = 0; /* every event the job kept, the loss included */
    ftc_lighthouse_watch_result_fini(&w);
    bool lost = false;
    int64_t end = tk_now_ms() + tk_ms(20000);
    while (!lost && tk_now_ms() < end) {
        TK_OK(ftc_lighthouse_client_watch(c, NULL, epoch, since, tk_ms(5000),
                                          &w));
        for (size_t i = 0; i < w.n_events; i++) {
            lost =
                lost || (w.events[i].kind == FTC_LIGHTHOUSE_EVENT_MEMBER_LOST &&
                         strcmp(w.events[i].replica_id, id) == 0);
        }
        since = w.event_seq;
        ftc_lighthouse_watch_result_fini(&w);
    }
    assert_true(lost);
}

/* POST commit: a member of the current quorum is granted its commit and
 * the job's committed step rises; a member the lighthouse reported lost
 * in that quorum is refused even once its heartbeats are back (the
 * others aborted the step on that report), as are a quorum that is over,
 * a replica not in it, and malformed requests. */
static void a_commit_needs_the_quorum_it_was_made_in(void **state)
{
    (void)state;
    char addr[128];
    ftc_lighthouse *lh = pair_lighthouse(tk_ms(300), addr);
    ftc_lighthouse_client *c = lt_client(addr);
    int64_t q = join_pair(c, "a", "b", 3);
    TK_OK(ftc_lighthouse_client_heartbeat(c, "a", tk_ms(5000), NULL));
    TK_OK(ftc_lighthouse_client_commit(c, "a", q, 4, tk_ms(5000)));
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 4);

    /* b's heartbeats stop: reported lost, then refused, heartbeat or not. */
    wait_lost(c, "b");
    TK_OK(ftc_lighthouse_client_heartbeat(c, "b", tk_ms(5000), NULL));
    TK_EXPECT(ftc_lighthouse_client_commit(c, "b", q, 4, tk_ms(5000)),
              FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "409 superseded"));
    assert_non_null(strstr(ftc_last_error(), "b was reported lost in quorum"));
    TK_EXPECT(ftc_lighthouse_client_commit(c, "a", q + 1, 5, tk_ms(5000)),
              FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "is over"));
    TK_EXPECT(ftc_lighthouse_client_commit(c, "z", q, 5, tk_ms(5000)),
              FTC_ESTALE);
    assert_non_null(strstr(ftc_last_error(), "z is not a member"));
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 4);

    /* Malformed requests: 400, nothing changed; an unknown job: 404. */
    static const char *const bad[] = {
        "{}",
        "{\"replica_id\": \"a\", \"quorum_id\": 1}",
        "{\"replica_id\": \"\", \"quorum_id\": 1, \"step\": 5}",
        "{\"replica_id\": \"a\", \"quorum_id\": -1, \"step\": 5}",
        "{\"replica_id\": \"a\", \"quorum_id\": 1, \"step\": 0}",
        "[1]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        assert_int_equal(lt_http(addr, "POST", "/v1/jobs/default/commit",
                                 bad[i], NULL, &out),
                         400);
        free(out);
    }
    char body[128];
    snprintf(body, sizeof(body),
             "{\"replica_id\": \"a\", \"quorum_id\": %lld, \"step\": 9}",
             (long long)q);
    assert_int_equal(
        lt_http(addr, "POST", "/v1/jobs/nojob/commit", body, NULL, NULL), 404);
    assert_int_equal(lt_status_int(addr, "default", "committed_step"), 4);
    char *metrics = NULL;
    assert_int_equal(lt_http(addr, "GET", "/metrics", NULL, NULL, &metrics),
                     200);
    assert_non_null(strstr(metrics, "ftc_lighthouse_commits_total{ftc_job="
                                    "\"default\",verdict=\"granted\"} 1\n"));
    assert_non_null(strstr(metrics, "ftc_lighthouse_commits_total{ftc_job="
                                    "\"default\",verdict=\"refused\"} 3\n"));
    free(metrics);
    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_laggard_waits_for_the_committed_step),
        cmocka_unit_test(a_commit_needs_the_quorum_it_was_made_in),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
