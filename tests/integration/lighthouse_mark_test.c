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

static void a_laggard_waits_for_the_committed_step(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    assert_int_equal(o.rollback_after_ms, 60000);
    o.bind = "127.0.0.1:0";
    o.heartbeat_timeout_ms = 600000; /* nothing expires mid-test */
    o.rollback_after_ms = INT64_MAX;
    o.min_replicas = 2;
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    ftc_lighthouse_client *c = lt_client(addr);

    /* a and c train together to step 7; then a commits step 8 without c
     * and leaves, saying so. */
    lt_join js[2];
    const char *ids[] = {"a", "c"};
    for (int i = 0; i < 2; i++) {
        ftc_lighthouse_member m = lt_member(ids[i], 7);
        lt_join_start(&js[i], c, &m, tk_ms(10000));
    }
    for (int i = 0; i < 2; i++) {
        TK_OK(lt_join_wait(&js[i]));
        assert_int_equal(js[i].result.quorum.n_members, 2);
        ftc_lighthouse_join_result_fini(&js[i].result);
    }
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_laggard_waits_for_the_committed_step),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
