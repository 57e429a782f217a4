/* `ftc run` restarts a replica group that dies: the rest of the group is
 * killed, the group comes back as a new incarnation with a new store
 * prefix, and the job completes; past --max-restarts the job fails.
 * argv[1] is the ftc binary, argv[2] the fake trainer. */
#include <stdio.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

static void restarted(const char *name, const char *how, const char *says)
{
    char dir[4096], v[256];
    rk_dir(name, dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), T("--ranks"), T("2"), NULL};
    char *trainer[] = {T("--steps"),
                       T("10"),
                       T("--fail-replica"),
                       T("1"),
                       T("--fail-rank"),
                       T("1"),
                       T("--fail-at"),
                       T("3"),
                       T("--fail-how"),
                       T(how),
                       NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 20000), 0);
    assert_non_null(strstr(p.text, says));
    assert_non_null(strstr(p.text,
                           "replica_1 restarted as incarnation 1 (prefix "
                           "replica_1/1)"));
    /* replica 1 ran twice, replica 0 once */
    assert_int_equal(rk_seen_count(dir), 6);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(rk_seen_long(dir, 1, r, 1, "FTC_INCARNATION"), 1);
        rk_seen(dir, 1, r, 1, "FTC_STORE_PREFIX", v, sizeof(v));
        assert_string_equal(v, "replica_1/1");
        rk_seen(dir, 1, r, 0, "FTC_STORE_PREFIX", v, sizeof(v));
        assert_string_equal(v, "replica_1/0");
        assert_int_equal(rk_seen(dir, 0, r, 1, "pid", v, sizeof(v)), -1);
        /* the dead incarnation's other rank was killed with it */
        assert_true(rk_gone((pid_t)rk_seen_long(dir, 1, r, 0, "pid")));
    }
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "finished");
    assert_int_equal(rk_int(s, "failures_total"), 1);
    assert_int_equal(rk_int(s, "failures_injected"), 0);
    json_t *f = rk_failure(s, 0);
    assert_string_equal(rk_str(f, "kind"), "exit");
    assert_false(json_is_true(json_object_get(f, "injected")));
    assert_int_equal(rk_int(f, "replica_index"), 1);
    assert_int_equal(rk_int(f, "incarnation"), 0);
    assert_non_null(strstr(says, rk_str(f, "detail")));
    /* the victim came back and committed steps in its new incarnation */
    assert_true(rk_int(f, "victim_recovery_ms") > 0);
    json_t *g0 = rk_group(s, 0), *g1 = rk_group(s, 1);
    assert_int_equal(rk_int(g0, "restarts"), 0);
    assert_int_equal(rk_int(g1, "restarts"), 1);
    assert_int_equal(rk_int(g1, "crashes"), 1);
    assert_int_equal(rk_int(g1, "incarnation"), 1);
    assert_string_equal(rk_str(g1, "status"), "finished");
    /* both ran 10 steps in their last incarnation: the same checksum */
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    json_decref(s);
    rk_free(&p);
}

static void exit_code_restarts(void **state)
{
    (void)state;
    restarted("exit", "exit:3", "replica_1 died: rank 1 exited with code 3");
}

static void crash_restarts(void **state)
{
    (void)state;
    restarted("crash", "crash", "replica_1 died: rank 1 killed by SIGSEGV");
}

/* A group that keeps dying fails the job after --max-restarts restarts;
 * the healthy group is stopped, and the exit code says so. */
static void max_restarts_exceeded(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("max", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), T("--max-restarts"), T("2"),
                        NULL};
    char *trainer[] = {T("--steps"),
                       T("0"),
                       T("--fail-replica"),
                       T("1"),
                       T("--fail-at"),
                       T("2"),
                       T("--fail-incarnations"),
                       T("-1"),
                       T("--fail-how"),
                       T("exit:5"),
                       NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 20000), 1);
    assert_non_null(strstr(p.text, "replica_1 died 3 times (--max-restarts "
                                   "2): the job failed"));
    char v[64];
    for (int inc = 0; inc < 3; inc++) {
        assert_int_equal(rk_seen(dir, 1, 0, inc, "pid", v, sizeof(v)), 0);
    }
    assert_int_equal(rk_seen(dir, 1, 0, 3, "pid", v, sizeof(v)), -1);
    assert_true(rk_gone((pid_t)rk_seen_long(dir, 0, 0, 0, "pid")));
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "failed");
    assert_int_equal(rk_int(s, "exit_code"), 1);
    assert_int_equal(rk_int(s, "failures_total"), 3);
    assert_string_equal(rk_str(rk_group(s, 1), "status"), "failed");
    assert_int_equal(rk_int(rk_group(s, 1), "crashes"), 3);
    assert_int_equal(rk_int(rk_group(s, 1), "restarts"), 2);
    assert_string_equal(rk_str(rk_group(s, 0), "status"), "ended");
    json_decref(s);
    rk_free(&p);
}

/* Once a group finished training, a group that is down is not restarted
 * (it would train alone from a stale state) and the job still finishes;
 * only the groups that finished are compared. */
static void no_restart_after_training_finished(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("winddown", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), T("--max-restarts"), T("50"),
                        NULL};
    char *trainer[] = {T("--steps"),
                       T("10"),
                       T("--interval-ms"),
                       T("50"),
                       T("--finish-alone"),
                       T("--fail-replica"),
                       T("1"),
                       T("--fail-at"),
                       T("2"),
                       T("--fail-incarnations"),
                       T("-1"),
                       T("--fail-how"),
                       T("exit:4"),
                       NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    assert_non_null(
        strstr(p.text, "replica_1 is not restarted: training finished"));
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "finished");
    assert_string_equal(rk_str(rk_group(s, 0), "status"), "finished");
    assert_string_equal(rk_str(rk_group(s, 1), "status"), "ended");
    assert_int_equal(rk_int(s, "groups_finished"), 1);
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    /* the last incarnation of replica 1 that ran is gone, and no later
     * one was started */
    json_int_t inc = rk_int(rk_group(s, 1), "incarnation");
    char v[64];
    assert_int_equal(rk_seen(dir, 1, 0, (int)inc + 1, "pid", v, sizeof(v)), -1);
    json_decref(s);
    rk_free(&p);
}

/* A restarted group that has not committed a step when another group
 * finishes is stopped and ends (it would otherwise train alone from
 * step 0); the job finishes and only the finished group is compared. */
static void straggler_stopped_when_training_finished(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("straggler", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), NULL};
    char *trainer[] = {T("--steps"),
                       T("30"),
                       T("--interval-ms"),
                       T("20"),
                       T("--finish-alone"),
                       T("--stall-restarted"),
                       T("--fail-replica"),
                       T("1"),
                       T("--fail-at"),
                       T("2"),
                       T("--fail-how"),
                       T("exit:4"),
                       NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    assert_non_null(strstr(p.text, "replica_1 is stopped: it had not caught "
                                   "up when training finished"));
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "finished");
    assert_string_equal(rk_str(rk_group(s, 0), "status"), "finished");
    json_t *g1 = rk_group(s, 1);
    assert_string_equal(rk_str(g1, "status"), "ended");
    assert_int_equal(rk_int(g1, "incarnation"), 1);
    assert_int_equal(rk_int(s, "failures_total"), 1); /* the exit only */
    assert_int_equal(rk_int(s, "groups_finished"), 1);
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    /* the stalled incarnation was stopped, not left running */
    assert_true(rk_gone((pid_t)rk_seen_long(dir, 1, 0, 1, "pid")));
    json_decref(s);
    rk_free(&p);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exit_code_restarts),
        cmocka_unit_test(crash_restarts),
        cmocka_unit_test(max_restarts_exceeded),
        cmocka_unit_test(no_restart_after_training_finished),
        cmocka_unit_test(straggler_stopped_when_training_finished),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
