/* A job that finished, run again under its name on a lighthouse that stays
 * up: the second `ftc run`'s groups end at once (status "ended": the job
 * finished without them) instead of training the job again alone, and the
 * run exits 0; a run that goes on from the last step is another matter
 * (ft_manager_finish_test). The real ftc and train_ddp; argv[1] is the ftc
 * binary, argv[2] the train_ddp binary. */
#include <stdio.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

/* ftc run --lighthouse ADDR --job again, 2 groups of 2 ranks, 30 steps;
 * returns its exit code and loads its summary into *summary. */
static int run(const char *addr, const char *dir, const char *name, rk_run *p,
               json_t **summary)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.json", dir, name);
    char *args[] = {T("--lighthouse"),   T(addr), T("--job"),   T("again"),
                    T("--replicas"),     T("2"),  T("--ranks"), T("2"),
                    T("--summary-json"), path,    T("--"),      T(rk_trainer()),
                    T("--steps"),        T("30"), NULL};
    rk_start(p, args, NULL);
    int rc = rk_wait(p, 120000);
    *summary = rk_summary(path);
    return rc;
}

static void a_second_run_of_a_finished_job_ends(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    ftc_lighthouse *lh;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    char addr[128], dir[4096];
    TK_OK(ftc_lighthouse_address(lh, addr, sizeof(addr)));
    rk_dir("finished", dir, sizeof(dir));

    rk_run p;
    json_t *s;
    assert_int_equal(run(addr, dir, "first", &p, &s), 0);
    for (int g = 0; g < 2; g++) {
        assert_string_equal(rk_str(rk_group(s, g), "status"), "finished");
        assert_int_equal(rk_int(rk_group(s, g), "last_step"), 30);
    }
    json_decref(s);
    rk_free(&p);

    assert_int_equal(run(addr, dir, "second", &p, &s), 0);
    for (int g = 0; g < 2; g++) {
        json_t *grp = rk_group(s, g);
        assert_string_equal(rk_str(grp, "status"), "ended");
        assert_int_equal(rk_int(grp, "restarts"), 0);
        assert_int_equal(rk_int(grp, "committed_steps"), 0);
    }
    assert_int_equal(rk_count(p.text, "has nothing left to train"), 2);
    /* Every rank of each group heard it (the round's error reaches the
     * group's other rank through its store). */
    assert_int_equal(rk_count(p.text, "ended at step 0 (quorum)"), 4);
    json_decref(s);
    rk_free(&p);
    ftc_lighthouse_destroy(lh);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_second_run_of_a_finished_job_ends),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
