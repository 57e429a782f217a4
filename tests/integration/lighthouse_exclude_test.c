/* Groups that cannot reach each other, over real HTTP: a join carries the
 * groups its process group could not reach (suspects); the quorum leaves
 * out the group the others report, answers its waiting join at once (left
 * out, for how long, and the quorum it is out of), and lets it in again
 * after its time out when it reports nobody. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lighthouse_kit.h"
#include "testkit.h"

#define OUT_MS 800

/* ids[i] joins at step 3 reporting the n_sus[i] ids of sus[i], each on its
 * own thread; waits for all. */
static void join_all(ftc_lighthouse_client *c, lt_join *js, size_t n,
                     const char *const *ids, const char *const *const *sus,
                     const size_t *n_sus)
{
    for (size_t i = 0; i < n; i++) {
        ftc_lighthouse_member m = lt_member(ids[i], 3);
        m.suspects = sus[i];
        m.n_suspects = n_sus[i];
        lt_join_start(&js[i], c, &m, tk_ms(10000));
    }
    for (size_t i = 0; i < n; i++) {
        js[i].rc = lt_join_wait(&js[i]);
    }
}

static void a_group_cut_off_is_told_and_comes_back(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    assert_int_equal(o.exclude_ms, 1000);
    o.bind = "127.0.0.1:0";
    o.heartbeat_timeout_ms = 600000; /* nothing expires mid-test */
    o.exclude_ms = OUT_MS;
    o.min_replicas = 3; /* the first round: all three */
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    ftc_lighthouse_client *c = lt_client(addr);

    static const char *const ids[] = {"a", "b", "c"};
    static const char *const none[] = {NULL};
    static const char *const bc[] = {"b", "c"};
    static const char *const a[] = {"a"};
    const char *const *quiet[] = {none, none, none};
    size_t zero[] = {0, 0, 0};
    lt_join js[3];
    join_all(c, js, 3, ids, quiet, zero);
    for (int i = 0; i < 3; i++) {
        TK_OK(js[i].rc);
        assert_int_equal(js[i].result.quorum.n_members, 3);
        ftc_lighthouse_join_result_fini(&js[i].result);
    }
    char *body = NULL;
    assert_int_equal(lt_http(addr, "PUT", "/v1/jobs/default",
                             "{\"min_replicas\": 2}", NULL, &body),
                     200);
    free(body);

    /* a is cut off from b and c; all three report. */
    const char *const *reports[] = {bc, a, a};
    size_t counts[] = {2, 1, 1};
    join_all(c, js, 3, ids, reports, counts);
    int64_t left_at = tk_now_ms();
    TK_EXPECT(js[0].rc, FTC_ETIMEDOUT);
    assert_true(js[0].result.left_out);
    assert_int_equal(js[0].result.out_for_ms, OUT_MS);
    assert_int_equal(js[0].result.quorum.n_members, 2);
    assert_int_equal(lt_find(&js[0].result.quorum, "a"), -1);
    assert_non_null(strstr(js[0].error, "left out of the quorum"));
    for (int i = 1; i < 3; i++) {
        TK_OK(js[i].rc);
        assert_false(js[i].result.left_out);
        assert_int_equal(js[i].result.quorum.n_members, 2);
    }
    for (int i = 0; i < 3; i++) {
        ftc_lighthouse_join_result_fini(&js[i].result);
    }
    json_t *st = lt_get_json(addr, "/v1/jobs/default/status");
    json_t *out = json_object_get(st, "left_out");
    assert_int_equal(json_array_size(out), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(out, 0), "replica_id")),
                        "a");
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(out, 0), "times")),
        1);
    json_decref(st);

    /* a reaches them again and reports nobody: it waits out its time out
     * (b and c go on meanwhile), then a round has all three. */
    lt_join wait_a;
    ftc_lighthouse_member ma = lt_member("a", 3);
    lt_join_start(&wait_a, c, &ma, tk_ms(10000));
    TK_WAIT_UNTIL(lt_is_participant(addr, "default", "a"), 5000);
    size_t rounds = 0;
    for (size_t n = 0; n != 3; rounds++) {
        join_all(c, js + 1, 2, ids + 1, quiet, zero);
        n = js[1].result.quorum.n_members;
        TK_OK(js[1].rc);
        TK_OK(js[2].rc);
        ftc_lighthouse_join_result_fini(&js[1].result);
        ftc_lighthouse_join_result_fini(&js[2].result);
        assert_true(tk_now_ms() - left_at < tk_ms(10000));
    }
    /* The lighthouse left a out at or before left_at, for OUT_MS: not in
     * again before (a lower bound only; the answer took some time). */
    assert_true(tk_now_ms() - left_at >= OUT_MS / 2);
    assert_true(rounds >= 1);
    TK_OK(lt_join_wait(&wait_a));
    assert_int_equal(wait_a.result.quorum.n_members, 3);
    ftc_lighthouse_join_result_fini(&wait_a.result);
    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

/* A join's suspects are checked like the rest of the member. */
static void bad_reports_are_refused(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    ftc_lighthouse_client *c = lt_client(addr);
    ftc_lighthouse_member m = lt_member("a", 0);
    static const char *const empty[] = {""};
    m.suspects = empty;
    m.n_suspects = 1;
    ftc_lighthouse_join_result r;
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &m, tk_ms(2000), &r), FTC_EINVAL);
    m.suspects = NULL;
    TK_EXPECT(ftc_lighthouse_client_quorum(c, &m, tk_ms(2000), &r), FTC_EINVAL);
    char *body = NULL;
    long got = lt_http(addr, "POST", "/v1/jobs/default/quorum",
                       "{\"member\": {\"replica_id\": \"a\", \"suspects\": "
                       "[\"b\", 7]}, \"timeout_ms\": 10}",
                       NULL, &body);
    assert_int_equal(got, 400);
    assert_non_null(strstr(body, "suspects[1]: not a string"));
    free(body);
    assert_false(lt_is_participant(addr, "default", "a"));
    ftc_lighthouse_client_destroy(c);
    ftc_lighthouse_destroy(lh);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_group_cut_off_is_told_and_comes_back),
        cmocka_unit_test(bad_reports_are_refused),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
