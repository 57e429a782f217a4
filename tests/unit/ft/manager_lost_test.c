/* A member that dies between the quorum and the process group: the
 * quorum names a replica (a ghost: a bare lighthouse client) that joins
 * and then never heartbeats nor builds the group. The lighthouse reports
 * it lost after its heartbeat timeout, and the manager's watch cancels
 * the build at once; without that the live replica waits for the ghost's
 * address until its connect timeout (10 minutes here, so the round's
 * 60 s wait times out instead and the test fails). The next round goes on
 * without the ghost. And the other side: a replica group the lighthouse
 * reported lost does not commit the step even when its own collectives
 * completed. Real manager, embedded lighthouse and store. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sock.h"
#include "ft/manager/manager.h"
#include "lighthouse_kit.h"
#include "manager_kit.h"
#include "testkit.h"

static void one_step(ftc_manager *m)
{
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    int commit = 0;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
}

typedef struct ghost {
    ftc_lighthouse_client *c;
    const char *id;
    lt_join j;
    pthread_t beat;
} ghost;

/* Heartbeats every 100 ms until the ghost's join is answered, so that it
 * is alive when the quorum forms however late the manager joins; it
 * dies (no more heartbeats) with the answer. */
static void *beat_main(void *arg)
{
    ghost *g = arg;
    while (!atomic_load(&g->j.done)) {
        ftc_lighthouse_client_heartbeat(g->c, g->id, tk_ms(1000), NULL);
        tk_pause_ms(100);
    }
    return NULL;
}

/* A round of m with the ghost `id` (replica rank 0: it sorts first, so
 * the group meets on its store: store, or the env's when NULL): the
 * round's error names the ghost's loss, and the step is not committed. */
static void round_with_a_ghost(mf_env *e, ftc_manager *m, const char *id,
                               const char *store)
{
    static ghost g;
    g.c = lt_client(e->lh_addr);
    g.id = id;
    ftc_lighthouse_member member = lt_member(id, 0);
    snprintf(member.store_address, sizeof(member.store_address), "%s",
             store != NULL ? store : e->store_addr);
    lt_join_start(&g.j, g.c, &member, tk_ms(20000));
    assert_int_equal(pthread_create(&g.beat, NULL, beat_main, &g), 0);
    TK_OK(ftc_manager_start_quorum(m, NULL));
    /* The round ends; the build's failure is the step's latched error. */
    TK_OK(ftc_manager_wait_quorum(m, tk_ms(60000)));
    char why[512] = "";
    int rc = ftc_manager_errored(m, why, sizeof(why));
    int commit = 1;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 0);
    TK_OK(lt_join_wait(&g.j));
    pthread_join(g.beat, NULL);
    assert_int_equal(g.j.result.quorum.n_members, 2);
    ftc_lighthouse_join_result_fini(&g.j.result);
    if (rc != FTC_EPEER || strstr(why, id) == NULL ||
        strstr(why, "lost") == NULL) {
        fail_msg("expected %s's loss, got %d: %s", id, rc, why);
    }
    ftc_lighthouse_client_destroy(g.c);
}

/* Manager id of a job that needs two replicas, with a connect timeout
 * (10 minutes) that only a cancel ends early. */
static ftc_manager *patient_manager(mf_env *e, const char *id)
{
    ftc_manager_opts o = mf_opts(e, id);
    o.connect_timeout_ms = 600000;
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    TK_OK(ftc_lighthouse_configure_job(e->lh, "default:min_replicas=2"));
    return m;
}

static void a_member_lost_while_the_group_is_built(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = patient_manager(e, "live");
    /* The manager's first quorum (its watch starts with the answer), as
     * for a replica group that was just restarted; then a later one. */
    round_with_a_ghost(e, m, "ghost_a", NULL);
    round_with_a_ghost(e, m, "ghost_b", NULL);
    assert_int_equal(ftc_manager_current_step(m), 0);

    /* The job goes on without the ghosts. */
    TK_OK(ftc_lighthouse_configure_job(e->lh, "default:min_replicas=1"));
    one_step(m);
    assert_int_equal(ftc_manager_current_step(m), 1);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* The lighthouse at hook_addr and the ghost whose loss the hook waits
 * for. */
static const char *hook_addr, *hook_ghost;

static bool lost_in_history(void)
{
    size_t n = strlen(hook_ghost);
    char *text = NULL;
    bool lost = false;
    if (lt_http(hook_addr, "GET", "/v1/jobs/default/status", NULL, NULL,
                &text) == 200) {
        json_t *j = json_loads(text, 0, NULL);
        json_t *fs = json_object_get(json_object_get(j, "history"), "failures");
        for (size_t i = 0; i < json_array_size(fs) && !lost; i++) {
            const char *id = json_string_value(
                json_object_get(json_array_get(fs, i), "replica_id"));
            /* The id, or a manager's id from its base (base:suffix). */
            lost = id != NULL && strncmp(id, hook_ghost, n) == 0 &&
                   (id[n] == '\0' || id[n] == ':');
        }
        json_decref(j);
    }
    free(text);
    return lost;
}

/* The watch thread's first call waits until the lighthouse has reported
 * the ghost lost (at most 20 s; the test fails on its own otherwise). */
static void hold_the_watch(void)
{
    for (int i = 0; i < 2000 && !lost_in_history(); i++) {
        tk_pause_ms(10);
    }
}

/* The ghost is lost before the manager's watch makes its first call (held
 * back by a test hook): the watch starts from where the job's events stood
 * before the first round, so it still sees the loss and cancels the build
 * (without that it would start after the loss and miss it). */
static void a_member_lost_before_the_watch_starts(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = patient_manager(e, "late");
    hook_addr = e->lh_addr;
    hook_ghost = "ghost_c";
    atomic_store(&ftc__manager_testing_before_watch, hold_the_watch);
    round_with_a_ghost(e, m, "ghost_c", NULL);
    atomic_store(&ftc__manager_testing_before_watch, NULL);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* The ghost is the primary and its store is gone (a port nobody listens
 * on): connecting to it is retried in half-second attempts, each after a
 * look at the lost members, so the round ends once the ghost is lost
 * rather than at the connect timeout. */
static void a_primary_lost_with_its_store(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = patient_manager(e, "live");
    int fd = -1, port = 0;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 1, &fd, &port));
    close(fd); /* refused from now on */
    char dead[32];
    snprintf(dead, sizeof(dead), "127.0.0.1:%d", port);
    round_with_a_ghost(e, m, "ghost_d", dead);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

static atomic_bool watch_released;

/* The watch thread's first call waits until the test releases it (at
 * most 20 s, scaled). */
static void hold_the_watch_until_released(void)
{
    int64_t end = tk_now_ms() + tk_ms(20000);
    while (!atomic_load(&watch_released) && tk_now_ms() < end) {
        tk_pause_ms(10);
    }
}

/* A replica group whose heartbeats stopped (cut off from the lighthouse,
 * say) is reported lost, and the others abort the step on that report;
 * its own watch has not told it yet (held back by the test hook), and
 * nothing failed in its step. It must not commit: the lighthouse refuses
 * the leader's commit, since the others will commit that step again in a
 * quorum without it. Without the grant it commits (commit == 1). */
static void a_replica_reported_lost_does_not_commit(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "cut");
    o.heartbeat_interval_ms = 600000; /* one heartbeat, then silence */
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    hook_addr = e->lh_addr;
    hook_ghost = "cut";
    atomic_store(&watch_released, false);
    atomic_store(&ftc__manager_testing_before_watch,
                 hold_the_watch_until_released);
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    TK_WAIT_UNTIL(lost_in_history(), 20000);
    int commit = 1;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 0);
    char why[512];
    assert_int_equal(ftc_manager_errored(m, why, sizeof(why)), FTC_ESTALE);
    assert_non_null(strstr(why, "did not grant step 0's commit"));
    assert_non_null(strstr(why, "was reported lost in quorum"));
    assert_int_equal(ftc_manager_current_step(m), 0);
    assert_int_equal(lt_status_int(e->lh_addr, "default", "committed_step"), 0);
    atomic_store(&watch_released, true);
    atomic_store(&ftc__manager_testing_before_watch, NULL);

    /* Heartbeating again, it commits the step in the next quorum. */
    ftc_manager_destroy(m);
    o.heartbeat_interval_ms = 100;
    TK_OK(ftc_manager_create(&o, &m));
    one_step(m);
    assert_int_equal(lt_status_int(e->lh_addr, "default", "committed_step"), 1);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

static int64_t pushed_aborts(ftc_manager *m)
{
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(m, &st));
    return st.pushed_aborts;
}

/* Two replica groups do a step's allreduce together; then group b's
 * heartbeats stop and the lighthouse reports it lost, and a's watch
 * aborts their process group. a's collectives had completed: a commits
 * the step (before, the abort failed it, and a then waited below the step
 * b may have committed); b, reported lost, is refused. */
static void a_loss_after_the_collectives_spares_the_step(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts oa = mf_opts(e, "a"), ob = mf_opts(e, "b");
    ob.heartbeat_interval_ms = 600000; /* one heartbeat, then silence */
    ob.store_prefix = "b";
    oa.store_prefix = "a";
    ftc_manager *a, *b;
    TK_OK(ftc_manager_create(&oa, &a));
    TK_OK(ftc_manager_create(&ob, &b));
    TK_OK(ftc_lighthouse_configure_job(e->lh, "default:min_replicas=2"));
    TK_OK(ftc_manager_start_quorum(a, NULL));
    TK_OK(ftc_manager_start_quorum(b, NULL));
    TK_OK(ftc_manager_wait_quorum(a, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_wait_quorum(b, FTC_TIMEOUT_DEFAULT));
    float xa[4] = {1, 2, 3, 4}, xb[4] = {3, 2, 1, 0};
    ftc_tensor ta = ftc_tensor_cpu(xa, 4, FTC_DTYPE_F32);
    ftc_tensor tb = ftc_tensor_cpu(xb, 4, FTC_DTYPE_F32);
    ftc_manager_work *wa, *wb;
    TK_OK(ftc_manager_allreduce(a, &ta, FTC_OP_AVG, &wa, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_allreduce(b, &tb, FTC_OP_AVG, &wb, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_work_wait(wa, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_work_wait(wb, FTC_TIMEOUT_DEFAULT));
    ftc_manager_work_release(wa);
    ftc_manager_work_release(wb);
    for (int i = 0; i < 4; i++) {
        assert_true(xa[i] == 2.0f && xb[i] == 2.0f);
    }
    hook_addr = e->lh_addr;
    hook_ghost = "b";
    TK_WAIT_UNTIL(lost_in_history(), 20000);
    TK_WAIT_UNTIL(pushed_aborts(a) == 1, 20000);
    int commit = 0;
    TK_OK(ftc_manager_should_commit(a, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
    commit = 1;
    TK_OK(ftc_manager_should_commit(b, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 0);
    assert_int_equal(lt_status_int(e->lh_addr, "default", "committed_step"), 1);
    ftc_manager_destroy(b);
    ftc_manager_destroy(a);
    mf_env_free(e);
}

/* Writes rank 1's record `what` of round k into the group's store. */
static void put_rank1(ftc_store_client *v, int64_t k, const char *what,
                      const char *text)
{
    char key[64];
    snprintf(key, sizeof(key), "ftc/r/%lld/%s/1", (long long)k, what);
    TK_OK(ftc_store_client_set(v, key, text, strlen(text), tk_ms(5000)));
}

/* The leader asks for the grant only once every rank voted yes, so that
 * a grant is a commit (a grant raises the job's committed step, which
 * holds back the quorums of replicas below it): with rank 1 (its records
 * written by hand) voting no, the lighthouse's step stays; voting yes, it
 * rises with the commit. */
static void the_grant_waits_for_every_rank(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_store_client *c, *v;
    ftc_manager *m = mf_pair_leader(e, &c, &v);
    for (int k = 1; k <= 2; k++) {
        char text[128];
        snprintf(text, sizeof(text),
                 "{\"step\":%d,\"commit_failures\":%d,\"shrink_only\":"
                 "false,\"heal\":\"127.0.0.1:1\"}",
                 k - 1 - (k == 2), k == 2);
        put_rank1(v, k, "a", text);
        TK_OK(ftc_manager_start_quorum(m, NULL));
        TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
        snprintf(text, sizeof(text), "{\"step\":0,\"at\":0,\"ok\":%s}",
                 k == 1 ? "false" : "true");
        put_rank1(v, k, "v", text);
        int commit = -1;
        TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
        assert_int_equal(commit, k == 2);
        assert_int_equal(lt_status_int(e->lh_addr, "default", "committed_step"),
                         k - 1);
    }
    ftc_store_client_close(v);
    ftc_store_client_close(c);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_member_lost_while_the_group_is_built),
        cmocka_unit_test(a_member_lost_before_the_watch_starts),
        cmocka_unit_test(a_primary_lost_with_its_store),
        cmocka_unit_test(a_replica_reported_lost_does_not_commit),
        cmocka_unit_test(the_grant_waits_for_every_rank),
        cmocka_unit_test(a_loss_after_the_collectives_spares_the_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
