/* A job that finished, run again under its name on a lighthouse that stays
 * up: the second `ftc run`'s groups end at once (status "ended": the job
 * finished without them) instead of training the job again alone, and the
 * run exits 0; a run that goes on from the last step is another matter
 * (ft_manager_finish_test). The real ftc, train_ddp and train_diloco;
 * argv[1] is the ftc binary, argv[2] the train_ddp binary (train_diloco is
 * next to it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

/* ftc run --lighthouse ADDR --job JOB, 2 groups of 2 ranks of trainer
 * for `steps` steps; returns its exit code and loads its summary. */
static int run(const char *addr, const char *job, const char *trainer,
               const char *steps, const char *summary_path, rk_run *p,
               json_t **summary)
{
    char *args[] = {
        T("--lighthouse"),   T(addr),         T("--job"),   T(job),
        T("--replicas"),     T("2"),          T("--ranks"), T("2"),
        T("--summary-json"), T(summary_path), T("--"),      T(trainer),
        T("--steps"),        T(steps),        NULL};
    rk_start(p, args, NULL);
    int rc = rk_wait(p, 120000);
    *summary = rk_summary(summary_path);
    return rc;
}

/* The scenario with one trainer: a first run finishes, a second one under
 * the same job name ends at once. */
static void second_run_ends(const char *trainer, const char *job,
                            const char *steps)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128], dir[4096], first[4200], second[4200];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    rk_dir(job, dir, sizeof(dir));
    snprintf(first, sizeof(first), "%s/first.json", dir);
    snprintf(second, sizeof(second), "%s/second.json", dir);

    rk_run p;
    json_t *s;
    assert_int_equal(run(addr, job, trainer, steps, first, &p, &s), 0);
    for (int g = 0; g < 2; g++) {
        assert_string_equal(rk_str(rk_group(s, g), "status"), "finished");
        assert_int_equal(rk_int(rk_group(s, g), "last_step"),
                         strtoll(steps, NULL, 10));
    }
    json_decref(s);
    rk_free(&p);

    assert_int_equal(run(addr, job, trainer, steps, second, &p, &s), 0);
    for (int g = 0; g < 2; g++) {
        json_t *grp = rk_group(s, g);
        assert_string_equal(rk_str(grp, "status"), "ended");
        assert_int_equal(rk_int(grp, "restarts"), 0);
        assert_int_equal(rk_int(grp, "committed_steps"), 0);
    }
    assert_int_equal(rk_count(p.text, "has nothing left to train"), 2);
    /* Every rank of each group heard it (the round's error reaches the
     * group's other rank through its store). */
    assert_int_equal(rk_count(p.text, "ended at step 0 ("), 4);
    char want[64];
    snprintf(want, sizeof(want), "the job finished at step %s", steps);
    assert_true(rk_count(p.text, want) >= 4);
    json_decref(s);
    rk_free(&p);
    ftc_lighthouse_destroy(lh);
}

static void ddp(void **state)
{
    (void)state;
    second_run_ends(rk_trainer(), "again_ddp", "30");
}

/* train_diloco, next to train_ddp. */
static void diloco(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s", rk_trainer());
    char *at = strstr(path, "train_ddp");
    assert_non_null(at);
    snprintf(at, sizeof(path) - (size_t)(at - path), "train_diloco");
    second_run_ends(path, "again_diloco", "4");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp),
        cmocka_unit_test(diloco),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
