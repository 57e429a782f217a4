/* The store server at scale: 10,000 idle connections held (half of them
 * silent like 1.13's callback connection) while it keeps serving, and
 * 1,024 concurrent clients of both dialects from four processes meeting
 * on one counter and one release key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/base_int.h"
#include "store_kit.h"
#include "store_server_kit.h"
#include "testkit.h"

#define IDLE_CHILDREN 4
#define IDLE_PER_CHILD 2500
#define BUSY_CHILDREN 4
#define BUSY_PER_CHILD 256

/* Raises the open-file limit to the hard limit; fails the test (never
 * skips it) when even that is too low for need descriptors. */
static void raise_nofile(rlim_t need)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fail_msg("RLIMIT_NOFILE hard limit is %llu but this test needs %llu "
                 "descriptors per process: raise it (ulimit -Hn, "
                 "/etc/security/limits.conf or the container's nofile)",
                 (unsigned long long)rl.rlim_max, (unsigned long long)need);
    }
    rl.rlim_cur = rl.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* Blocks until the parent sets /release, via a parked WAIT. */
static void wait_for_release(int port)
{
    sr_conn ctl;
    sr_connect(&ctl, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    const char *k[] = {"/release"};
    sr_keys(&b, SR_V2, FTC__OP_WAIT, k, 1);
    sr_flush(&ctl, &b);
    uint8_t r;
    int rc = sr_read(&ctl, &r, 1, 120000);
    if (rc != 0 || r != 0) {
        fail_msg("no release: %s", ftc_err_name(rc));
    }
    ftc__buf_free(&b);
    sr_close(&ctl);
}

/* Child: opens n connections and leaves them idle until released, then
 * proves every one of them still works. */
static int role_idle(int argc, char **argv)
{
    assert_int_equal(argc, 4);
    int port = (int)strtol(argv[1], NULL, 10);
    int n = (int)strtol(argv[2], NULL, 10);
    raise_nofile((rlim_t)n + 64);
    sr_conn *c = calloc((size_t)n, sizeof(*c));
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0) {
            sr_connect(&c[i], port, SR_V2);
        } else {
            sr_connect_bare(&c[i], port); /* silent, like 1.13's 2nd */
        }
    }
    wait_for_release(port);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0) {
            sr_ping(&b, (uint32_t)i);
            sr_flush(&c[i], &b);
            assert_int_equal(sr_read_u32(&c[i]), (uint32_t)i);
        } else {
            sr_bare(&b, SR_V1, FTC__OP_GETNUMKEYS);
            sr_flush(&c[i], &b);
            assert_true(sr_read_i64(&c[i]) >= 1);
        }
        sr_close(&c[i]);
    }
    ftc__buf_free(&b);
    free(c);
    return 0;
}

static void spawn_all(tk_child *cs, int n, const char *role, int port,
                      int per_child)
{
    char port_s[16], per_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(per_s, sizeof(per_s), "%d", per_child);
    for (int i = 0; i < n; i++) {
        char idx_s[16];
        snprintf(idx_s, sizeof(idx_s), "%d", i);
        char *args[] = {port_s, per_s, idx_s, NULL};
        tk_spawn(&cs[i], role, args, NULL);
    }
}

static void release_and_reap(int port, tk_child *cs, int n)
{
    sr_conn c;
    sr_connect(&c, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_set(&b, SR_V2, "/release", "go");
    sr_ping(&b, 0);
    sr_flush(&c, &b);
    assert_int_equal(sr_read_u32(&c), 0);
    ftc__buf_free(&b);
    sr_close(&c);
    assert_int_equal(tk_reap(cs, n, 120000), 0);
    for (int i = 0; i < n; i++) {
        if (tk_exit_code(&cs[i]) != 0) {
            fail_msg("child %d exited with %d", i, tk_exit_code(&cs[i]));
        }
    }
}

static void ten_thousand_idle_connections(void **state)
{
    (void)state;
    raise_nofile(IDLE_CHILDREN * IDLE_PER_CHILD + 256);
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    tk_child cs[IDLE_CHILDREN];
    spawn_all(cs, IDLE_CHILDREN, "idle", port, IDLE_PER_CHILD);
    /* every idle connection plus each child's parked control one */
    const uint64_t want = IDLE_CHILDREN * (IDLE_PER_CHILD + 1);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == want, 120000);
    /* still serving, with all of them open */
    sr_conn c;
    sr_connect(&c, port, SR_V1);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_set(&b, SR_V1, "/alive", "yes");
    sr_key(&b, SR_V1, FTC__OP_GET, "/alive");
    sr_flush(&c, &b);
    sr_expect_str(&c, "yes");
    sr_close(&c);
    ftc__buf_free(&b);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == want, 10000);
    release_and_reap(port, cs, IDLE_CHILDREN);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == 0, 30000);
    assert_int_equal(ssk_stats(srv).protocol_errors, 0);
    ssk_stop(srv);
}

/* Child: n clients (both dialects) each store their own key, add 1 to a
 * shared counter and park on /release in one pipelined send; once
 * released each reads a key another process wrote. */
static int role_busy(int argc, char **argv)
{
    assert_int_equal(argc, 4);
    int port = (int)strtol(argv[1], NULL, 10);
    int n = (int)strtol(argv[2], NULL, 10);
    int me = (int)strtol(argv[3], NULL, 10);
    raise_nofile((rlim_t)n + 64);
    sr_conn *c = calloc((size_t)n, sizeof(*c));
    ftc__buf b;
    ftc__buf_init(&b, 1 << 12);
    const char *release[] = {"/release"};
    for (int i = 0; i < n; i++) {
        int d = i % 2 == 0 ? SR_V2 : SR_V1;
        char key[32], val[32];
        snprintf(key, sizeof(key), "/c%d/%d", me, i);
        snprintf(val, sizeof(val), "%d:%d", me, i);
        sr_connect(&c[i], port, d);
        sr_set(&b, d, key, val);
        sr_add(&b, d, "/count", 1);
        sr_keys(&b, d, FTC__OP_WAIT, release, 1);
        sr_flush(&c[i], &b);
    }
    for (int i = 0; i < n; i++) {
        int64_t v = sr_read_i64(&c[i]);
        assert_true(v >= 1 && v <= BUSY_CHILDREN * BUSY_PER_CHILD);
    }
    for (int i = 0; i < n; i++) {
        uint8_t r;
        if (sr_read(&c[i], &r, 1, 120000) != 0 || r != 0) {
            fail_msg("client %d: no STOP_WAITING", i);
        }
        int d = c[i].dialect;
        int other = (me + 1) % BUSY_CHILDREN;
        char key[32], want[32];
        snprintf(key, sizeof(key), "/c%d/%d", other, i);
        snprintf(want, sizeof(want), "%d:%d", other, i);
        const char *k[] = {key};
        sr_keys(&b, d, FTC__OP_WAIT, k, 1);
        sr_key(&b, d, FTC__OP_GET, key);
        sr_flush(&c[i], &b);
        assert_int_equal(sr_read_u8(&c[i]), 0);
        sr_expect_str(&c[i], want);
        sr_close(&c[i]);
    }
    ftc__buf_free(&b);
    free(c);
    return 0;
}

static int64_t read_counter(int port)
{
    sr_conn c;
    sr_connect(&c, port, SR_V2);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 10);
    sr_add(&b, SR_V2, "/count", 0);
    sr_flush(&c, &b);
    int64_t v = sr_read_i64(&c);
    ftc__buf_free(&b);
    sr_close(&c);
    return v;
}

static void many_clients_from_several_processes(void **state)
{
    (void)state;
    raise_nofile(BUSY_CHILDREN * BUSY_PER_CHILD + 256);
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    tk_child cs[BUSY_CHILDREN];
    spawn_all(cs, BUSY_CHILDREN, "busy", port, BUSY_PER_CHILD);
    const int64_t total = BUSY_CHILDREN * BUSY_PER_CHILD;
    TK_WAIT_UNTIL(read_counter(port) == total, 120000);
    TK_WAIT_UNTIL(ssk_stats(srv).connections == (uint64_t)total, 10000);
    release_and_reap(port, cs, BUSY_CHILDREN);
    assert_true(read_counter(port) == total);
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.protocol_errors, 0);
    assert_int_equal(st.keys, (uint64_t)total + 2); /* + /count /release */
    ssk_stop(srv);
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"idle", role_idle}, {"busy", role_busy}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ten_thousand_idle_connections),
        cmocka_unit_test(many_clients_from_several_processes),
    };
    return tk_main(argc, argv, roles, 2, tests);
}
