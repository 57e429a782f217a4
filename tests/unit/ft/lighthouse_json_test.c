/* The lighthouse's JSON codec: round trips of members, quorums and
 * options, and every kind of malformed request refused with a clear error
 * that leaves its output untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/lighthouse_json.h"
#include "quorum_kit.h"
#include "testkit.h"

static ftc__quorum_member sample_member(const char *id, int64_t step,
                                        const char *data)
{
    ftc__quorum_member m;
    TK_OK(ftc__quorum_member_set(&m, id, "http://10.0.0.7:29600",
                                 "10.0.0.7:29500"));
    m.step = step;
    m.world_size = 8;
    m.shrink_only = true;
    m.commit_failures = 3;
    m.data = (char *)data;
    m.data_len = data != NULL ? strlen(data) : 0;
    return m;
}

static void assert_member_equal(const ftc__quorum_member *a,
                                const ftc__quorum_member *b)
{
    assert_string_equal(a->replica_id, b->replica_id);
    assert_string_equal(a->address, b->address);
    assert_string_equal(a->store_address, b->store_address);
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->world_size, b->world_size);
    assert_int_equal(a->shrink_only, b->shrink_only);
    assert_int_equal(a->commit_failures, b->commit_failures);
    assert_int_equal(a->data_len, b->data_len);
    if (a->data_len > 0) {
        assert_memory_equal(a->data, b->data, a->data_len);
    }
}

/* Encodes m, dumps it to text, parses and decodes it again. */
static void member_round_trip(const ftc__quorum_member *m)
{
    json_t *back = qf_through_text(ftc__lhj_member_json(m));
    ftc__quorum_member got;
    TK_OK(ftc__lhj_member(back, 65536, &got));
    assert_member_equal(m, &got);
    ftc__quorum_member_fini(&got);
    json_decref(back);
}

static void member_round_trips(void **state)
{
    (void)state;
    ftc__quorum_member plain = sample_member("trainer_1:6f1c2b9e", 1200, NULL);
    member_round_trip(&plain);
    ftc__quorum_member with_data =
        sample_member("trainer_2:0a9d", 0, "{\"lr\":0.5,\"tags\":[\"a\",1]}");
    member_round_trip(&with_data);
    ftc__quorum_member scalar = sample_member("x", INT64_MAX, "42");
    member_round_trip(&scalar);
    /* UTF-8 and escapes survive. */
    ftc__quorum_member utf8 =
        sample_member("r\xc3\xa9plique\"\\/\t", 7, "\"caf\xc3\xa9\"");
    member_round_trip(&utf8);
}

static void quorum_round_trip(void **state)
{
    (void)state;
    ftc__quorum q;
    ftc__quorum_init(&q);
    q.n = 3;
    q.members = ftc__calloc(3, sizeof(*q.members));
    const char *ids[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++) {
        ftc__quorum_member m = sample_member(ids[i], (int64_t)i * 10, "[1]");
        TK_OK(ftc__quorum_member_copy(&q.members[i], &m));
    }
    /* Epoch 0x7fffffff, counter 3: beyond JavaScript's 2^53. */
    q.quorum_id = ((int64_t)0x7fffffff << 32) | 3;
    q.created_wall_ms = 1767225600123;
    json_t *j = ftc__lhj_quorum_json(&q);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "epoch")),
                     0x7fffffff);
    assert_int_equal(json_integer_value(json_object_get(j, "counter")), 3);
    ftc__quorum back;
    TK_OK(ftc__lhj_quorum(j, 16, &back));
    assert_int_equal(back.quorum_id, q.quorum_id);
    assert_int_equal(back.created_wall_ms, q.created_wall_ms);
    assert_int_equal(back.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_member_equal(&q.members[i], &back.members[i]);
    }
    /* Too many members for the caller's bound. */
    ftc__quorum small;
    TK_EXPECT(ftc__lhj_quorum(j, 2, &small), FTC_EMSGSIZE);
    assert_int_equal(small.n, 0);
    json_decref(j);
    ftc__quorum_fini(&back);
    ftc__quorum_fini(&q);
}

/* One malformed join request: the code, a phrase of the message, and an
 * output left holding nothing. */
typedef struct bad_case {
    const char *body;
    int code;
    const char *message;
} bad_case;

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void expect_bad_join(const char *body, size_t len, uint32_t max_data,
                            int code, const char *message)
{
    ftc__quorum_member m;
    memset(&m, 0x5a, sizeof(m));
    int64_t timeout = 12345;
    int64_t roster;
    int rc = ftc__lhj_join_request(body, len, max_data, &m, &timeout, &roster);
    if (rc != code || strstr(ftc_last_error(), message) == NULL) {
        fail_msg("%.80s: got %s \"%s\", expected %s with \"%s\"", body,
                 ftc_err_name(rc), ftc_last_error(), ftc_err_name(code),
                 message);
    }
    assert_int_equal(timeout, 12345);
    assert_null(m.data);
    assert_int_equal(m.data_len, 0);
}

static void join_request_rejects_malformed(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"", FTC_EINVAL, "invalid JSON"},
        {"{", FTC_EINVAL, "invalid JSON"},
        {"{} x", FTC_EINVAL, "invalid JSON"},
        {"[1]", FTC_EINVAL, "expected a JSON object"},
        {"\"member\"", FTC_EINVAL, "invalid JSON"},
        {"{}", FTC_EINVAL, "member: expected an object, got nothing"},
        {"{\"member\": 5}", FTC_EINVAL, "got an integer"},
        {"{\"member\": {}}", FTC_EINVAL, "missing field replica_id"},
        {"{\"member\": {\"replica_id\": \"\"}}", FTC_EINVAL, "empty"},
        {"{\"member\": {\"replica_id\": 5}}", FTC_EINVAL,
         "replica_id: expected a string, got an integer"},
        {"{\"member\": {\"replica_id\": null}}", FTC_EINVAL, "got null"},
        {"{\"member\": {\"replica_id\": [\"a\"]}}", FTC_EINVAL, "got an array"},
        {"{\"member\": {\"replica_id\": {}}}", FTC_EINVAL, "got an object"},
        {"{\"member\": {\"replica_id\": true}}", FTC_EINVAL, "got a boolean"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": \"1\"}}", FTC_EINVAL,
         "step: expected an integer, got a string"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": -1}}", FTC_EINVAL,
         "step: -1 not in"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": 1.5}}", FTC_EINVAL,
         "got a real number"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": 1e3}}", FTC_EINVAL,
         "got a real number"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": "
         "99999999999999999999}}",
         FTC_EINVAL, "too big"},
        {"{\"member\": {\"replica_id\": \"a\", \"step\": 1e999}}", FTC_EINVAL,
         "invalid JSON"},
        {"{\"member\": {\"replica_id\": \"a\", \"world_size\": -1}}",
         FTC_EINVAL, "world_size"},
        {"{\"member\": {\"replica_id\": \"a\", \"shrink_only\": \"yes\"}}",
         FTC_EINVAL, "shrink_only: expected a boolean"},
        {"{\"member\": {\"replica_id\": \"a\", \"commit_failures\": -2}}",
         FTC_EINVAL, "commit_failures"},
        {"{\"member\": {\"replica_id\": \"a\", \"address\": 1}}", FTC_EINVAL,
         "address"},
        {"{\"member\": {\"replica_id\": \"a\", \"store_address\": false}}",
         FTC_EINVAL, "store_address"},
        {"{\"member\": {\"replica_id\": \"a\", \"replica_id\": \"b\"}}",
         FTC_EINVAL, "duplicate object key"},
        {"{\"member\": {\"replica_id\": \"a\"}, \"member\": {}}", FTC_EINVAL,
         "duplicate object key"},
        {"{\"member\": {\"replica_id\": \"a\"}, \"timeout_ms\": -5}",
         FTC_EINVAL, "timeout_ms"},
        {"{\"member\": {\"replica_id\": \"a\"}, \"timeout_ms\": \"5\"}",
         FTC_EINVAL, "timeout_ms"},
        {"{\"member\": {\"replica_id\": \"a\\u0000b\"}}", FTC_EINVAL,
         "invalid JSON"},
        {"{\"member\": {\"replica_id\": \"\xff\xfe\"}}", FTC_EINVAL,
         "invalid JSON"},
        {"{\"member\": {\"replica_id\": \"a\", \"data\": "
         "\"0123456789abcdefXYZ\"}}",
         FTC_EMSGSIZE, "data: 21 B > max 16 B"},
        {"{\"member\": {\"replica_id\": \"a\", \"suspects\": \"b\"}}",
         FTC_EINVAL, "suspects: expected an array, got a string"},
        {"{\"member\": {\"replica_id\": \"a\", \"suspects\": [\"b\", 5]}}",
         FTC_EINVAL, "suspects[1]: not a string"},
        {"{\"member\": {\"replica_id\": \"a\", \"suspects\": [\"\"]}}",
         FTC_EINVAL, "suspect: replica_id is empty"},
        {"{\"member\": {\"replica_id\": \"a\", \"data\": 1, "
         "\"suspects\": [[]]}}",
         FTC_EINVAL, "suspects[0]: not a string"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        expect_bad_join(cases[i].body, strlen(cases[i].body), 16, cases[i].code,
                        cases[i].message);
    }
    /* Embedded NUL bytes in the body. */
    expect_bad_join("{\"member\"\0:{}}", 14, 16, FTC_EINVAL, "invalid JSON");
}

static void join_request_limits(void **state)
{
    (void)state;
    /* replica_id of 255 bytes fits; 256 does not. */
    char *id = repeat('r', 256);
    char body[1024];
    snprintf(body, sizeof(body), "{\"member\": {\"replica_id\": \"%s\"}}", id);
    expect_bad_join(body, strlen(body), 16, FTC_EMSGSIZE,
                    "replica_id: 256 B > max 255 B");
    id[255] = '\0';
    snprintf(body, sizeof(body),
             "{\"member\": {\"replica_id\": \"%s\"}, \"future\": [1]}", id);
    ftc__quorum_member m;
    int64_t timeout, roster;
    TK_OK(ftc__lhj_join_request(body, strlen(body), 16, &m, &timeout, &roster));
    assert_int_equal(strlen(m.replica_id), 255);
    assert_int_equal(timeout, -1); /* absent */
    assert_int_equal(roster, -1);  /* absent: an older client */
    assert_int_equal(m.step, 0);
    free(id);
    /* A long address is refused too. */
    char *addr = repeat('a', 300);
    char *big = malloc(1024);
    snprintf(big, 1024,
             "{\"member\": {\"replica_id\": \"x\", \"address\": \"%s\"}}",
             addr);
    expect_bad_join(big, strlen(big), 16, FTC_EMSGSIZE, "address: 300 B");
    free(addr);
    free(big);
}

/* A manager's report of the groups it could not reach: up to 256 ids. */
static void join_request_suspects(void **state)
{
    (void)state;
    const char *ok = "{\"member\": {\"replica_id\": \"a\", \"suspects\": "
                     "[\"b\", \"c:0000beef\"]}}";
    ftc__quorum_member m;
    int64_t timeout, roster;
    TK_OK(ftc__lhj_join_request(ok, strlen(ok), 16, &m, &timeout, &roster));
    assert_int_equal(m.n_suspects, 2);
    assert_int_equal(m.suspects_len, 2 + 11);
    assert_string_equal(m.suspects, "b");
    assert_string_equal(m.suspects + 2, "c:0000beef");
    ftc__quorum_member_fini(&m);
    /* 256 fit, 257 do not. */
    size_t cap = 64 + 6 * 257;
    char *body = malloc(cap);
    size_t len = (size_t)snprintf(
        body, cap, "{\"member\": {\"replica_id\": \"a\", \"suspects\": [");
    for (int i = 0; i < 257; i++) {
        len += (size_t)snprintf(body + len, cap - len, "%s\"s%d\"",
                                i == 0 ? "" : ",", i % 10);
    }
    snprintf(body + len, cap - len, "]}}");
    expect_bad_join(body, strlen(body), 16, FTC_EMSGSIZE,
                    "suspects: 257, at most 256");
    char *last = strrchr(body, ',');
    snprintf(last, cap - (size_t)(last - body), "]}}");
    TK_OK(ftc__lhj_join_request(body, strlen(body), 16, &m, &timeout, &roster));
    assert_int_equal(m.n_suspects, 256);
    ftc__quorum_member_fini(&m);
    free(body);
}

/* Nesting deeper than jansson's 2048 levels is a parse error; shallower
 * data is kept as it came. */
static void join_request_nesting(void **state)
{
    (void)state;
    size_t depth = 3000;
    size_t cap = 2 * depth + 128;
    char *body = malloc(cap);
    size_t n = (size_t)snprintf(
        body, cap, "{\"member\": {\"replica_id\": \"a\", \"data\": ");
    memset(body + n, '[', depth);
    memset(body + n + depth, ']', depth);
    snprintf(body + n + 2 * depth, cap - n - 2 * depth, "}}");
    expect_bad_join(body, strlen(body), 1u << 20, FTC_EINVAL,
                    "maximum parsing depth");
    n = (size_t)snprintf(body, cap,
                         "{\"member\": {\"replica_id\": \"a\", \"data\": ");
    memset(body + n, '[', 100);
    memset(body + n + 100, ']', 100);
    snprintf(body + n + 200, cap - n - 200, "}}");
    ftc__quorum_member m;
    int64_t timeout, roster;
    TK_OK(ftc__lhj_join_request(body, strlen(body), 1u << 20, &m, &timeout,
                                &roster));
    assert_int_equal(m.data_len, 200);
    ftc__quorum_member_fini(&m);
    free(body);
}

static void replica_request(void **state)
{
    (void)state;
    char id[FTC__QUORUM_STR_MAX] = "unchanged";
    static const bad_case cases[] = {
        {"{}", FTC_EINVAL, "missing field replica_id"},
        {"{\"replica_id\": \"\"}", FTC_EINVAL, "empty"},
        {"{\"replica_id\": 1}", FTC_EINVAL, "expected a string"},
        {"{\"replica_id\": \"a\", \"replica_id\": \"a\"}", FTC_EINVAL,
         "duplicate"},
        {"nope", FTC_EINVAL, "invalid JSON"},
        {"{\"replica_id\": \"a\", \"step\": -1}", FTC_EINVAL, "step"},
        {"{\"replica_id\": \"a\", \"step\": \"7\"}", FTC_EINVAL, "step"},
        {"{\"replica_id\": \"a\", \"finished\": 1}", FTC_EINVAL, "finished"},
    };
    ftc__lhj_leaving left = {42, true};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TK_EXPECT(ftc__lhj_replica_request(cases[i].body, strlen(cases[i].body),
                                           id, NULL, NULL, &left),
                  cases[i].code);
        assert_non_null(strstr(ftc_last_error(), cases[i].message));
        assert_string_equal(id, "unchanged");
        assert_int_equal(left.step, 42);
    }
    const char *ok = "{\"replica_id\": \"trainer_0:ab\", \"extra\": 1}";
    TK_OK(ftc__lhj_replica_request(ok, strlen(ok), id, NULL, NULL, &left));
    assert_string_equal(id, "trainer_0:ab");
    assert_int_equal(left.step, -1);
    assert_false(left.finished);
    const char *bye = "{\"replica_id\": \"b\", \"step\": 1234, "
                      "\"finished\": true}";
    TK_OK(ftc__lhj_replica_request(bye, strlen(bye), id, NULL, NULL, &left));
    assert_string_equal(id, "b");
    assert_int_equal(left.step, 1234);
    assert_true(left.finished);
}

/* A heartbeat with stats: encoded, checked, decoded the same on both
 * sides; bad stats change nothing. */
static void replica_stats(void **state)
{
    (void)state;
    ftc_lighthouse_replica_stats st = {.heals = 2,
                                       .heal_bytes = 1 << 20,
                                       .heal_seconds = 0.125,
                                       .served_bytes = 3,
                                       .healing_bytes = 5,
                                       .healing_total_bytes = 9,
                                       .healing_started_wall_ms = 1700};
    snprintf(st.healing_from, sizeof(st.healing_from), "replica_\"1\":x");
    json_t *sj = ftc__lhj_replica_stats_json(&st);
    assert_non_null(sj);
    json_t *req = json_pack("{s:s, s:o}", "replica_id", "g:1", "stats", sj);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char id[FTC__QUORUM_STR_MAX] = "unchanged";
    ftc_lighthouse_replica_stats got;
    bool has = false;
    TK_OK(ftc__lhj_replica_request(body, strlen(body), id, &got, &has, NULL));
    free(body);
    assert_true(has);
    assert_string_equal(id, "g:1");
    assert_memory_equal(&got, &st, sizeof(st));
    st.healing_from[0] = '\0'; /* no heal in progress: null */
    sj = ftc__lhj_replica_stats_json(&st);
    assert_true(json_is_null(json_object_get(sj, "healing")));
    json_decref(sj);

    static const bad_case cases[] = {
        {"{\"replica_id\": \"g:1\", \"stats\": 1}", FTC_EINVAL,
         "stats: expected an object"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"heals\": -1}}", FTC_EINVAL,
         "heals"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"heal_bytes\": \"9\"}}",
         FTC_EINVAL, "heal_bytes"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"heal_seconds\": -0.5}}",
         FTC_EINVAL, "heal_seconds"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"heal_seconds\": true}}",
         FTC_EINVAL, "heal_seconds: expected a number"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"healing\": []}}", FTC_EINVAL,
         "healing: expected an object or null"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"healing\": {}}}", FTC_EINVAL,
         "from"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"healing\": {\"from\": "
         "\"\"}}}",
         FTC_EINVAL, "healing.from: must not be empty"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"healing\": {\"from\": \"a\", "
         "\"bytes\": -2}}}",
         FTC_EINVAL, "bytes"},
        {"{\"replica_id\": \"g:1\", \"stats\": {\"served_bytes\": "
         "99999999999999999999}}",
         FTC_EINVAL, "too big integer"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&got, 0x5a, sizeof(got));
        has = false;
        TK_EXPECT(ftc__lhj_replica_request(cases[i].body, strlen(cases[i].body),
                                           id, &got, &has, NULL),
                  cases[i].code);
        if (strstr(ftc_last_error(), cases[i].message) == NULL) {
            fail_msg("case %zu: %s", i, ftc_last_error());
        }
        assert_string_equal(id, "g:1");
        assert_false(has);
        assert_int_equal(got.heals, 0x5a5a5a5a5a5a5a5a);
    }

    /* what a client could pass in by hand */
    st.heal_seconds = NAN;
    TK_EXPECT(ftc__lhj_replica_stats_check(&st), FTC_EINVAL);
    st.heal_seconds = 0;
    st.served_bytes = -1;
    TK_EXPECT(ftc__lhj_replica_stats_check(&st), FTC_EINVAL);
    st.served_bytes = 0;
    memset(st.healing_from, 'x', sizeof(st.healing_from));
    TK_EXPECT(ftc__lhj_replica_stats_check(&st), FTC_EINVAL);
}

static void job_options(void **state)
{
    (void)state;
    ftc__quorum_opts o;
    ftc__quorum_opts_init(&o);
    json_t *j;
    const char *ok = "{\"min_replicas\": 2, \"join_timeout_ms\": 1000, "
                     "\"strict_shrink_only\": true, \"other\": \"x\", "
                     "\"exclude_ms\": 250}";
    TK_OK(ftc__lhj_parse_object(ok, strlen(ok), &j));
    TK_OK(ftc__lhj_job_options(j, &o));
    json_decref(j);
    assert_int_equal(o.min_replicas, 2);
    assert_int_equal(o.join_timeout_ms, 1000);
    assert_true(o.strict_shrink_only);
    assert_int_equal(o.exclude_ms, 250);
    assert_int_equal(o.heartbeat_timeout_ms, 5000); /* untouched */
    static const char *const bad[] = {
        "{\"min_replicas\": -1}",
        "{\"min_replicas\": 2, \"heartbeat_timeout_ms\": 0}",
        "{\"max_replicas\": 0}",
        "{\"max_replicas\": 70000}",
        "{\"max_data_bytes\": 2000000}",
        "{\"strict_shrink_only\": \"no\"}",
        "{\"join_timeout_ms\": 1.5}",
        "{\"min_replicas\": 3, \"join_timeout_ms\": -1}",
        "{\"exclude_ms\": -1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ftc__quorum_opts before = o;
        TK_OK(ftc__lhj_parse_object(bad[i], strlen(bad[i]), &j));
        TK_EXPECT(ftc__lhj_job_options(j, &o), FTC_EINVAL);
        json_decref(j);
        /* Nothing changed, not even the valid fields before the bad. */
        assert_memory_equal(&before, &o, sizeof(o));
    }
    json_t *back = ftc__lhj_job_options_json(&o);
    ftc__quorum_opts copy;
    ftc__quorum_opts_init(&copy);
    TK_OK(ftc__lhj_job_options(back, &copy));
    json_decref(back);
    assert_memory_equal(&copy, &o, sizeof(o));
}

static void spec_options(void **state)
{
    (void)state;
    json_t *j;
    TK_OK(ftc__lhj_spec_options("min_replicas=2,strict_shrink_only=true", &j));
    assert_int_equal(json_integer_value(json_object_get(j, "min_replicas")), 2);
    assert_true(json_is_true(json_object_get(j, "strict_shrink_only")));
    json_decref(j);
    TK_OK(ftc__lhj_spec_options("", &j));
    assert_int_equal(json_object_size(j), 0);
    json_decref(j);
    static const char *const bad[] = {
        "x", "=1", "a=", "a=1x", "a=1,a=2", "a=99999999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = NULL;
        TK_EXPECT(ftc__lhj_spec_options(bad[i], &j), FTC_EINVAL);
        assert_null(j);
    }
}

static void quorum_rejects_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"members\": []}",
        "{\"quorum_id\": -1, \"members\": []}",
        "{\"quorum_id\": 1}",
        "{\"quorum_id\": 1, \"members\": {}}",
        "{\"quorum_id\": 1, \"members\": [1]}",
        ("{\"quorum_id\": 1, \"members\": [{\"replica_id\": \"a\"}, "
         "{\"replica_id\": \"a\"}]}"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j;
        TK_OK(ftc__lhj_parse_object(bad[i], strlen(bad[i]), &j));
        ftc__quorum q;
        TK_EXPECT(ftc__lhj_quorum(j, 16, &q), FTC_EINVAL);
        assert_int_equal(q.n, 0);
        assert_null(q.members);
        json_decref(j);
    }
}

/* A compact answer that does not fit the roster held, or is malformed,
 * is refused and leaves the roster exactly as it was. */
static void compact_rejects_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int code;
    } bad[] = {
        {"{\"roster\": 9, \"n\": 2, \"step\": 1, \"others\": []}", FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 8, \"n\": 2, \"step\": 1, "
          "\"others\": []}"),
         FTC_ESTALE},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 3, \"step\": 1, "
          "\"others\": []}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": -1, "
          "\"others\": []}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": {}}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [{\"rank\": 2, \"step\": 0}]}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [{\"rank\": 1, \"step\": 0}, "
          "{\"rank\": 0, \"step\": 0}]}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [{\"rank\": 0, \"step\": 0}, "
          "{\"rank\": 0, \"step\": 0}]}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [{\"rank\": 0}]}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [{\"rank\": 0, \"step\": 0, "
          "\"shrink_only\": 1}]}"),
         FTC_EINVAL},
        {("{\"quorum_id\": 1, \"roster\": 9, \"n\": 2, \"step\": 1, "
          "\"others\": [7]}"),
         FTC_EINVAL},
    };
    ftc__quorum held;
    static const char *const ids[] = {"a", "b"};
    static const int64_t steps[] = {4, 5};
    qf_quorum(&held, 3, ids, steps, 2);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *j;
        TK_OK(ftc__lhj_parse_object(bad[i].text, strlen(bad[i].text), &j));
        TK_EXPECT(ftc__lhj_compact_apply(j, 9, &held), bad[i].code);
        json_decref(j);
        assert_int_equal(held.quorum_id, 3);
        assert_int_equal(held.members[0].step, 4);
        assert_int_equal(held.members[1].step, 5);
    }
    /* The good one: b is at the step, a is one behind and failed once. */
    const char *good = "{\"quorum_id\": 4, \"roster\": 9, \"n\": 2, "
                       "\"step\": 6, \"others\": [{\"rank\": 0, "
                       "\"step\": 5, \"commit_failures\": 1}]}";
    json_t *j;
    TK_OK(ftc__lhj_parse_object(good, strlen(good), &j));
    TK_OK(ftc__lhj_compact_apply(j, 9, &held));
    json_decref(j);
    assert_int_equal(held.quorum_id, 4);
    assert_int_equal(held.members[0].step, 5);
    assert_int_equal(held.members[0].commit_failures, 1);
    assert_int_equal(held.members[1].step, 6);
    assert_int_equal(held.members[1].commit_failures, 0);
    ftc__quorum_fini(&held);
}

/* Each allocation of the decoder failing in turn: FTC_ENOMEM or success,
 * nothing leaked (ASan), never a half-filled output. */
static void allocation_failures(void **state)
{
    (void)state;
    const char *body = "{\"quorum_id\": 5, \"members\": [{\"replica_id\": "
                       "\"a\", \"data\": [1, 2]}, {\"replica_id\": \"b\", "
                       "\"data\": {\"x\": 1}}]}";
    json_t *j;
    TK_OK(ftc__lhj_parse_object(body, strlen(body), &j));
    bool succeeded = false;
    for (long n = 0; n < 50 && !succeeded; n++) {
        ftc__quorum q;
        ftc__alloc_fail_after(n);
        int rc = ftc__lhj_quorum(j, 16, &q);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            assert_int_equal(q.n, 2);
            ftc__quorum_fini(&q);
            succeeded = true;
        } else {
            assert_int_equal(rc, FTC_ENOMEM);
            assert_int_equal(q.n, 0);
        }
    }
    assert_true(succeeded);
    json_decref(j);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(member_round_trips),
        cmocka_unit_test(quorum_round_trip),
        cmocka_unit_test(join_request_rejects_malformed),
        cmocka_unit_test(join_request_limits),
        cmocka_unit_test(join_request_suspects),
        cmocka_unit_test(join_request_nesting),
        cmocka_unit_test(replica_request),
        cmocka_unit_test(replica_stats),
        cmocka_unit_test(job_options),
        cmocka_unit_test(spec_options),
        cmocka_unit_test(quorum_rejects_malformed),
        cmocka_unit_test(compact_rejects_malformed),
        cmocka_unit_test(allocation_failures),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
