/* A job that finished: a group trains to its last step and says so
 * (ftc_manager_finish); a group that comes later below that step is
 * refused with the reason instead of training the job again alone, and
 * one restored at the last step goes on (training longer). Real managers
 * on an embedded lighthouse and store. */
#include <stdlib.h>
#include <string.h>

#include "manager_kit.h"
#include "testkit.h"

#define N 64
#define STEPS 3

typedef struct group {
    ftc_manager *m;
    float w[N];
} group;

static void create(mf_env *job, group *g, const char *id)
{
    ftc_manager_opts o = mf_opts(job, id);
    TK_OK(ftc_manager_create(&o, &g->m));
    int64_t shape[] = {N};
    TK_OK(ftc_manager_register(g->m, "w", FTC_DTYPE_F32, shape, 1, g->w));
}

/* One step: the quorum's result, then the vote. */
static int step(group *g)
{
    int commit = 0;
    int rc = ftc_manager_start_quorum(g->m, NULL);
    rc = rc != 0 ? rc : ftc_manager_wait_quorum(g->m, FTC_TIMEOUT_DEFAULT);
    rc = rc != 0
             ? rc
             : ftc_manager_should_commit(g->m, &commit, FTC_TIMEOUT_DEFAULT);
    if (rc == 0 && !commit) {
        rc = FTC_EPEER;
    }
    for (int i = 0; rc == 0 && i < N; i++) {
        g->w[i] += 1.0f;
    }
    return rc;
}

static void a_finished_job_refuses_latecomers(void **state)
{
    (void)state;
    mf_env *job = mf_env_new();
    group *g = calloc(3, sizeof(*g));
    create(job, &g[0], "first");
    for (int s = 0; s < STEPS; s++) {
        TK_OK(step(&g[0]));
    }
    assert_int_equal(ftc_manager_current_step(g[0].m), STEPS);
    TK_EXPECT(ftc_manager_finish(NULL), FTC_EMISUSE);
    TK_OK(ftc_manager_finish(g[0].m));
    ftc_manager_destroy(g[0].m);

    /* Later, a group at step 0: nothing is left for it to train. */
    create(job, &g[1], "late");
    TK_OK(ftc_manager_start_quorum(g[1].m, NULL));
    TK_EXPECT(ftc_manager_wait_quorum(g[1].m, FTC_TIMEOUT_DEFAULT),
              FTC_EFINISHED);
    assert_non_null(strstr(ftc_last_error(), "the job finished at step 3"));
    assert_int_equal(ftc_manager_current_step(g[1].m), 0);
    ftc_manager_destroy(g[1].m);

    /* One restored from the last step's checkpoint trains on. */
    create(job, &g[2], "resumed");
    TK_OK(ftc_manager_set_step(g[2].m, STEPS, STEPS));
    TK_OK(step(&g[2]));
    assert_int_equal(ftc_manager_current_step(g[2].m), STEPS + 1);
    ftc_manager_destroy(g[2].m);
    free(g);
    mf_env_free(job);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_finished_job_refuses_latecomers),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
