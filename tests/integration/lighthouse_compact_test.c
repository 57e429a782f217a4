/* Compact quorum answers on one lighthouse with old and new clients: an
 * old client (no "roster" in its join) always gets the whole quorum; a new
 * one gets the whole quorum with a roster version once, then only what
 * changes from round to round, and when the roster changes only the
 * members that left and came (a delta from the roster it holds); the C
 * client, which speaks the new shapes, hands its caller the same quorum
 * every raw client reconstructs. A client that asks for the whole list
 * every round costs one shared body per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse_json.h"
#include "lighthouse_kit.h"
#include "testkit.h"

/* A join over plain HTTP, on its own thread: old (roster < 0: the field is
 * left out) or new (roster >= 0 sent). */
typedef struct raw_join {
    const char *addr;
    char body[1024];
    long status;
    char *answer;
    pthread_t thread;
} raw_join;

static void *raw_main(void *arg)
{
    raw_join *j = arg;
    j->status = lt_http(j->addr, "POST", "/v1/jobs/default/quorum", j->body,
                        NULL, &j->answer);
    return NULL;
}

static void raw_start(raw_join *j, const char *addr, const char *id,
                      const char *address, int64_t step, int64_t roster)
{
    memset(j, 0, sizeof(*j));
    j->addr = addr;
    int n = snprintf(j->body, sizeof(j->body),
                     "{\"member\": {\"replica_id\": \"%s\", \"address\": "
                     "\"%s\", \"store_address\": \"store_%s:1\", \"step\": "
                     "%lld, \"world_size\": 1}, \"timeout_ms\": %lld",
                     id, address, id, (long long)step, (long long)tk_ms(20000));
    if (roster >= 0) {
        n += snprintf(j->body + n, sizeof(j->body) - (size_t)n,
                      ", \"roster\": %lld", (long long)roster);
    }
    snprintf(j->body + n, sizeof(j->body) - (size_t)n, "}");
    assert_int_equal(pthread_create(&j->thread, NULL, raw_main, j), 0);
}

/* The answer, parsed; the test fails unless it is a 200. */
static json_t *raw_wait(raw_join *j)
{
    pthread_join(j->thread, NULL);
    if (j->status != 200) {
        fail_msg("raw join: %ld %s", j->status,
                 j->answer != NULL ? j->answer : "");
    }
    json_t *a;
    TK_OK(ftc__lhj_parse_object(j->answer, strlen(j->answer), &a));
    free(j->answer);
    return a;
}

static void expect_same_quorum(const ftc__quorum *q,
                               const ftc_lighthouse_quorum *p)
{
    assert_int_equal(q->quorum_id, p->quorum_id);
    assert_int_equal(q->created_wall_ms, p->created_wall_ms);
    assert_int_equal(q->n, p->n_members);
    for (size_t i = 0; i < q->n; i++) {
        assert_string_equal(q->members[i].replica_id, p->members[i].replica_id);
        assert_string_equal(q->members[i].address, p->members[i].address);
        assert_int_equal(q->members[i].step, p->members[i].step);
        assert_int_equal(q->members[i].commit_failures,
                         p->members[i].commit_failures);
    }
}

/* One round: the C client joins as "a", an old raw client as "b" and a new
 * raw client as "c" holding roster (0: none), and a waits until all three
 * are in. Returns the new client's answer; the old client's must be whole
 * and equal the C client's. */
typedef struct round_answers {
    json_t *c_answer;
    ftc_lighthouse_join_result a;
} round_answers;

static round_answers one_round(const char *addr, ftc_lighthouse_client *cli,
                               int64_t step, const char *c_address,
                               int64_t roster)
{
    raw_join b, c;
    raw_start(&b, addr, "b", "addr_b", step, -1);
    TK_WAIT_UNTIL(lt_is_participant(addr, "default", "b"), 10000);
    raw_start(&c, addr, "c", c_address, step - 1, roster);
    TK_WAIT_UNTIL(lt_is_participant(addr, "default", "c"), 10000);
    ftc_lighthouse_member m = lt_member("a", step);
    round_answers r;
    TK_OK(ftc_lighthouse_client_quorum(cli, &m, tk_ms(20000), &r.a));
    json_t *old = raw_wait(&b);
    assert_null(json_object_get(old, "compact"));
    ftc__quorum q;
    TK_OK(ftc__lhj_quorum(json_object_get(old, "quorum"), 16, &q));
    expect_same_quorum(&q, &r.a.quorum);
    ftc__quorum_fini(&q);
    json_decref(old);
    r.c_answer = raw_wait(&c);
    return r;
}

static int64_t roster_of(const json_t *answer)
{
    int64_t v = 0;
    TK_OK(ftc__lhj_get_int(answer, "roster", true, 1, INT64_MAX, &v));
    return v;
}

/* The value of a job counter series of /metrics. */
static void expect_metric(const char *addr, const char *name, const char *shape,
                          long want)
{
    char *text = NULL;
    assert_int_equal(lt_http(addr, "GET", "/metrics", NULL, NULL, &text), 200);
    char series[256];
    snprintf(series, sizeof(series), "%s{ftc_job=\"default\",shape=\"%s\"} ",
             name, shape);
    const char *at = strstr(text, series);
    if (at == NULL) {
        fail_msg("no series %s in /metrics", series);
    }
    assert_int_equal(strtol(at + strlen(series), NULL, 10), want);
    free(text);
}

static void old_and_new_clients(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    o.min_replicas = 3;
    o.heartbeat_timeout_ms = 600000;
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    ftc_lighthouse_client *cli;
    TK_OK(ftc_lighthouse_client_create(addr, NULL, &cli));

    /* Round 1: c holds nothing, so it gets the whole quorum and a
     * version. */
    round_answers r = one_round(addr, cli, 10, "addr_c", 0);
    assert_null(json_object_get(r.c_answer, "compact"));
    int64_t v1 = roster_of(r.c_answer);
    ftc__quorum held;
    TK_OK(ftc__lhj_quorum(json_object_get(r.c_answer, "quorum"), 16, &held));
    expect_same_quorum(&held, &r.a.quorum);
    json_decref(r.c_answer);
    ftc_lighthouse_join_result_fini(&r.a);

    /* Rounds 2 and 3: the same roster, so c gets only the round's part:
     * its own step one behind the rest, nothing else. */
    for (int64_t step = 11; step <= 12; step++) {
        r = one_round(addr, cli, step, "addr_c", v1);
        assert_null(json_object_get(r.c_answer, "quorum"));
        const json_t *compact = json_object_get(r.c_answer, "compact");
        assert_non_null(compact);
        assert_int_equal(json_array_size(json_object_get(compact, "others")),
                         1);
        TK_OK(ftc__lhj_compact_apply(compact, v1, &held));
        expect_same_quorum(&held, &r.a.quorum);
        assert_int_equal(held.members[2].step, step - 1);
        json_decref(r.c_answer);
        ftc_lighthouse_join_result_fini(&r.a);
    }

    /* Round 4: c comes back with another address (same replica_id): the
     * roster changed, and c (as a, the C client) holds the one before, so
     * it gets a delta: c's old entry removed, its new one added, nothing
     * about a or b; applied to what it holds, the new roster. */
    r = one_round(addr, cli, 13, "addr_c_2", v1);
    assert_null(json_object_get(r.c_answer, "compact"));
    assert_null(json_object_get(r.c_answer, "quorum"));
    const json_t *delta = json_object_get(r.c_answer, "delta");
    assert_non_null(delta);
    assert_int_equal(json_array_size(json_object_get(delta, "removed")), 1);
    assert_int_equal(json_array_size(json_object_get(delta, "added")), 1);
    int64_t v2 = roster_of(delta);
    assert_true(v2 != v1);
    ftc__quorum next;
    TK_OK(ftc__lhj_delta_apply(delta, &held, v1, &next));
    assert_string_equal(next.members[2].address, "addr_c_2");
    expect_same_quorum(&next, &r.a.quorum);
    json_decref(r.c_answer);
    ftc_lighthouse_join_result_fini(&r.a);
    ftc__quorum_fini(&held);
    held = next;

    /* Round 5: the new roster held, compact answers again. */
    r = one_round(addr, cli, 14, "addr_c_2", v2);
    const json_t *compact = json_object_get(r.c_answer, "compact");
    assert_non_null(compact);
    TK_OK(ftc__lhj_compact_apply(compact, v2, &held));
    expect_same_quorum(&held, &r.a.quorum);
    json_decref(r.c_answer);
    ftc_lighthouse_join_result_fini(&r.a);
    ftc__quorum_fini(&held);

    /* b asked for the whole list every round (5 full answers, and 2 more
     * in round 1), yet each round built one full body: asking in a loop
     * costs the lighthouse bytes, not work, and the others still got the
     * compact or delta one. */
    expect_metric(addr, "ftc_lighthouse_join_answers_total", "full", 7);
    expect_metric(addr, "ftc_lighthouse_join_answers_total", "compact", 6);
    expect_metric(addr, "ftc_lighthouse_join_answers_total", "delta", 2);
    expect_metric(addr, "ftc_lighthouse_join_bodies_total", "full", 5);
    expect_metric(addr, "ftc_lighthouse_join_bodies_total", "compact", 3);
    expect_metric(addr, "ftc_lighthouse_join_bodies_total", "delta", 1);

    ftc_lighthouse_client_destroy(cli);
    ftc_lighthouse_destroy(lh);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(old_and_new_clients),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
