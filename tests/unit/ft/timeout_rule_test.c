/* The timeout rule (ftc/base.h) at every public entry point that takes a
 * timeout, and struct_size on every options struct: -7 and INT64_MIN are
 * FTC_EINVAL naming the call and changing nothing; -1, -2 and 0 are
 * accepted; an options struct the _init never saw is FTC_EINVAL. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ftc/ftc.h"
#include "manager_kit.h"
#include "testkit.h"

typedef struct world {
    mf_env *e;
    ftc_store_client *store;
    ftc_control *ctl;
    ftc_pg *pg;
    ftc_lighthouse_client *lhc;
    ftc_manager *m;
    ftc_work *pending; /* a work a rejected wait left unwaited */
    float x;
} world;

static void drain(world *w)
{
    if (w->pending != NULL) {
        TK_OK(ftc_work_wait(w->pending, FTC_TIMEOUT_INFINITE));
        ftc_work_release(w->pending);
        w->pending = NULL;
    }
}

typedef int (*timed_fn)(world *w, int64_t timeout_ms);

static int store_get(world *w, int64_t t)
{
    void *v = NULL;
    size_t n = 0;
    int rc = ftc_store_client_get(w->store, "k", &v, &n, t);
    ftc_free(v);
    return rc;
}

static int store_set(world *w, int64_t t)
{
    return ftc_store_client_set(w->store, "k", "v", 1, t);
}

static int store_wait(world *w, int64_t t)
{
    const char *k = "k";
    return ftc_store_client_wait(w->store, &k, 1, t);
}

static int store_ping(world *w, int64_t t)
{
    return ftc_store_client_ping(w->store, t);
}

static int control_barrier(world *w, int64_t t)
{
    return ftc_control_barrier(w->ctl, NULL, t);
}

static int control_create(world *w, int64_t t)
{
    ftc_control *g = NULL;
    int rc = ftc_control_create(w->store, 0, 1, NULL, &g, t);
    ftc_control_destroy(g);
    return rc;
}

static int pg_allreduce(world *w, int64_t t)
{
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = t;
    ftc_tensor x = ftc_tensor_cpu(&w->x, 1, FTC_DTYPE_F32);
    ftc_work *work = NULL;
    int rc = ftc_pg_allreduce(w->pg, &x, &x, FTC_OP_SUM, &o, &work);
    if (rc == 0) {
        rc = ftc_work_wait(work, FTC_TIMEOUT_INFINITE);
        ftc_work_release(work);
    }
    return rc;
}

static int work_wait(world *w, int64_t t)
{
    ftc_tensor x = ftc_tensor_cpu(&w->x, 1, FTC_DTYPE_F32);
    ftc_work *work = NULL;
    TK_OK(ftc_pg_allreduce(w->pg, &x, &x, FTC_OP_SUM, NULL, &work));
    int rc = ftc_work_wait(work, t);
    if (rc == FTC_EINVAL) { /* the work is still there to wait for */
        w->pending = work;
    } else {
        ftc_work_release(work);
    }
    return rc;
}

static int lighthouse_heartbeat(world *w, int64_t t)
{
    ftc_lighthouse_ack ack;
    return ftc_lighthouse_client_heartbeat(w->lhc, "tr", t, &ack);
}

static int lighthouse_status(world *w, int64_t t)
{
    char *json = NULL;
    int rc = ftc_lighthouse_client_status(w->lhc, NULL, t, &json);
    ftc_free(json);
    return rc;
}

/* Manager calls outside a round: a valid timeout gets FTC_EMISUSE (no
 * round), never FTC_EINVAL. */
static int manager_wait_quorum(world *w, int64_t t)
{
    return ftc_manager_wait_quorum(w->m, t);
}

static int manager_should_commit(world *w, int64_t t)
{
    int commit = 0;
    return ftc_manager_should_commit(w->m, &commit, t);
}

static int manager_start_quorum(world *w, int64_t t)
{
    if (t >= FTC_TIMEOUT_DEFAULT) {
        return 0; /* a valid one starts a round: not run here */
    }
    ftc_manager_quorum_opts o;
    ftc_manager_quorum_opts_init(&o);
    o.timeout_ms = t;
    return ftc_manager_start_quorum(w->m, &o);
}

static const struct {
    const char *call;
    timed_fn fn;
} entries[] = {
    {"ftc_store_client_get", store_get},
    {"ftc_store_client_set", store_set},
    {"ftc_store_client_wait", store_wait},
    {"ftc_store_client_ping", store_ping},
    {"ftc_control_barrier", control_barrier},
    {"ftc_control_create", control_create},
    {"allreduce", pg_allreduce},
    {"ftc_work_wait", work_wait},
    {"ftc_lighthouse_client_heartbeat", lighthouse_heartbeat},
    {"ftc_lighthouse_client_status", lighthouse_status},
    {"ftc_manager_wait_quorum", manager_wait_quorum},
    {"ftc_manager_should_commit", manager_should_commit},
    {"ftc_manager_start_quorum", manager_start_quorum},
};

static world *world_new(void)
{
    world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->e = mf_env_new();
    TK_OK(ftc_store_client_connect(w->e->store_addr, NULL, &w->store));
    TK_OK(ftc_store_client_set(w->store, "k", "v", 1, FTC_TIMEOUT_DEFAULT));
    TK_OK(ftc_control_create(w->store, 0, 1, NULL, &w->ctl, tk_ms(5000)));
    TK_OK(ftc_pg_create(w->store, "tr", 0, 1, NULL, &w->pg));
    TK_OK(ftc_lighthouse_client_create(w->e->lh_addr, NULL, &w->lhc));
    ftc_manager_opts o = mf_opts(w->e, "tr");
    TK_OK(ftc_manager_create(&o, &w->m));
    return w;
}

static void world_free(world *w)
{
    ftc_manager_destroy(w->m);
    ftc_lighthouse_client_destroy(w->lhc);
    ftc_pg_destroy(w->pg);
    ftc_control_destroy(w->ctl);
    ftc_store_client_close(w->store);
    mf_env_free(w->e);
    free(w);
}

static void bad_timeouts_are_einval(void **state)
{
    (void)state;
    world *w = world_new();
    const int64_t bad[] = {-7, INT64_MIN, -3};
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
            int64_t t0 = tk_now_ms();
            int rc = entries[i].fn(w, bad[j]);
            if (rc != FTC_EINVAL ||
                strstr(ftc_last_error(), entries[i].call) == NULL ||
                strstr(ftc_last_error(), "timeout_ms") == NULL) {
                fail_msg("%s(%lld): %d '%s'", entries[i].call,
                         (long long)bad[j], rc, ftc_last_error());
            }
            assert_true(tk_now_ms() - t0 < 1000); /* did not block */
            drain(w);
        }
    }
    /* Nothing changed: the key is as it was, the group still works. */
    TK_OK(store_get(w, FTC_TIMEOUT_DEFAULT));
    TK_OK(control_barrier(w, FTC_TIMEOUT_DEFAULT));
    /* No quorum round was started. */
    TK_EXPECT(ftc_manager_wait_quorum(w->m, 0), FTC_EMISUSE);
    world_free(w);
}

static void documented_timeouts_are_accepted(void **state)
{
    (void)state;
    world *w = world_new();
    const int64_t good[] = {FTC_TIMEOUT_INFINITE, FTC_TIMEOUT_DEFAULT, 0,
                            tk_ms(5000)};
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        for (size_t j = 0; j < sizeof(good) / sizeof(good[0]); j++) {
            int rc = entries[i].fn(w, good[j]);
            bool manager = strncmp(entries[i].call, "ftc_manager", 11) == 0;
            /* 0 may time out (do not wait); it is never a bad argument. */
            if (rc == FTC_EINVAL ||
                (rc != 0 && rc != FTC_ETIMEDOUT && !manager) ||
                (manager && rc != 0 && rc != FTC_EMISUSE)) {
                fail_msg("%s(%lld): %d '%s'", entries[i].call,
                         (long long)good[j], rc, ftc_last_error());
            }
        }
    }
    world_free(w);
}

/* An options struct the _init never saw (struct_size 0), or one too small
 * to be any version, is FTC_EINVAL telling the caller to call the _init. */
static void uninitialised_opts_are_einval(void **state)
{
    (void)state;
    world *w = world_new();
    ftc_store_server *srv = NULL;
    ftc_store_server_opts sso;
    ftc_store_server_opts_init(&sso);
    assert_int_equal(sso.struct_size, sizeof(sso));
    sso.struct_size = 0;
    TK_EXPECT(ftc_store_server_create(&sso, &srv), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "ftc_store_server_opts_init"));
    sso.struct_size = sizeof(size_t);
    TK_EXPECT(ftc_store_server_create(&sso, &srv), FTC_EINVAL);
    ftc_store_client *c = NULL;
    ftc_store_client_opts sco;
    memset(&sco, 0, sizeof(sco));
    TK_EXPECT(ftc_store_client_connect(w->e->store_addr, &sco, &c), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "ftc_store_client_opts_init"));
    ftc_pg_opts po;
    memset(&po, 0, sizeof(po));
    ftc_pg *pg = NULL;
    TK_EXPECT(ftc_pg_create(w->store, "tr2", 0, 1, &po, &pg), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "ftc_pg_opts_init"));
    ftc_pg_op_opts oo;
    memset(&oo, 0, sizeof(oo));
    ftc_tensor x = ftc_tensor_cpu(&w->x, 1, FTC_DTYPE_F32);
    ftc_work *work = NULL;
    TK_EXPECT(ftc_pg_allreduce(w->pg, &x, &x, FTC_OP_SUM, &oo, &work),
              FTC_EINVAL);
    ftc_control_opts co;
    memset(&co, 0, sizeof(co));
    ftc_control *g = NULL;
    TK_EXPECT(ftc_control_create(w->store, 0, 1, &co, &g, 1000), FTC_EINVAL);
    ftc_lighthouse_opts lo;
    memset(&lo, 0, sizeof(lo));
    ftc_lighthouse *lh = NULL;
    TK_EXPECT(ftc_lighthouse_create(&lo, &lh), FTC_EINVAL);
    ftc_lighthouse_client_opts lco;
    memset(&lco, 0, sizeof(lco));
    ftc_lighthouse_client *lhc = NULL;
    TK_EXPECT(ftc_lighthouse_client_create(w->e->lh_addr, &lco, &lhc),
              FTC_EINVAL);
    ftc_manager_opts mo = mf_opts(w->e, "tr2");
    mo.struct_size = 0;
    ftc_manager *m = NULL;
    TK_EXPECT(ftc_manager_create(&mo, &m), FTC_EINVAL);
    mo = mf_opts(w->e, "tr2");
    ftc_pg_opts mpo;
    memset(&mpo, 0, sizeof(mpo));
    mo.pg_opts = &mpo;
    TK_EXPECT(ftc_manager_create(&mo, &m), FTC_EINVAL);
    ftc_manager_quorum_opts qo;
    memset(&qo, 0, sizeof(qo));
    TK_EXPECT(ftc_manager_start_quorum(w->m, &qo), FTC_EINVAL);
    world_free(w);
}

/* 0 is a value, not "the default": a store call with timeout 0 on a
 * missing key does not wait. */
static void zero_means_zero(void **state)
{
    (void)state;
    world *w = world_new();
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.timeout_ms = 0;
    ftc_store_client *c = NULL;
    TK_OK(ftc_store_client_connect(w->e->store_addr, &o, &c));
    const char *k = "missing";
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc_store_client_wait(c, &k, 1, FTC_TIMEOUT_DEFAULT),
              FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 < 1000);
    ftc_store_client_close(c);
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    so.max_key_bytes = 0; /* no key fits: rejected, not the default */
    ftc_store_server *srv = NULL;
    TK_EXPECT(ftc_store_server_create(&so, &srv), FTC_EINVAL);
    world_free(w);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_timeouts_are_einval),
        cmocka_unit_test(documented_timeouts_are_accepted),
        cmocka_unit_test(uninitialised_opts_are_einval),
        cmocka_unit_test(zero_means_zero),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
