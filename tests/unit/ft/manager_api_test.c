/* The manager's API in one process (a lighthouse and a store embedded, one
 * replica group of one rank): option checks, the call order each call
 * enforces, one step end to end, latched errors, max_retries, the
 * environment of `ftc run`, and the algo comm's table. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/auth.h"
#include "ft/manager/manager.h"
#include "ftc/algo.h"
#include "manager_kit.h"
#include "testkit.h"

static void bad_options(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = (ftc_manager *)1;
    ftc_manager_opts o = mf_opts(e, "r");
    o.lighthouse = NULL;
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_EINVAL);
    assert_null(m);
    assert_non_null(strstr(ftc_last_error(), "lighthouse is required"));
    o = mf_opts(e, "has:colon");
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "':'"));
    o = mf_opts(e, "r");
    o.group_size = 2;
    o.group_rank = 2;
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_EINVAL);
    o = mf_opts(e, "r");
    o.heal_sources = 17;
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_EINVAL);
    o = mf_opts(e, "r");
    o.world_size_mode = 7;
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_EINVAL);
    o = mf_opts(e, "r");
    o.store_addr = "127.0.0.1:1";
    o.connect_timeout_ms = 200;
    TK_EXPECT(ftc_manager_create(&o, &m), FTC_ETIMEDOUT);
    TK_EXPECT(ftc_manager_create(&o, NULL), FTC_EMISUSE);
    ftc_manager_destroy(NULL);
    mf_env_free(e);
}

/* Callbacks of a state never served nor healed (one replica alone). */
static int save_none(void *user, void *dst, size_t bytes)
{
    (void)user;
    (void)dst;
    (void)bytes;
    fail_msg("save called");
    return -1;
}

static int load_none(void *user, const void *src, size_t bytes)
{
    (void)user;
    (void)src;
    (void)bytes;
    fail_msg("load called");
    return -1;
}

static void call_order(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "solo");
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    int commit = 7;
    TK_EXPECT(ftc_manager_wait_quorum(m, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_manager_should_commit(m, &commit, 1000), FTC_EMISUSE);
    assert_int_equal(commit, 0);
    float x[4] = {1, 2, 3, 4};
    ftc_tensor t = ftc_tensor_cpu(x, 4, FTC_DTYPE_F32);
    ftc_manager_work *w = (ftc_manager_work *)1;
    TK_EXPECT(ftc_manager_allreduce(m, &t, FTC_OP_AVG, &w, 1000), FTC_EMISUSE);
    int64_t shape[1] = {4};
    TK_OK(ftc_manager_register(m, "x", FTC_DTYPE_F32, shape, 1, x));
    TK_EXPECT(ftc_manager_register(m, "x", FTC_DTYPE_F32, shape, 1, x),
              FTC_EEXIST);
    TK_EXPECT(ftc_manager_register(m, "y", 99, shape, 1, x), FTC_EINVAL);
    ftc_manager_state_cb cb = {save_none, load_none, NULL};
    ftc_manager_state_cb half = {save_none, NULL, NULL};
    TK_EXPECT(ftc_manager_register_cb(m, "c", FTC_DTYPE_F32, shape, 1, NULL),
              FTC_EINVAL);
    TK_EXPECT(ftc_manager_register_cb(m, "c", FTC_DTYPE_F32, shape, 1, &half),
              FTC_EINVAL);
    TK_EXPECT(ftc_manager_register_cb(m, "x", FTC_DTYPE_F32, shape, 1, &cb),
              FTC_EEXIST);
    TK_EXPECT(ftc_manager_register_cb(NULL, "c", FTC_DTYPE_F32, shape, 1, &cb),
              FTC_EMISUSE);
    TK_OK(ftc_manager_register_cb(m, "c", FTC_DTYPE_F32, shape, 1, &cb));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_EXPECT(ftc_manager_start_quorum(m, NULL), FTC_EMISUSE);
    TK_EXPECT(ftc_manager_register(m, "z", FTC_DTYPE_F32, shape, 1, x),
              FTC_EMISUSE);
    TK_EXPECT(ftc_manager_register_cb(m, "z", FTC_DTYPE_F32, shape, 1, &cb),
              FTC_EMISUSE);
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_manager_wait_quorum(m, 0)); /* the same result again */
    /* The next round waits for this one's vote. */
    TK_EXPECT(ftc_manager_start_quorum(m, NULL), FTC_EMISUSE);
    int32_t ints[2] = {1, 2};
    ftc_tensor ti = ftc_tensor_cpu(ints, 2, FTC_DTYPE_I32);
    TK_EXPECT(ftc_manager_allreduce(m, &ti, FTC_OP_AVG, &w, 1000), FTC_EINVAL);
    TK_EXPECT(ftc_manager_allreduce(m, &t, FTC_OP_MAX, &w, 1000), FTC_EINVAL);
    TK_OK(ftc_manager_allreduce(m, &ti, FTC_OP_SUM, &w, 1000));
    TK_OK(ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT));
    TK_EXPECT(ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT), FTC_EMISUSE);
    ftc_manager_work_release(w);
    assert_int_equal(ints[0], 1);
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
    TK_EXPECT(ftc_manager_should_commit(m, &commit, 1000), FTC_EMISUSE);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* One replica, several steps: averages over one participant are the
 * values themselves; step and batches advance on each commit; a reported
 * error makes the step vote no and is cleared by the next round. */
static void steps_and_errors(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "solo");
    o.max_retries = 2;
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    double x[3] = {1.5, -2.0, 8.0};
    for (int s = 0; s < 3; s++) {
        TK_OK(ftc_manager_start_quorum(m, NULL));
        ftc_tensor t = ftc_tensor_cpu(x, 3, FTC_DTYPE_F64);
        ftc_manager_work *w;
        TK_OK(
            ftc_manager_allreduce(m, &t, FTC_OP_AVG, &w, FTC_TIMEOUT_DEFAULT));
        /* Released unwaited: should_commit waits for it. */
        ftc_manager_work_release(w);
        int commit;
        TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
        assert_int_equal(commit, 1);
    }
    assert_true(x[0] == 1.5 && x[1] == -2.0 && x[2] == 8.0);
    assert_int_equal(ftc_manager_current_step(m), 3);
    assert_int_equal(ftc_manager_batches_committed(m), 3);
    assert_int_equal(ftc_manager_num_participants(m), 1);
    assert_true(ftc_manager_is_participating(m));
    assert_false(ftc_manager_is_healing(m));
    assert_int_equal(ftc_manager_replica_rank(m), 0);
    assert_int_equal(ftc_manager_replica_world_size(m), 1);
    assert_true(ftc_manager_quorum_id(m) > 0);
    char id[64], addr[64];
    TK_OK(ftc_manager_replica_id(m, id, sizeof(id)));
    assert_int_equal(strncmp(id, "solo:", 5), 0);
    assert_int_equal(strlen(id), 13);
    TK_EXPECT(ftc_manager_replica_id(m, id, 4), FTC_EMSGSIZE);
    TK_OK(ftc_manager_heal_address(m, addr, sizeof(addr)));
    assert_int_equal(strncmp(addr, "127.0.0.1:", 10), 0);
    /* Errors: two failures are tolerated (max_retries 2), the third is
     * returned. */
    char msg[128];
    for (int k = 1; k <= 3; k++) {
        TK_OK(ftc_manager_start_quorum(m, NULL));
        TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
        assert_int_equal(ftc_manager_errored(m, msg, sizeof(msg)), 0);
        ftc_manager_report_error(m, FTC_ETIMEDOUT, "bad batch");
        ftc_manager_report_error(m, FTC_EPEER, "second: not kept");
        assert_int_equal(ftc_manager_errored(m, msg, sizeof(msg)),
                         FTC_ETIMEDOUT);
        assert_string_equal(msg, "bad batch");
        int commit = 1;
        int rc = ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT);
        assert_int_equal(commit, 0);
        assert_int_equal(rc, k <= 2 ? 0 : FTC_EPEER);
        assert_int_equal(ftc_manager_current_step(m), 3);
    }
    assert_non_null(strstr(ftc_last_error(), "max_retries 2"));
    ftc_manager_stats st;
    TK_OK(ftc_manager_stats_get(m, &st));
    assert_int_equal(st.commits, 3);
    assert_int_equal(st.failed_commits, 3);
    assert_int_equal(st.quorums, 6);
    assert_true(st.reconfigurations >= 1);
    /* Failed commits change the quorum id (torchft: commit_failures). */
    int64_t q = ftc_manager_quorum_id(m);
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    assert_true(ftc_manager_quorum_id(m) != q);
    int commit;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* The one manager of job "lonely", which needs two replicas: no quorum
 * forms until the job's min_replicas is lowered. The lighthouse answers a
 * join a tenth of its time (at least 50 ms) before the caller's deadline,
 * with the reason; 4 s leaves a loaded machine 400 ms for that answer to
 * arrive (200 ms was missed once under a load average of 13). */
static ftc_manager *lonely_manager(mf_env *e)
{
    TK_OK(ftc_lighthouse_configure_job(e->lh, "lonely:min_replicas=2"));
    ftc_manager_opts o = mf_opts(e, "solo");
    o.job = "lonely";
    o.quorum_timeout_ms = tk_ms(4000);
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    return m;
}

/* A quorum never forms (min_replicas 2, one replica): every rank gets
 * FTC_ETIMEDOUT with the lighthouse's reason, and may start again. */
static void quorum_timeout(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = lonely_manager(e);
    for (int k = 0; k < 2; k++) {
        TK_OK(ftc_manager_start_quorum(m, NULL));
        TK_EXPECT(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT),
                  FTC_ETIMEDOUT);
        assert_non_null(strstr(ftc_last_error(), "need min_replicas 2"));
        int commit;
        TK_EXPECT(ftc_manager_should_commit(m, &commit, 100), FTC_EMISUSE);
    }
    /* An allreduce of a failed round fails without a collective; released
     * unwaited, its error stays with that round: once the job can form a
     * quorum, the next step commits. */
    float x[2] = {1, 2};
    ftc_tensor t = ftc_tensor_cpu(x, 2, FTC_DTYPE_F32);
    ftc_manager_work *w;
    TK_OK(ftc_manager_allreduce(m, &t, FTC_OP_SUM, &w, 1000));
    ftc_manager_work_release(w);
    TK_OK(ftc_lighthouse_configure_job(e->lh, "lonely:min_replicas=1"));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    int commit;
    TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* A group of one rank is its own leader and voter: its rounds commit
 * without writing the arrival, answer and vote keys a larger group's
 * ranks exchange (docs/protocol.md, "Manager group keys"). */
static void lone_rank_skips_the_group_store(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "lone");
    o.store_prefix = "lone/0";
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    TK_OK(ftc_lighthouse_configure_job(e->lh, "default:min_replicas=1"));
    for (int k = 0; k < 3; k++) {
        TK_OK(ftc_manager_start_quorum(m, NULL));
        TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
        int commit = 0;
        TK_OK(ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT));
        assert_int_equal(commit, 1);
    }
    assert_int_equal(ftc_manager_current_step(m), 3);
    ftc_store_client *c, *v;
    TK_OK(ftc_store_client_connect(e->store_addr, NULL, &c));
    TK_OK(ftc_store_client_prefix(c, "lone/0", &v));
    const char *keys[] = {"ftc/r/3/a/0", "ftc/r/3/q", "ftc/r/3/v/0"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int ready = 1;
        TK_OK(ftc_store_client_check(v, &keys[i], 1, &ready, 1000));
        assert_int_equal(ready, 0);
    }
    ftc_store_client_close(v);
    ftc_store_client_close(c);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* The leader of a group of two finds its other rank at another step (the
 * test writes that rank's arrival record itself, docs/protocol.md): the
 * round fails with FTC_EPROTO, and the other rank reads the same failure
 * from the group store. */
static void group_step_mismatch(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_store_client *c, *v;
    ftc_manager *m = mf_pair_leader(e, &c, &v);
    const char *arrival = "{\"step\":5,\"commit_failures\":0,"
                          "\"shrink_only\":false,\"heal\":\"127.0.0.1:1\"}";
    TK_OK(
        ftc_store_client_set(v, "ftc/r/1/a/1", arrival, strlen(arrival), 1000));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_EXPECT(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "rank 0 at 0, rank 1 at 5"));
    void *answer;
    size_t len;
    TK_OK(ftc_store_client_get(v, "ftc/r/1/q", &answer, &len, 1000));
    assert_non_null(strstr((char *)answer, "\"ok\":false"));
    assert_non_null(strstr((char *)answer, "rank 1 at 5"));
    ftc_free(answer);
    ftc_store_client_close(v);
    ftc_store_client_close(c);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* With a token the group records are sealed: an arrival planted in the
 * group store without the seal (as a compromised store could) fails the
 * round with FTC_EAUTH naming the rank and the key, and the next round,
 * whose records are sealed, works. */
static void forged_records_are_refused(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_store_server_destroy(e->store);
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    so.token = "mgr-secret";
    TK_OK(ftc_store_server_create(&so, &e->store));
    snprintf(e->store_addr, sizeof(e->store_addr), "127.0.0.1:%d",
             ftc_store_server_port(e->store));
    ftc_manager_opts o = mf_opts(e, "sealed");
    o.group_size = 2;
    o.store_prefix = "sealed/0";
    o.token = "mgr-secret";
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    ftc_store_client_opts co;
    ftc_store_client_opts_init(&co);
    co.token = "mgr-secret";
    ftc_store_client *c, *v;
    TK_OK(ftc_store_client_connect(e->store_addr, &co, &c));
    TK_OK(ftc_store_client_prefix(c, "sealed/0", &v));
    const char *arrival = "{\"step\":0,\"commit_failures\":0,"
                          "\"shrink_only\":false,\"heal\":\"127.0.0.1:1\"}";
    TK_OK(
        ftc_store_client_set(v, "ftc/r/1/a/1", arrival, strlen(arrival), 1000));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_EXPECT(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT), FTC_EAUTH);
    assert_non_null(strstr(ftc_last_error(), "group rank 1's record"));
    assert_non_null(strstr(ftc_last_error(), "ftc/r/1/a/1"));
    /* Round 2: rank 1's arrival sealed as a rank with the token does. */
    char sealed[512];
    size_t n = strlen(arrival);
    memcpy(sealed, arrival, n);
    uint8_t key[FTC__AUTH_KEY];
    TK_OK(ftc__auth_key("mgr-secret", key));
    ftc__auth_seal(key, "ftc manager record v1", "sealed/0/ftc/r/2/a/1",
                   arrival, n, sealed + n);
    TK_OK(ftc_store_client_set(v, "ftc/r/2/a/1", sealed,
                               n + FTC__AUTH_SEAL_EXTRA, 1000));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    /* The leader's answer is sealed too: bound to its key, so the same
     * bytes under another round's key would not pass. */
    void *answer;
    size_t len;
    TK_OK(ftc_store_client_get(v, "ftc/r/2/q", &answer, &len, 1000));
    size_t text_len;
    TK_OK(ftc__auth_unseal(key, "ftc manager record v1", "sealed/0/ftc/r/2/q",
                           answer, len, &text_len));
    TK_EXPECT(ftc__auth_unseal(key, "ftc manager record v1",
                               "sealed/0/ftc/r/3/q", answer, len, &text_len),
              FTC_EAUTH);
    ftc_free(answer);
    ftc_store_client_close(v);
    ftc_store_client_close(c);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

static void options_from_env(void **state)
{
    (void)state;
    ftc_manager_opts o;
    ftc_manager_opts_init(&o);
    setenv("FTC_LIGHTHOUSE", "10.0.0.1:29510", 1);
    setenv("FTC_REPLICA_ID", "replica_3", 1);
    setenv("FTC_STORE_ADDR", "10.0.0.2:5000", 1);
    setenv("FTC_STORE_PREFIX", "replica_3/2", 1);
    setenv("FTC_GROUP_RANK", "1", 1);
    setenv("FTC_GROUP_SIZE", "4", 1);
    setenv("FTC_JOB", "big", 1);
    setenv("FTC_MIN_REPLICA_SIZE", "2", 1);
    TK_OK(ftc_manager_opts_from_env(&o));
    assert_string_equal(o.lighthouse, "10.0.0.1:29510");
    assert_string_equal(o.replica_id, "replica_3");
    assert_string_equal(o.store_addr, "10.0.0.2:5000");
    assert_string_equal(o.store_prefix, "replica_3/2");
    assert_string_equal(o.job, "big");
    assert_int_equal(o.group_rank, 1);
    assert_int_equal(o.group_size, 4);
    assert_int_equal(o.min_replica_size, 2);
    assert_int_equal(o.quorum_timeout_ms, 60000);
    /* A bad value changes nothing and names the variable. */
    setenv("FTC_GROUP_RANK", "4", 1);
    ftc_manager_opts before = o;
    TK_EXPECT(ftc_manager_opts_from_env(&o), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "FTC_GROUP_RANK='4'"));
    assert_memory_equal(&o, &before, sizeof(o));
    setenv("FTC_GROUP_RANK", "1x", 1);
    TK_EXPECT(ftc_manager_opts_from_env(&o), FTC_EINVAL);
    setenv("FTC_GROUP_RANK", "1", 1);
    unsetenv("FTC_STORE_ADDR");
    TK_EXPECT(ftc_manager_opts_from_env(&o), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "FTC_STORE_ADDR is not set"));
    TK_EXPECT(ftc_manager_opts_from_env(NULL), FTC_EMISUSE);
}

static void algo_comm_table(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "solo");
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    ftc_algo_comm c;
    TK_EXPECT(ftc_manager_algo_comm(NULL, &c), FTC_EMISUSE);
    TK_OK(ftc_manager_algo_comm(m, &c));
    assert_ptr_equal(c.ctx, m);
    /* DDP through it: one replica's average is its own gradient. */
    ftc_ddp *d;
    TK_OK(ftc_ddp_create(&c, NULL, &d));
    float g[5] = {1, 2, 3, 4, 5};
    for (int s = 0; s < 2; s++) {
        TK_OK(ftc_ddp_begin_step(d, FTC_TIMEOUT_DEFAULT));
        TK_OK(ftc_ddp_sync_grads(d, g, 5, FTC_TIMEOUT_DEFAULT));
        int commit;
        TK_OK(ftc_ddp_commit(d, &commit, FTC_TIMEOUT_DEFAULT));
        assert_int_equal(commit, 1);
    }
    assert_true(g[4] == 5.0f);
    assert_int_equal(c.current_step(c.ctx), 2);
    /* local_ok 0 votes no. */
    TK_OK(c.start_quorum(c.ctx, FTC_TIMEOUT_DEFAULT));
    int commit = 1;
    TK_OK(c.should_commit(c.ctx, 0, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 0);
    ftc_ddp_destroy(d);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* The algorithms' start_quorum after a wait that timed out: the round is
 * still running (its deadline is later), so it waits for that round and
 * gets its result instead of failing at once because a round is in
 * flight (a trainer retrying that gave up with its state). */
static void algo_comm_waits_for_its_round(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager *m = lonely_manager(e);
    ftc_algo_comm c;
    TK_OK(ftc_manager_algo_comm(m, &c));
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    qo.timeout_ms = tk_ms(2000);
    TK_OK(ftc_manager_start_quorum(m, &qo));
    TK_EXPECT(ftc_manager_wait_quorum(m, 50), FTC_ETIMEDOUT);
    assert_non_null(strstr(ftc_last_error(), "still running"));
    /* The same round's end: the lighthouse's reason, not a misuse. */
    TK_EXPECT(c.start_quorum(c.ctx, tk_ms(10000)), FTC_ETIMEDOUT);
    assert_non_null(strstr(ftc_last_error(), "need min_replicas 2"));
    /* Then a round of its own. */
    TK_OK(ftc_lighthouse_configure_job(e->lh, "lonely:min_replicas=1"));
    TK_OK(c.start_quorum(c.ctx, FTC_TIMEOUT_DEFAULT));
    int commit = 0;
    TK_OK(c.should_commit(c.ctx, 1, &commit, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(commit, 1);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

/* How long the hook makes an abort of the process group take. */
#define SLOW_ABORT_MS 3000

static atomic_int slow_abort_entered, slow_abort_left;

static void slow_abort(void)
{
    atomic_store(&slow_abort_entered, 1);
    tk_pause_ms(SLOW_ABORT_MS);
    atomic_store(&slow_abort_left, 1);
}

static void *abort_pg_main(void *arg)
{
    ftc__manager_abort_pg(arg);
    return NULL;
}

/* An abort of the process group (which may block up to 1 s) runs without
 * the group's lock: while one is slow (a test hook), an allreduce, which
 * needs that lock, is issued at once instead of after the abort. */
static void abort_runs_outside_the_group_lock(void **state)
{
    (void)state;
    mf_env *e = mf_env_new();
    ftc_manager_opts o = mf_opts(e, "slow");
    ftc_manager *m;
    TK_OK(ftc_manager_create(&o, &m));
    TK_OK(ftc_manager_start_quorum(m, NULL));
    TK_OK(ftc_manager_wait_quorum(m, FTC_TIMEOUT_DEFAULT));
    atomic_store(&ftc__manager_testing_before_abort, slow_abort);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, abort_pg_main, m), 0);
    TK_WAIT_UNTIL(atomic_load(&slow_abort_entered), 10000);
    double x[2] = {1.0, 2.0};
    ftc_tensor ten = ftc_tensor_cpu(x, 2, FTC_DTYPE_F64);
    ftc_manager_work *w = NULL;
    int64_t t0 = tk_now_ms();
    TK_OK(ftc_manager_allreduce(m, &ten, FTC_OP_SUM, &w, FTC_TIMEOUT_DEFAULT));
    int64_t took = tk_now_ms() - t0;
    /* Generous: the lock held through the abort would take the whole
     * delay. */
    assert_true(took < SLOW_ABORT_MS / 2);
    assert_false(atomic_load(&slow_abort_left));
    pthread_join(t, NULL);
    atomic_store(&ftc__manager_testing_before_abort, NULL);
    /* Done before the abort, or cancelled by it. */
    int rc = ftc_manager_work_wait(w, FTC_TIMEOUT_DEFAULT);
    assert_true(rc == 0 || rc == FTC_ECANCELED || rc == FTC_EPEER);
    ftc_manager_work_release(w);
    int commit = 1;
    ftc_manager_should_commit(m, &commit, FTC_TIMEOUT_DEFAULT);
    ftc_manager_destroy(m);
    mf_env_free(e);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_options),
        cmocka_unit_test(call_order),
        cmocka_unit_test(steps_and_errors),
        cmocka_unit_test(quorum_timeout),
        cmocka_unit_test(lone_rank_skips_the_group_store),
        cmocka_unit_test(group_step_mismatch),
        cmocka_unit_test(forged_records_are_refused),
        cmocka_unit_test(options_from_env),
        cmocka_unit_test(algo_comm_table),
        cmocka_unit_test(algo_comm_waits_for_its_round),
        cmocka_unit_test(abort_runs_outside_the_group_lock),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
