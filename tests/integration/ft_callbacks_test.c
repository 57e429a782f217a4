/* State registered through save/load callbacks, across real processes on
 * loopback: a replica of callbacks heals one of borrowed memory and the
 * other way round (bit-identical), the callbacks run on the threads and as
 * often as documented, a failed load makes its step vote no and the next
 * round heals again, and a failed save sends the healer to another source
 * or makes its step fail at once (no one waits for a deadline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_kit.h"

/* The lines of a rank's log that start with prefix and contain text. */
static int count_with(const ftk_job *j, int g, int r, const char *prefix,
                      const char *text)
{
    char path[512], line[1024];
    ftk_log_path(j, g, 0, r, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        n += strncmp(line, prefix, strlen(prefix)) == 0 &&
             strstr(line, text) != NULL;
    }
    fclose(f);
    return n;
}

/* Every "save" line of group g's rank 0 ran off the training thread, all
 * on one thread (the quorum thread); every "load" line on it. */
static void check_threads(const ftk_job *j, int g)
{
    char path[512], line[1024];
    ftk_log_path(j, g, 0, 0, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long save_tid = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[64];
        int on_main;
        long t;
        if (sscanf(line, "save %63s %d %ld", name, &on_main, &t) == 3) {
            assert_int_equal(on_main, 0);
            assert_true(save_tid < 0 || save_tid == t);
            save_tid = t;
        } else if (sscanf(line, "load %63s %d %ld", name, &on_main, &t) == 3) {
            assert_int_equal(on_main, 1);
        }
    }
    fclose(f);
}

/* Group 0 registers borrowed memory, group 1 callbacks. Group 1 fails its
 * commit of step 5 and heals from group 0 (its loads apply the state);
 * group 0 fails step 10 and heals from group 1 (its saves serve it).
 * Each heal moves both buffers: two loads on the healer, two saves on
 * the source, per heal. */
static void callbacks_and_borrowed_heal_each_other(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 2, 1, 16, 2);
    char *borrowed[] = {"FTK_FAIL_AFTER=10", NULL};
    char *cb[] = {"FTK_STATE=cb", "FTK_FAIL_AFTER=5", NULL};
    ftk_spawn(&j, 0, borrowed);
    ftk_spawn(&j, 1, cb);
    ftk_finish(&j, 120000);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 6 "), 1);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "heal 11 "), 1);
    int heals0 = ftk_count(&j, 0, 0, 0, "heal ");
    int heals1 = ftk_count(&j, 1, 0, 0, "heal ");
    /* Group 1 served every heal of group 0, and only those. */
    assert_int_equal(ftk_count(&j, 1, 0, 0, "save x "), heals0);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "save momentum "), heals0);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "load x "), heals1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "load momentum "), heals1);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "save "), 0);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "load "), 0);
    check_threads(&j, 1);
    ftk_stop(&j);
}

/* The first load of group 1's heal from step 5 fails: that step votes no
 * (its step stays 5) and the next round heals it to step 7. */
static void failed_load_heals_next_round(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 2, 1, 12, 2);
    char *cb[] = {"FTK_STATE=cb", "FTK_FAIL_AFTER=5", "FTK_LOAD_FAIL_AT=5",
                  NULL};
    ftk_spawn(&j, 0, NULL);
    ftk_spawn(&j, 1, cb);
    ftk_finish(&j, 120000);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "loadfail 5"), 1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "fail 5 5 "), 2);
    assert_int_equal(
        count_with(&j, 1, 0, "fail 5 5 ", "load callback of buffer x"), 1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 6 "), 0);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 7 "), 1);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "fail "), 0);
    check_threads(&j, 1);
    ftk_stop(&j);
}

/* Group 0, the only source, fails to save the state of step 11 that
 * group 1 needs: group 1's heal fails at once (the source answers that it
 * cannot serve it, rather than letting it wait out its quorum timeout),
 * its step votes no, and it heals to step 12 next round. Group 0's own
 * steps all commit. */
static void failed_save_fails_the_healer_at_once(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 2, 1, 16, 2);
    char *cb[] = {"FTK_STATE=cb", "FTK_SAVE_FAIL_AT=11", NULL};
    char *healer[] = {"FTK_FAIL_AFTER=10", NULL};
    ftk_spawn(&j, 0, cb);
    ftk_spawn(&j, 1, healer);
    ftk_finish(&j, 120000);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "savefail 11"), 1);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "fail "), 0);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "fail 10 10 "), 2);
    assert_int_equal(
        count_with(&j, 1, 0, "fail 10 10 ", "cannot serve step 11"), 1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 11 "), 0);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 12 "), 1);
    check_threads(&j, 0);
    ftk_stop(&j);
}

/* With a second source (group 2, borrowed x and momentum through
 * callbacks), group 0's failed save only removes one source: group 1
 * heals to step 11 from group 2 in that very round. */
static void failed_save_heals_from_another_source(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 1, 16, 3);
    char *cb[] = {"FTK_STATE=cb", "FTK_SAVE_FAIL_AT=11", NULL};
    char *healer[] = {"FTK_FAIL_AFTER=10", NULL};
    char *mixed[] = {"FTK_STATE=mixed", NULL};
    ftk_spawn(&j, 0, cb);
    ftk_spawn(&j, 1, healer);
    ftk_spawn(&j, 2, mixed);
    ftk_finish(&j, 120000);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "savefail 11"), 1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "fail 10 10 "), 1);
    assert_int_equal(ftk_count(&j, 1, 0, 0, "heal 11 "), 1);
    assert_int_equal(ftk_count(&j, 0, 0, 0, "fail "), 0);
    assert_int_equal(ftk_count(&j, 2, 0, 0, "fail "), 0);
    /* Group 2 saves only its momentum. */
    assert_int_equal(ftk_count(&j, 2, 0, 0, "save x "), 0);
    assert_int_equal(ftk_count(&j, 2, 0, 0, "save momentum "),
                     ftk_count(&j, 2, 0, 0, "save "));
    assert_true(ftk_count(&j, 2, 0, 0, "save momentum ") >= 1);
    check_threads(&j, 2);
    ftk_stop(&j);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {FTK_ROLES};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(callbacks_and_borrowed_heal_each_other),
        cmocka_unit_test(failed_load_heals_next_round),
        cmocka_unit_test(failed_save_fails_the_healer_at_once),
        cmocka_unit_test(failed_save_heals_from_another_source),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
