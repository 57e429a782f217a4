/* `ftc run` stops cleanly: on SIGINT (exit 130), SIGTERM and SIGHUP (143)
 * every rank and what it started are gone afterwards, ranks that ignore
 * SIGTERM get SIGKILL after --grace (or at a second Ctrl-C), --duration
 * ends a healthy job with exit 0, and ranks die with a killed launcher.
 * argv[1] is the ftc binary, argv[2] the fake trainer. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

/* Every rank of a 2 x 2 job, and the helper each started, is gone. */
static void all_gone(const char *dir)
{
    for (int i = 0; i < 2; i++) {
        for (int r = 0; r < 2; r++) {
            pid_t pid = (pid_t)rk_seen_long(dir, i, r, 0, "pid");
            pid_t child = (pid_t)rk_seen_long(dir, i, r, 0, "child");
            assert_true(child > 0);
            TK_WAIT_UNTIL(rk_gone(pid) && rk_gone(child), 5000);
        }
    }
}

/* Starts a 2 x 2 job of endless ranks that each start a helper (which
 * only the launcher's kill of the rank's process group ends), and waits
 * until all four have recorded themselves. */
static void start_endless(rk_run *p, const char *dir, const char *grace,
                          int ignore_sigterm)
{
    char *launcher[] = {T("--replicas"), T("2"),   T("--ranks"), T("2"),
                        T("--grace"),    T(grace), NULL};
    char *trainer[5] = {T("--steps"), T("0"), T("--child")};
    if (ignore_sigterm) {
        trainer[3] = T("--ignore-sigterm");
    }
    rk_start_job(p, dir, launcher, trainer, NULL);
    TK_WAIT_UNTIL(rk_seen_count(dir) == 4, 10000);
}

/* Sends sig to an endless job and checks its exit code, the note that
 * says so, and that nothing is left; returns the output's summary. */
static json_t *stop_with(const char *name, int sig, const char *grace,
                         int ignore_sigterm, int code, const char *says)
{
    char dir[4096];
    rk_dir(name, dir, sizeof(dir));
    rk_run p;
    start_endless(&p, dir, grace, ignore_sigterm);
    kill(p.pid, sig);
    assert_int_equal(rk_wait(&p, 10000), code);
    if (strstr(p.text, says) == NULL) {
        fail_msg("no '%s' in:\n%s", says, p.text);
    }
    /* a grace that was not needed was not used */
    assert_int_equal(strstr(p.text, "SIGKILL to the") != NULL, ignore_sigterm);
    all_gone(dir);
    rk_free(&p);
    return rk_job_summary(dir);
}

static void sigint_leaves_nothing(void **state)
{
    (void)state;
    json_t *s = stop_with("sigint", SIGINT, "5", 0, 130,
                          "SIGINT (again to kill at once): stopping 4 ranks");
    assert_string_equal(rk_str(s, "outcome"), "interrupted");
    assert_int_equal(rk_int(s, "exit_code"), 130);
    assert_string_equal(rk_str(rk_group(s, 0), "status"), "ended");
    json_decref(s);
}

static void sigterm_then_sigkill_after_grace(void **state)
{
    (void)state;
    json_t *s = stop_with("sigterm", SIGTERM, "0.3", 1, 143,
                          "SIGKILL to the 4 ranks still running");
    assert_string_equal(rk_str(s, "outcome"), "terminated");
    json_decref(s);
}

/* A closed terminal (SIGHUP) stops the job like SIGTERM. */
static void sighup_stops_like_sigterm(void **state)
{
    (void)state;
    json_decref(stop_with("sighup", SIGHUP, "5", 0, 143,
                          "SIGHUP (again to kill at once)"));
}

static void second_sigint_kills_at_once(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("twice", dir, sizeof(dir));
    rk_run p;
    start_endless(&p, dir, "600", 1);
    kill(p.pid, SIGINT);
    rk_wait_output(&p, "stopping 4 ranks", 10000);
    kill(p.pid, SIGINT);
    /* well before the 600 s grace */
    assert_int_equal(rk_wait(&p, 10000), 130);
    assert_non_null(strstr(p.text, "SIGINT again: SIGKILL to every rank"));
    all_gone(dir);
    rk_free(&p);
}

static void duration_ends_a_healthy_job(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("duration", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"),   T("--ranks"), T("2"),
                        T("--duration"), T("0.5"), NULL};
    char *trainer[] = {T("--steps"), T("0"), T("--child"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 10000), 0);
    assert_non_null(strstr(p.text, "--duration reached"));
    all_gone(dir);
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "outcome"), "duration");
    assert_true(rk_int(s, "duration_ms") >= 500);
    assert_true(rk_int(s, "steps_committed") > 0);
    json_decref(s);
    rk_free(&p);
}

/* Even kill -9 of the launcher leaves no rank behind (PR_SET_PDEATHSIG;
 * what a rank starts itself is its own business then, so no --child). */
static void ranks_die_with_the_launcher(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("pdeath", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), T("--ranks"), T("2"), NULL};
    char *trainer[] = {T("--steps"), T("0"), T("--ignore-sigterm"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    TK_WAIT_UNTIL(rk_seen_count(dir) == 4, 10000);
    kill(p.pid, SIGKILL);
    assert_int_equal(rk_wait(&p, 10000), 128 + SIGKILL);
    for (int i = 0; i < 2; i++) {
        for (int r = 0; r < 2; r++) {
            pid_t pid = (pid_t)rk_seen_long(dir, i, r, 0, "pid");
            TK_WAIT_UNTIL(rk_gone(pid), 5000);
        }
    }
    rk_free(&p);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigint_leaves_nothing),
        cmocka_unit_test(sigterm_then_sigkill_after_grace),
        cmocka_unit_test(sighup_stops_like_sigterm),
        cmocka_unit_test(second_sigint_kills_at_once),
        cmocka_unit_test(duration_ends_a_healthy_job),
        cmocka_unit_test(ranks_die_with_the_launcher),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
