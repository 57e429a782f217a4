/* Fault injection of `ftc run`: kill -9 at given committed steps with
 * victims a seed replays, never every group at once; kills every T
 * seconds; SIGSTOP then SIGCONT; a mix of both; each with its recovery
 * measured. argv[1] is the ftc binary, argv[2] the fake trainer. */
#include <stdio.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

/* Runs 3 groups with kills at steps 4, 8, 12; writes the victims'
 * indexes to victims ("120" ...). */
static void kill_at_steps(const char *name, const char *seed, char *victims)
{
    char dir[4096];
    rk_dir(name, dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),      T("3"),      T("--seed"), T(seed),
                        T("--kill-at-steps"), T("4,8,12"), NULL};
    /* Long enough that every injection finds its victim and a survivor
     * still running, however slow the machine. */
    char *trainer[] = {T("--steps"), T("60"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "finished");
    assert_int_equal(rk_int(s, "failures_injected"), 3);
    assert_int_equal(rk_int(s, "failures_total"), 3);
    static const int at_steps[] = {4, 8, 12};
    int restarts[3] = {0};
    for (int i = 0; i < 3; i++) {
        json_t *f = rk_failure(s, i);
        assert_string_equal(rk_str(f, "kind"), "kill");
        assert_true(json_is_true(json_object_get(f, "injected")));
        assert_true(rk_int(f, "step") >= at_steps[i]);
        assert_true(rk_int(f, "survivors_recovery_ms") >= 0);
        assert_true(rk_int(f, "victim_recovery_ms") > 0);
        int v = (int)rk_int(f, "replica_index");
        victims[i] = (char)('0' + v);
        restarts[v]++;
        /* the killed incarnation's ranks are gone */
        assert_true(rk_gone((pid_t)rk_seen_long(
            dir, v, 0, (int)rk_int(f, "incarnation"), "pid")));
    }
    victims[3] = '\0';
    for (int g = 0; g < 3; g++) {
        json_t *grp = rk_group(s, g);
        assert_string_equal(rk_str(grp, "status"), "finished");
        assert_int_equal(rk_int(grp, "restarts"), restarts[g]);
        assert_int_equal(rk_int(grp, "crashes"), 0); /* injected: free */
    }
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    assert_int_equal(rk_count(p.text, "injected failure "), 3);
    json_decref(s);
    rk_free(&p);
}

static void victims_replay_with_seed(void **state)
{
    (void)state;
    char first[4], again[4], other[4];
    kill_at_steps("seed42a", "42", first);
    kill_at_steps("seed42b", "42", again);
    kill_at_steps("seed5", "5", other);
    assert_string_equal(first, again);
    /* both sequences are fixed by their seeds; these two differ */
    assert_string_not_equal(first, other);
}

/* With two groups and min-replicas 1, a second kill right after the first
 * waits until the first victim is back: never both down at once. */
static void never_all_at_once(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("never", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),      T("2"),     T("--seed"), T("3"),
                        T("--kill-at-steps"), T("3,4,5"), NULL};
    char *trainer[] = {T("--steps"), T("100"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    json_t *s = rk_job_summary(dir);
    assert_int_equal(rk_int(s, "failures_injected"), 3);
    for (int i = 1; i < 3; i++) {
        json_t *prev = rk_failure(s, i - 1), *f = rk_failure(s, i);
        assert_true(rk_int(f, "at_ms") >=
                    rk_int(prev, "at_ms") + rk_int(prev, "victim_recovery_ms"));
    }
    json_decref(s);
    rk_free(&p);
}

/* --kill-every: injections at least T apart, until --duration ends the
 * job (exit 0: it was healthy); progress lines meanwhile. */
static void kill_every(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("every", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),
                        T("3"),
                        T("--kill-every"),
                        T("0.2"),
                        T("--duration"),
                        T("1.2"),
                        T("--progress"),
                        T("0.25"),
                        T("--grace"),
                        T("1"),
                        NULL};
    char *trainer[] = {T("--steps"), T("0"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "duration");
    /* no terminal: a plain progress line every --progress */
    assert_true(rk_count(p.text, "ftc run: 0.") >= 2);
    assert_true(rk_count(p.text, " | up ") >= 3);
    json_int_t n = rk_int(s, "failures_injected");
    assert_true(n >= 1);
    assert_true(rk_int(rk_failure(s, 0), "at_ms") >= 200);
    for (json_int_t i = 1; i < n; i++) {
        assert_true(rk_int(rk_failure(s, (int)i), "at_ms") >=
                    rk_int(rk_failure(s, (int)i - 1), "at_ms") + 200);
    }
    json_decref(s);
    rk_free(&p);
}

/* SIGSTOP mode: the victim is stopped, continued after --stop-duration,
 * and commits again; nothing restarts. */
static void stop_mode_resumes(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("stop", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),
                        T("2"),
                        T("--kill-mode"),
                        T("stop"),
                        T("--stop-duration"),
                        T("0.3"),
                        T("--kill-at-steps"),
                        T("5"),
                        NULL};
    char *trainer[] = {T("--steps"), T("30"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    assert_non_null(strstr(p.text, "continued (SIGCONT)"));
    assert_int_equal(rk_seen_count(dir), 2); /* no restart */
    json_t *s = rk_job_summary(dir);
    json_t *f = rk_failure(s, 0);
    assert_string_equal(rk_str(f, "kind"), "stop");
    assert_true(rk_int(f, "victim_recovery_ms") >= 300);
    assert_true(rk_int(f, "survivors_recovery_ms") >= 0);
    for (int g = 0; g < 2; g++) {
        assert_int_equal(rk_int(rk_group(s, g), "restarts"), 0);
        assert_string_equal(rk_str(rk_group(s, g), "status"), "finished");
    }
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    json_decref(s);
    rk_free(&p);
}

/* A group SIGSTOPped when the other finishes missed the last quorums:
 * woken it would commit their steps again alone, so the wind-down ends it
 * (SIGTERM and SIGCONT) instead of continuing it, and only the finished
 * group is compared. */
static void stop_outlasts_the_first_finish(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("stopfinish", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),
                        T("2"),
                        T("--kill-mode"),
                        T("stop"),
                        T("--stop-duration"),
                        T("2"),
                        T("--kill-at-steps"),
                        T("5"),
                        NULL};
    /* The survivor's last 5 steps take ~50 ms of the victim's 2 s stop. */
    char *trainer[] = {T("--steps"), T("10"), T("--finish-alone"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    const char *finished = strstr(p.text, "training finished: no more");
    const char *ended = strstr(p.text, "it was frozen when training finished");
    assert_non_null(finished);
    assert_non_null(ended);
    assert_true(finished < ended); /* the case under test happened */
    assert_null(strstr(p.text, "continued (SIGCONT)"));
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "finished");
    int n_finished = 0, n_ended = 0;
    for (int g = 0; g < 2; g++) {
        const char *st = rk_str(rk_group(s, g), "status");
        n_finished += strcmp(st, "finished") == 0;
        n_ended += strcmp(st, "ended") == 0;
    }
    assert_int_equal(n_finished, 1);
    assert_int_equal(n_ended, 1);
    json_decref(s);
    rk_free(&p);
}

/* Mixed mode draws kill or stop per injection from the seed. */
static void mixed_mode(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("mixed", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),
                        T("3"),
                        T("--seed"),
                        T("11"),
                        T("--kill-mode"),
                        T("mixed"),
                        T("--stop-duration"),
                        T("0.1"),
                        T("--kill-at-steps"),
                        T("3,6,9,12"),
                        NULL};
    char *trainer[] = {T("--steps"), T("60"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 30000), 0);
    json_t *s = rk_job_summary(dir);
    assert_int_equal(rk_int(s, "failures_injected"), 4);
    int kills = 0, stops = 0, restarts = 0;
    for (int i = 0; i < 4; i++) {
        const char *kind = rk_str(rk_failure(s, i), "kind");
        kills += strcmp(kind, "kill") == 0;
        stops += strcmp(kind, "stop") == 0;
        assert_true(rk_int(rk_failure(s, i), "victim_recovery_ms") > 0);
    }
    for (int g = 0; g < 3; g++) {
        restarts += (int)rk_int(rk_group(s, g), "restarts");
    }
    assert_int_equal(kills + stops, 4);
    assert_true(kills > 0 && stops > 0); /* so for seed 11 */
    assert_int_equal(restarts, kills);
    json_decref(s);
    rk_free(&p);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(victims_replay_with_seed),
        cmocka_unit_test(never_all_at_once),
        cmocka_unit_test(kill_every),
        cmocka_unit_test(stop_mode_resumes),
        cmocka_unit_test(stop_outlasts_the_first_finish),
        cmocka_unit_test(mixed_mode),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
