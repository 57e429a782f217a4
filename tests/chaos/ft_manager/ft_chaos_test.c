/* The manager under faults, with real processes: a replica group killed
 * with SIGKILL at a seeded step and restarted (it heals and rejoins), a
 * group frozen by SIGSTOP with an allreduce in flight (the others go on at
 * once, pushed by the lighthouse, and it rejoins after SIGCONT), and
 * DiLoCo through ftc_manager_algo_comm surviving a kill (the victim's
 * state behind save/load callbacks, a survivor's half so). Every run ends
 * bit-identical with every step committed exactly once per replica line.
 * FTC_TEST_SEED picks the fault's step (printed). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_kit.h"

static unsigned seed(void)
{
    const char *s = getenv("FTC_TEST_SEED");
    return s != NULL ? (unsigned)strtoul(s, NULL, 10) : 20261202u;
}

/* The first commit of a step >= min_step after t_ns by any group but
 * `except`, in ms after t_ns; -1 if none yet. */
static double survivors_ms(ftk_job *j, int except, int64_t min_step,
                           int64_t t_ns)
{
    int64_t best = -1;
    for (int g = 0; g < j->groups; g++) {
        int64_t t =
            g != except ? ftk_first_commit_after(j, g, min_step, t_ns) : -1;
        if (t > 0 && (best < 0 || t < best)) {
            best = t;
        }
    }
    return best > 0 ? (double)(best - t_ns) / 1e6 : -1;
}

/* Collectives may wait this long: a survivor that went on only when its
 * allreduce timed out would take at least this. */
#define COLLECTIVE_TIMEOUT "FTK_TIMEOUT_MS=60000"
/* What the survivors must beat to prove they were pushed (scaled with the
 * collective timeout under sanitizers). */
#define PUSHED_MS 10000

/* The survivors' first commit after t_ns in a quorum without group g's
 * incarnation i, waited for up to 60 s: ms after t_ns, and its step. */
static double survivors_without(ftk_job *j, int g, int i, int64_t t_ns,
                                int64_t *step)
{
    int64_t q = -1, t = -1;
    TK_WAIT_UNTIL((t = ftk_first_commit_without(j, g, i, t_ns, step, &q)) >= 0,
                  60000);
    return (double)(t - t_ns) / 1e6;
}

/* Starts groups 0..2 together (the job asks 3 replicas, then 2 so that
 * the survivors go on), kills group 1 with SIGKILL once it committed step
 * *at or a later one (*at becomes that step), restarts it, and returns
 * the time of the kill. Groups 0 and 2 wait at step gate_at until the
 * parent opens the gate. Group 1 registers its state through save/load
 * callbacks, group 2 half of it (the others borrowed memory): healing
 * mixes them. */
static int64_t run_and_kill(ftk_job *j, int gate_at, int64_t *at)
{
    char gate[32];
    snprintf(gate, sizeof(gate), "FTK_GATE_AT=%d", gate_at);
    char *survivor[] = {gate, COLLECTIVE_TIMEOUT, NULL};
    char *mixed[] = {gate, "FTK_STATE=mixed", COLLECTIVE_TIMEOUT, NULL};
    char *victim[] = {"FTK_STATE=cb", COLLECTIVE_TIMEOUT, NULL};
    ftk_spawn(j, 0, survivor);
    ftk_spawn(j, 1, victim);
    ftk_spawn(j, 2, mixed);
    ftk_wait_commit(j, 1, 1, 60000);
    TK_OK(ftc_lighthouse_configure_job(j->lh, "ftk:min_replicas=2"));
    *at = ftk_wait_commit(j, 1, *at, 60000);
    int64_t t_kill = ftk_now_ns();
    ftk_kill(j, 1);
    ftk_spawn(j, 1, victim);
    return t_kill;
}

/* kill -9 of replica group 1 at a seeded step; restarted, it heals from
 * the survivors. They wait at a gate far ahead until it is back, so that
 * even a slow machine cannot let them finish without it. Their time from
 * the kill to their next commit counts only a quorum without the killed
 * incarnation (a commit of a quorum it was in, already past its
 * collectives, says nothing of the recovery), and must beat the 60 s
 * collective timeout by far: the lighthouse pushed the loss. */
static void kill9_and_restart(void **state)
{
    (void)state;
    unsigned s = seed();
    int64_t at = 5 + (int64_t)(s % 15);
    ftk_job j;
    ftk_start(&j, 3, 2, 120, 3);
    int64_t t_kill = run_and_kill(&j, 100, &at);
    int64_t step;
    double ms = survivors_without(&j, 1, 0, t_kill, &step);
    printf("kill -9 of replica group 1 after step %lld (seed %u): survivors "
           "committed step %lld without it %.1f ms after the kill "
           "(heartbeat timeout 500 ms, collective timeout 60000 ms)\n",
           (long long)at, s, (long long)step, ms);
    assert_true(ms < (double)tk_ms(PUSHED_MS));
    ftk_wait_participant(&j, 1, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 180000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(ftk_count(&j, 1, 1, r, "heal "), 1);
        /* Healed through its load callbacks. */
        assert_int_equal(ftk_count(&j, 1, 1, r, "load x "), 1);
        assert_int_equal(ftk_count(&j, 1, 1, r, "load momentum "), 1);
    }
    ftk_stop(&j);
}

/* Replica group 1 freezes (SIGSTOP) with its allreduce of a seeded step
 * in flight: the lighthouse's heartbeat timeout (500 ms) pushes its loss
 * to the others, who abort that allreduce and commit without it long
 * before their collective timeout (60 s here; the bound is 10 s). After
 * SIGCONT it fails its step, heals and rejoins; all end bit-identical. */
static void sigstop_mid_allreduce(void **state)
{
    (void)state;
    unsigned s = seed();
    int64_t at = 5 + (int64_t)((s / 7) % 15);
    ftk_job j;
    ftk_start(&j, 3, 2, 80, 3);
    char stop[32], gate[32];
    snprintf(stop, sizeof(stop), "FTK_STOP_AT=%lld", (long long)at);
    snprintf(gate, sizeof(gate), "FTK_GATE_AT=%d", 60);
    char *victim[] = {stop, COLLECTIVE_TIMEOUT, NULL};
    char *survivor[] = {gate, COLLECTIVE_TIMEOUT, NULL};
    ftk_spawn(&j, 0, survivor);
    ftk_spawn(&j, 1, victim);
    ftk_spawn(&j, 2, survivor);
    ftk_wait_commit(&j, 1, 1, 60000);
    TK_OK(ftc_lighthouse_configure_job(j.lh, "ftk:min_replicas=2"));
    /* Both ranks of group 1 stopped themselves in the allreduce. */
    TK_WAIT_UNTIL(ftk_count(&j, 1, 0, 0, "stop ") == 1 &&
                      ftk_count(&j, 1, 0, 1, "stop ") == 1,
                  60000);
    long long t_stop = 0, at_stop = -1;
    for (int r = 0; r < 2; r++) { /* the later of the two stops */
        char path[256], line[512];
        ftk_log_path(&j, 1, 0, r, path, sizeof(path));
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f) != NULL) {
            long long st, t;
            if (sscanf(line, "stop %lld %lld", &st, &t) == 2 && t > t_stop) {
                at_stop = st;
                t_stop = t;
            }
        }
        fclose(f);
    }
    int64_t step;
    double ms = survivors_without(&j, 1, 0, t_stop, &step);
    printf("SIGSTOP of replica group 1 in the allreduce of step %lld (seed "
           "%u): survivors committed step %lld without it %.1f ms after the "
           "stop (heartbeat timeout 500 ms, collective timeout 60000 ms)\n",
           at_stop, s, (long long)step, ms);
    assert_true(ms < (double)tk_ms(PUSHED_MS));
    assert_int_equal(step, at_stop); /* the step it froze in */
    ftk_signal(&j, 1, SIGCONT);
    ftk_wait_participant(&j, 1, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 180000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(ftk_count(&j, 1, 0, r, "cont "), 1);
        assert_true(ftk_count(&j, 1, 0, r, "heal ") >= 1);
    }
    ftk_stop(&j);
}

/* DiLoCo (ftc_diloco_*) trains through ftc_manager_algo_comm on three
 * replica groups; one is killed and restarted, heals its parameters,
 * global copy and outer momentum, and all end bit-identical. */
static void diloco_through_the_manager(void **state)
{
    (void)state;
    unsigned s = seed();
    int64_t at = 3 + (int64_t)(s % 5);
    ftk_job j;
    ftk_start(&j, 3, 1, 40, 3);
    j.algo = "diloco";
    int64_t t_kill = run_and_kill(&j, 30, &at);
    ftk_wait_participant(&j, 1, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 180000);
    assert_int_equal(ftk_count(&j, 1, 1, 0, "heal "), 1);
    printf("DiLoCo: replica group 1 killed after outer step %lld (seed %u); "
           "survivors' next outer step %.1f ms later\n",
           (long long)at, s, survivors_ms(&j, 1, at + 1, t_kill));
    ftk_stop(&j);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {FTK_ROLES};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kill9_and_restart),
        cmocka_unit_test(sigstop_mid_allreduce),
        cmocka_unit_test(diloco_through_the_manager),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
