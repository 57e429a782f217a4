/* Unit tests of the launcher's pure parts (tools/ftc/run_*.c): FTC_EVENT
 * parsing, line splitting, the injection plan, recovery bookkeeping, the
 * rank environment and option checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "run/run_env.h"
#include "run/run_event.h"
#include "run/run_inject.h"
#include "run/run_lines.h"
#include "run/run_opts.h"
#include "run/run_stats.h"
#include "testkit.h"

static run_event_kind parse(const char *line, run_event *ev)
{
    return run_event_parse(line, strlen(line), ev);
}

static void event_kinds(void **state)
{
    (void)state;
    run_event ev;
    assert_int_equal(parse("FTC_EVENT {\"kind\":\"step\",\"step\":12,\"loss\":"
                           "0.53,\"participants\":3,\"committed\":true,"
                           "\"quorum_id\":7,\"extra\":[1,2]}",
                           &ev),
                     RUN_EVENT_STEP);
    assert_int_equal(ev.step, 12);
    assert_float_equal(ev.loss, 0.53, 1e-12);
    assert_int_equal(ev.participants, 3);
    assert_int_equal(ev.committed, 1);
    assert_int_equal(ev.quorum_id, 7);
    /* optional fields absent; an integer loss is a number too */
    assert_int_equal(
        parse("FTC_EVENT {\"kind\":\"step\",\"step\":0,\"committed\":false}",
              &ev),
        RUN_EVENT_STEP);
    assert_int_equal(ev.committed, 0);
    assert_true(isnan(ev.loss));
    assert_int_equal(ev.participants, -1);
    assert_int_equal(ev.quorum_id, -1);
    assert_int_equal(parse("FTC_EVENT {\"kind\":\"result\",\"checksum\":"
                           "\"00ff\",\"final_loss\":2,\"steps\":40}",
                           &ev),
                     RUN_EVENT_RESULT);
    assert_string_equal(ev.text, "00ff");
    assert_float_equal(ev.loss, 2.0, 0);
    assert_int_equal(ev.step, 40);
    assert_int_equal(parse("FTC_EVENT {\"kind\":\"heal\",\"step\":5,\"from\":"
                           "\"replica_2\",\"ms\":12.5}",
                           &ev),
                     RUN_EVENT_HEAL);
    assert_string_equal(ev.text, "replica_2");
    assert_float_equal(ev.ms, 12.5, 0);
    assert_int_equal(
        parse("FTC_EVENT {\"kind\":\"error\",\"message\":\"a\\nb\"}", &ev),
        RUN_EVENT_ERROR);
    assert_string_equal(ev.text, "a?b"); /* control characters replaced */
    assert_int_equal(parse("FTC_EVENT {\"kind\":\"ended\",\"message\":"
                           "\"the job finished at step 9\"}",
                           &ev),
                     RUN_EVENT_ENDED);
    assert_string_equal(ev.text, "the job finished at step 9");
    assert_int_equal(parse("FTC_EVENT {\"kind\":\"later\"}", &ev),
                     RUN_EVENT_UNKNOWN);
}

static void event_garbage(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        run_event_kind kind;
        const char *why;
    } cases[] = {
        {"plain output", RUN_EVENT_NONE, ""},
        {"FTC_EVENT", RUN_EVENT_NONE, ""},
        {" FTC_EVENT {\"kind\":\"step\"}", RUN_EVENT_NONE, ""},
        {"FTC_EVENTS {}", RUN_EVENT_NONE, ""},
        {"FTC_EVENT ", RUN_EVENT_BAD, "not JSON"},
        {"FTC_EVENT {", RUN_EVENT_BAD, "not JSON"},
        {"FTC_EVENT {} trailing", RUN_EVENT_BAD, "not JSON"},
        {"FTC_EVENT [1]", RUN_EVENT_BAD, "not an object"},
        {"FTC_EVENT {\"kind\":3}", RUN_EVENT_BAD, "not an object"},
        {"FTC_EVENT {\"kind\":\"step\",\"kind\":\"step\"}", RUN_EVENT_BAD,
         "not JSON"},
        {"FTC_EVENT {\"kind\":\"step\",\"committed\":true}", RUN_EVENT_BAD,
         "no \"step\""},
        {"FTC_EVENT {\"kind\":\"step\",\"step\":1}", RUN_EVENT_BAD,
         "\"committed\" is not true or false"},
        {"FTC_EVENT {\"kind\":\"step\",\"step\":1.5,\"committed\":true}",
         RUN_EVENT_BAD, "\"step\" is not an integer"},
        {"FTC_EVENT {\"kind\":\"step\",\"step\":-1,\"committed\":true}",
         RUN_EVENT_BAD, "\"step\" is not an integer >= 0"},
        {"FTC_EVENT {\"kind\":\"step\",\"step\":1,\"committed\":1}",
         RUN_EVENT_BAD, "\"committed\""},
        {"FTC_EVENT {\"kind\":\"step\",\"step\":1,\"committed\":true,"
         "\"loss\":\"low\"}",
         RUN_EVENT_BAD, "\"loss\" is not a number"},
        {"FTC_EVENT {\"kind\":\"result\"}", RUN_EVENT_BAD, "no \"checksum\""},
        {"FTC_EVENT {\"kind\":\"result\",\"checksum\":7}", RUN_EVENT_BAD,
         "\"checksum\" is not a string"},
        {"FTC_EVENT {\"kind\":\"error\"}", RUN_EVENT_BAD, "no \"message\""},
        {"FTC_EVENT {\"kind\":\"ended\"}", RUN_EVENT_BAD, "no \"message\""},
        {"FTC_EVENT {\"kind\":\"heal\",\"from\":[]}", RUN_EVENT_BAD,
         "\"from\" is not a string"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_event ev;
        run_event_kind k = parse(cases[i].line, &ev);
        if (k != cases[i].kind || strstr(ev.why, cases[i].why) == NULL) {
            fail_msg("'%s': kind %d why '%s', expected %d '%s'", cases[i].line,
                     k, ev.why, cases[i].kind, cases[i].why);
        }
    }
    /* a checksum is never cut (two cut ones could compare equal); a
     * message is */
    char line[512];
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    run_event ev;
    snprintf(line, sizeof(line),
             "FTC_EVENT {\"kind\":\"result\",\"checksum\":\"%s\"}", big);
    assert_int_equal(parse(line, &ev), RUN_EVENT_BAD);
    snprintf(line, sizeof(line),
             "FTC_EVENT {\"kind\":\"error\",\"message\":\"%s\"}", big);
    assert_int_equal(parse(line, &ev), RUN_EVENT_ERROR);
    assert_int_equal(strlen(ev.text), RUN_EVENT_TEXT_MAX - 1);
}

typedef struct collected {
    char text[4 * RUN_LINE_MAX];
    int lines;
} collected;

static void collect(void *arg, char *line, size_t len)
{
    collected *c = arg;
    assert_int_equal(strlen(line), len);
    size_t used = strlen(c->text);
    snprintf(c->text + used, sizeof(c->text) - used, "<%zu:%.8s>", len, line);
    c->lines++;
}

static void lines_split(void **state)
{
    (void)state;
    static run_lines l;
    static collected c;
    run_lines_init(&l);
    /* byte by byte across calls, CRLF, an empty line */
    const char *in = "ab\r\n\ncd";
    for (size_t i = 0; i < strlen(in); i++) {
        run_lines_feed(&l, in + i, 1, collect, &c);
    }
    assert_string_equal(c.text, "<2:ab><0:>");
    run_lines_flush(&l, collect, &c);
    assert_string_equal(c.text, "<2:ab><0:><2:cd>");
    run_lines_flush(&l, collect, &c); /* nothing left */
    assert_int_equal(c.lines, 3);
    /* an overlong line arrives in pieces of RUN_LINE_MAX */
    memset(&c, 0, sizeof(c));
    static char big[RUN_LINE_MAX * 2 + 10];
    memset(big, 'x', sizeof(big));
    big[sizeof(big) - 1] = '\n';
    run_lines_feed(&l, big, sizeof(big), collect, &c);
    assert_string_equal(c.text, "<16384:xxxxxxxx><16384:xxxxxxxx><9:xxxxxxxx>");
}

static run_opts plan_opts(run_kill_mode mode, uint64_t seed)
{
    static run_opts o;
    memset(&o, 0, sizeof(o));
    o.replicas = 4;
    o.min_replicas = 2;
    o.kill_steps[0] = 10;
    o.kill_steps[1] = 20;
    o.n_kill_steps = 2;
    o.kill_mode = mode;
    o.seed = seed;
    return o;
}

/* One plan with two injections; returns 1 if the second drew the first
 * victim again (then waited for it), 0 if it drew another. */
static int two_injections(uint64_t seed)
{
    run_opts o = plan_opts(RUN_KILL_SIGKILL, seed);
    run_inject in;
    run_inject_init(&in, &o, 0);
    run_health h[4] = {RUN_HEALTH_UP, RUN_HEALTH_UP, RUN_HEALTH_UP,
                       RUN_HEALTH_UP};
    int stop = -1;
    assert_int_equal(run_inject_poll(&in, 0, 9, h, 4, &stop), -1);
    assert_int_equal(run_inject_wake_ms(&in), INT64_MAX);
    int v = run_inject_poll(&in, 0, 10, h, 4, &stop);
    assert_true(v >= 0 && v < 4);
    assert_int_equal(stop, 0);
    /* not fired yet: the same victim again */
    assert_int_equal(run_inject_poll(&in, 1, 10, h, 4, &stop), v);
    run_inject_fired(&in, 1);
    h[v] = RUN_HEALTH_DOWN;
    assert_int_equal(run_inject_poll(&in, 2, 19, h, 4, &stop), -1);
    /* due at 20: with 3 up and min 2 one more may go */
    int w = run_inject_poll(&in, 2, 20, h, 4, &stop);
    if (w >= 0) {
        assert_true(w != v && h[w] == RUN_HEALTH_UP);
        return 0;
    }
    /* the drawn victim is down: waited for, not swapped */
    assert_int_equal(in.victim, v);
    assert_int_equal(run_inject_poll(&in, 3, 25, h, 4, &stop), -1);
    h[v] = RUN_HEALTH_UP;
    assert_int_equal(run_inject_poll(&in, 4, 25, h, 4, &stop), v);
    return 1;
}

static void inject_plan(void **state)
{
    (void)state;
    int redrawn = 0;
    for (uint64_t seed = 0; seed < 64; seed++) {
        redrawn += two_injections(seed);
    }
    assert_true(redrawn > 0 && redrawn < 64); /* both paths ran */
    run_opts o = plan_opts(RUN_KILL_SIGKILL, 99);
    run_inject in;
    int stop;
    /* 2 up, min 2: nobody may go */
    run_health two[4] = {RUN_HEALTH_UP, RUN_HEALTH_UP, RUN_HEALTH_DOWN,
                         RUN_HEALTH_DOWN};
    run_inject_init(&in, &o, 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(run_inject_poll(&in, i, 100, two, 4, &stop), -1);
    }
    /* only finished groups left but one: nothing to draw */
    run_health gone[4] = {RUN_HEALTH_GONE, RUN_HEALTH_GONE, RUN_HEALTH_GONE,
                          RUN_HEALTH_UP};
    run_inject_init(&in, &o, 0);
    assert_int_equal(run_inject_poll(&in, 0, 100, gone, 4, &stop), -1);
}

/* The victims of a seed do not depend on timing: a plan polled while the
 * drawn victim is down hits the same groups in the same order. */
static void inject_replays(void **state)
{
    (void)state;
    run_opts o = plan_opts(RUN_KILL_MIXED, 1234);
    o.n_kill_steps = 0;
    o.kill_every_ms = 100;
    int seq[2][20], kinds[2][20];
    for (int pass = 0; pass < 2; pass++) {
        run_inject in;
        run_inject_init(&in, &o, 0);
        int64_t now = 0;
        for (int k = 0; k < 20; k++) {
            run_health h[4] = {RUN_HEALTH_UP, RUN_HEALTH_UP, RUN_HEALTH_UP,
                               RUN_HEALTH_UP};
            int stop;
            now = run_inject_wake_ms(&in);
            int v = run_inject_poll(&in, now, 0, h, 4, &stop);
            if (pass == 1) {
                /* the victim is down for a while first */
                h[v] = RUN_HEALTH_DOWN;
                assert_int_equal(run_inject_poll(&in, now + 5, 0, h, 4, &stop),
                                 -1);
                h[v] = RUN_HEALTH_UP;
                now += 7;
                assert_int_equal(run_inject_poll(&in, now, 0, h, 4, &stop), v);
            }
            seq[pass][k] = v;
            kinds[pass][k] = stop;
            run_inject_fired(&in, now);
            assert_int_equal(run_inject_wake_ms(&in), now + 100);
        }
    }
    int stops = 0, seen[4] = {0};
    for (int k = 0; k < 20; k++) {
        assert_int_equal(seq[0][k], seq[1][k]);
        assert_int_equal(kinds[0][k], kinds[1][k]);
        stops += kinds[0][k];
        seen[seq[0][k]] = 1;
    }
    assert_true(stops > 0 && stops < 20); /* mixed: both kinds */
    assert_int_equal(seen[0] + seen[1] + seen[2] + seen[3], 4);
}

#define TRAINER RUN_SOURCE_TRAINER
#define MANAGER RUN_SOURCE_MANAGER

static void stats_recovery(void **state)
{
    (void)state;
    run_stats s;
    TK_OK(run_stats_init(&s, 3, 2));
    run_event step = {.kind = RUN_EVENT_STEP,
                      .step = 5,
                      .committed = 1,
                      .loss = 0.5,
                      .participants = 3};
    run_stats_event(&s, 0, 0, 0, TRAINER, &step, 100);
    run_stats_event(&s, 1, 1, 0, TRAINER, &step, 100); /* rank 1: not counted */
    assert_int_equal(s.max_step, 5);
    assert_int_equal(s.replicas[1].tally[TRAINER].committed, 0);
    /* records move as more are added: use them at once */
    assert_non_null(run_stats_failure(&s, 1, 0, 1, 0, 1000));
    assert_non_null(run_stats_failure(&s, 1, 1, 2, 0, 1000));
    assert_int_equal(s.failures[0].step, 5);
    /* a report of step 5 still on its way at the failure: no recovery */
    run_stats_event(&s, 0, 0, 0, TRAINER, &step, 1050);
    assert_int_equal(s.failures[0].survivors_ms, -1);
    /* victim 1's old incarnation reports late: not back */
    step.step = 6;
    run_stats_event(&s, 1, 0, 0, TRAINER, &step, 1100);
    assert_int_equal(s.failures[0].victim_ms, -1);
    /* group 1 is a survivor of group 2's stop */
    assert_int_equal(s.failures[1].survivors_ms, 100);
    /* a survivor commits: group 1's survivors are measured */
    run_stats_event(&s, 0, 0, 0, TRAINER, &step, 1200);
    assert_int_equal(s.failures[0].survivors_ms, 200);
    /* the stopped group's step before SIGCONT does not count */
    run_stats_event(&s, 2, 0, 0, TRAINER, &step, 1300);
    assert_int_equal(s.failures[1].victim_ms, -1);
    run_stats_resumed(&s, 2, 1400);
    run_stats_event(&s, 2, 0, 0, TRAINER, &step, 1500);
    assert_int_equal(s.failures[1].victim_ms, 500);
    /* an uncommitted step of the new incarnation does not count */
    step.committed = 0;
    run_stats_event(&s, 1, 0, 1, TRAINER, &step, 1600);
    assert_int_equal(s.failures[0].victim_ms, -1);
    step.committed = 1;
    run_stats_event(&s, 1, 0, 1, TRAINER, &step, 1700);
    assert_int_equal(s.failures[0].victim_ms, 700);
    run_recovery_summary rec;
    run_stats_recovery(&s, &rec);
    assert_int_equal(rec.victim_n, 2);
    assert_int_equal(rec.victim_mean_ms, 600);
    assert_int_equal(rec.victim_max_ms, 700);
    assert_int_equal(rec.survivors_max_ms, 200);
    assert_int_equal(s.injected, 2);
    assert_int_equal(s.replicas[1].tally[TRAINER].uncommitted, 1);
    /* checksums: per group rank, all groups equal, all reported */
    run_event res = {.kind = RUN_EVENT_RESULT, .loss = NAN, .step = -1};
    for (int g = 0; g < 3; g++) {
        for (int r = 0; r < 2; r++) {
            snprintf(res.text, sizeof(res.text), "sum-rank-%d", r);
            run_stats_event(&s, g, r, 0, TRAINER, &res, 2000);
        }
    }
    const int all[3] = {1, 1, 1}, first_two[3] = {1, 1, 0}, none[3] = {0};
    assert_true(run_stats_checksums_identical(&s, all));
    assert_false(run_stats_checksums_identical(&s, none));
    run_stats_restarted(&s, 2); /* results of a dead incarnation go */
    assert_false(run_stats_checksums_identical(&s, all));
    /* a group that did not finish is not compared */
    assert_true(run_stats_checksums_identical(&s, first_two));
    snprintf(res.text, sizeof(res.text), "sum-rank-0");
    run_stats_event(&s, 2, 0, 1, TRAINER, &res, 2100);
    snprintf(res.text, sizeof(res.text), "other");
    run_stats_event(&s, 2, 1, 1, TRAINER, &res, 2100);
    assert_false(run_stats_checksums_identical(&s, all));
    run_stats_free(&s);
}

/* A trainer and its manager both report: each keeps its counts, the
 * manager's count once it reported, and checksums are compared by the
 * trainers' when every rank has one, else by the managers'. */
static void stats_two_reporters(void **state)
{
    (void)state;
    run_stats s;
    TK_OK(run_stats_init(&s, 2, 1));
    run_event step = {.kind = RUN_EVENT_STEP,
                      .step = 1,
                      .committed = 1,
                      .loss = 0.25,
                      .participants = 2};
    run_stats_event(&s, 0, 0, 0, TRAINER, &step, 10);
    assert_ptr_equal(run_stats_tally(&s, 0), &s.replicas[0].tally[TRAINER]);
    step.loss = NAN; /* managers know no loss */
    run_stats_event(&s, 0, 0, 0, MANAGER, &step, 10);
    step.step = 2;
    run_stats_event(&s, 0, 0, 0, MANAGER, &step, 20);
    assert_ptr_equal(run_stats_tally(&s, 0), &s.replicas[0].tally[MANAGER]);
    assert_int_equal(run_stats_tally(&s, 0)->committed, 2);
    assert_int_equal(s.replicas[0].tally[TRAINER].committed, 1);
    assert_int_equal(s.max_step, 2);
    assert_true(s.loss == 0.25); /* the trainer's loss stays */
    run_event res = {.kind = RUN_EVENT_RESULT, .loss = NAN, .step = 2};
    const int both[2] = {1, 1};
    assert_int_equal(run_stats_result_source(&s, both), -1);
    for (int g = 0; g < 2; g++) {
        snprintf(res.text, sizeof(res.text), "mgr-same");
        run_stats_event(&s, g, 0, 0, MANAGER, &res, 30);
    }
    assert_int_equal(run_stats_result_source(&s, both), MANAGER);
    assert_true(run_stats_checksums_identical(&s, both));
    /* one trainer result is not every rank's: still the managers' */
    snprintf(res.text, sizeof(res.text), "trainer-a");
    run_stats_event(&s, 0, 0, 0, TRAINER, &res, 40);
    assert_int_equal(run_stats_result_source(&s, both), MANAGER);
    snprintf(res.text, sizeof(res.text), "trainer-b");
    run_stats_event(&s, 1, 0, 0, TRAINER, &res, 40);
    assert_int_equal(run_stats_result_source(&s, both), TRAINER);
    assert_false(run_stats_checksums_identical(&s, both));
    run_stats_free(&s);
}

static void env_build(void **state)
{
    (void)state;
    char *base[] = {"PATH=/bin", "FTC_JOB=stale",  "KEEP=1", "USER_X=old",
                    "RANK=9",    "FTC_EVENT_FD=9", NULL};
    const char *user[] = {"USER_X=new", "EXTRA=a=b"};
    run_env_rank r = {.job = "j",
                      .lighthouse = "h:1",
                      .store_addr = "127.0.0.1:5",
                      .run_dir = "/d",
                      .replica_index = 3,
                      .num_replicas = 4,
                      .group_rank = 1,
                      .group_size = 2,
                      .incarnation = 7,
                      .host = "10.77.0.2"};
    char **env = run_env_build(base, &r, user, 2);
    assert_non_null(env);
    static const char *const want[] = {"PATH=/bin",
                                       "KEEP=1",
                                       "FTC_JOB=j",
                                       "FTC_LIGHTHOUSE=h:1",
                                       "FTC_REPLICA_ID=replica_3",
                                       "FTC_REPLICA_INDEX=3",
                                       "FTC_NUM_REPLICAS=4",
                                       "FTC_GROUP_RANK=1",
                                       "FTC_GROUP_SIZE=2",
                                       "FTC_STORE_ADDR=127.0.0.1:5",
                                       "FTC_STORE_PREFIX=replica_3/7",
                                       "FTC_INCARNATION=7",
                                       "FTC_RUN_DIR=/d",
                                       "FTC_EVENT_FD=3",
                                       "FTC_ADVERTISE_HOST=10.77.0.2",
                                       "REPLICA_GROUP_ID=3",
                                       "NUM_REPLICA_GROUPS=4",
                                       "TORCHFT_LIGHTHOUSE=http://h:1",
                                       "RANK=1",
                                       "WORLD_SIZE=2",
                                       "LOCAL_RANK=1",
                                       "LOCAL_WORLD_SIZE=2",
                                       "MASTER_ADDR=127.0.0.1",
                                       "MASTER_PORT=5",
                                       "TORCHELASTIC_USE_AGENT_STORE=True",
                                       "TORCHELASTIC_RESTART_COUNT=7",
                                       "USER_X=new",
                                       "EXTRA=a=b",
                                       NULL};
    for (int i = 0; want[i] != NULL || env[i] != NULL; i++) {
        assert_non_null(env[i]);
        assert_non_null(want[i]);
        assert_string_equal(env[i], want[i]);
    }
    run_env_free(env);
    assert_true(run_env_is_contract("FTC_RUN_DIR", 11));
    assert_false(run_env_is_contract("FTC_RUN", 7));
    assert_false(run_env_is_contract("FTC_LOG", 7));
    assert_true(run_env_is_contract("MASTER_PORT", 11));
    /* an IPv6 store: MASTER_ADDR without the brackets */
    r.store_addr = "[::1]:77";
    env = run_env_build(NULL, &r, NULL, 0);
    assert_non_null(env);
    int seen = 0;
    for (int i = 0; env[i] != NULL; i++) {
        seen += strcmp(env[i], "MASTER_ADDR=::1") == 0 ||
                strcmp(env[i], "MASTER_PORT=77") == 0;
    }
    assert_int_equal(seen, 2);
    run_env_free(env);
    /* --trace: FTC_TRACE per rank and incarnation replaces an inherited
     * one; without it an inherited one is kept */
    char *traced[] = {"FTC_TRACE=/shared.json", "KEEP=1", NULL};
    env = run_env_build(traced, &r, NULL, 0);
    assert_non_null(env);
    assert_string_equal(env[0], "FTC_TRACE=/shared.json");
    run_env_free(env);
    r.trace_dir = "/t";
    env = run_env_build(traced, &r, NULL, 0);
    assert_non_null(env);
    seen = 0;
    for (int i = 0; env[i] != NULL; i++) {
        assert_true(strncmp(env[i], "FTC_TRACE=", 10) != 0 ||
                    strcmp(env[i], "FTC_TRACE=/t/trace-replica_3-rank1-inc7."
                                   "json") == 0);
        seen += strncmp(env[i], "FTC_TRACE=", 10) == 0;
    }
    assert_int_equal(seen, 1);
    run_env_free(env);
    /* every allocation failure returns NULL and leaks nothing */
    for (long n = 0;; n++) {
        ftc__alloc_fail_after(n);
        env = run_env_build(base, &r, user, 2);
        ftc__alloc_fail_after(-1);
        if (env != NULL) {
            run_env_free(env);
            break;
        }
    }
}

static int parse_args(run_opts *o, const char *const *args)
{
    static char *argv[32] = {"run"}; /* o->command points into it */
    int argc = 1;
    for (; args[argc - 1] != NULL; argc++) {
        argv[argc] = (char *)args[argc - 1];
    }
    return run_opts_parse(o, argc, argv);
}

/* Two replica groups from index first of a job of total, on 10.77.0.3. */
static int parse_range(run_opts *o, const char *first, const char *total)
{
    const char *a[] = {"--host",
                       "10.77.0.3",
                       "--first-replica",
                       first,
                       "--replicas",
                       "2",
                       "--total-replicas",
                       total,
                       "--",
                       "x",
                       NULL};
    return parse_args(o, a);
}

static void opts_parse(void **state)
{
    (void)state;
    static run_opts o;
    const char *a1[] = {
        "--replicas=3", "--ranks",     "2",     "--kill-at-steps",
        "30,10,20",     "--kill-mode", "mixed", "--stop-duration",
        "0.25",         "--seed",      "0x10",  "./train",
        "--replicas",   "9",           NULL};
    assert_int_equal(parse_args(&o, a1), 0);
    assert_int_equal(o.replicas, 3);
    assert_int_equal(o.ranks, 2);
    assert_int_equal(o.n_kill_steps, 3);
    assert_int_equal(o.kill_steps[0], 10);
    assert_int_equal(o.kill_steps[2], 30);
    assert_int_equal(o.kill_mode, RUN_KILL_MIXED);
    assert_int_equal(o.stop_ms, 250);
    assert_int_equal(o.seed, 16);
    /* the command starts at the first non-option, its options its own */
    assert_string_equal(o.command[0], "./train");
    assert_string_equal(o.command[1], "--replicas");
    const char *a2[] = {"--", "--help", NULL};
    assert_int_equal(parse_args(&o, a2), 0);
    assert_false(o.help);
    assert_string_equal(o.command[0], "--help");
    assert_true(o.seed < (1ull << 31)); /* drawn, short */
    const char *a3[] = {"--duration", "0", "--", "x", NULL};
    assert_int_equal(parse_args(&o, a3), 2);
    const char *a4[] = {"--seed", "-1", "--", "x", NULL};
    assert_int_equal(parse_args(&o, a4), 2);
    const char *a5[] = {"--replicas", "40", "--ranks", "40", "--", "x", NULL};
    assert_int_equal(parse_args(&o, a5), 2);
    const char *a6[] = {"--trace", "tr", "--env", "A=1", "--", "x", NULL};
    assert_int_equal(parse_args(&o, a6), 0);
    assert_string_equal(o.trace_dir, "tr");
    const char *a7[] = {"--trace", "tr", "--env", "FTC_TRACE=f",
                        "--",      "x",  NULL};
    assert_int_equal(parse_args(&o, a7), 2); /* two places for one file */
    /* defaults: this machine's loopback, the whole job here */
    assert_string_equal(o.host, "127.0.0.1");
    assert_int_equal(o.first_replica, 0);
    assert_int_equal(o.total_replicas, 2);
    /* one ftc run per host: its range of a job's replica groups */
    assert_int_equal(parse_range(&o, "2", "6"), 0);
    assert_string_equal(o.host, "10.77.0.3");
    assert_int_equal(o.first_replica, 2);
    assert_int_equal(o.total_replicas, 6);
    assert_int_equal(parse_range(&o, "5", "6"), 2); /* 5 + 2 > 6 */
    const char *a10[] = {"--host", "", "--", "x", NULL};
    assert_int_equal(parse_args(&o, a10), 2);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(event_kinds),         cmocka_unit_test(event_garbage),
        cmocka_unit_test(lines_split),         cmocka_unit_test(inject_plan),
        cmocka_unit_test(inject_replays),      cmocka_unit_test(stats_recovery),
        cmocka_unit_test(stats_two_reporters), cmocka_unit_test(env_build),
        cmocka_unit_test(opts_parse),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
