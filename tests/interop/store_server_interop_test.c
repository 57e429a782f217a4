/* Real PyTorch clients against the embedded ftc store server: every op of
 * a torch 1.13 and a torch 2.x TCPStore client, and two 2-rank gloo jobs
 * (one per torch version, at once) whose store is our server, and a
 * torch 2.x client confined to the open prefix of a server with a token.
 * Usage: store_server_interop_test TORCH1_PYTHON TORCH2_PYTHON SCRIPT_DIR.
 * A missing interpreter fails the test: interop is never skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_server_kit.h"
#include "testkit.h"

static const char *python[2]; /* [0] torch 1.13, [1] torch 2.x */
static const char *script_dir;

static void require_python(int which)
{
    if (access(python[which], X_OK) != 0) {
        fail_msg("%s (FTC_TORCH%d_PYTHON) is not an executable: %s, or point "
                 "the CMake cache variable at one",
                 python[which], which + 1,
                 which == 0 ? "install Debian's python3-torch (scripts/deps.sh)"
                            : "create the venv (scripts/pydeps.sh)");
    }
}

/* Starts "python -u script args..." with FTC_STORE_PORT set, as a child
 * that dies with this process. */
static void run_script(tk_child *c, const char *name, int which,
                       const char *script, const char *arg1, const char *arg2,
                       int port)
{
    require_python(which);
    char path[1024], port_env[32];
    snprintf(path, sizeof(path), "%s/%s", script_dir, script);
    snprintf(port_env, sizeof(port_env), "FTC_STORE_PORT=%d", port);
    char *argv[] = {(char *)python[which], "-u",         path,
                    (char *)arg1,          (char *)arg2, NULL};
    char *env[] = {port_env, "GLOO_SOCKET_IFNAME=lo", "OMP_NUM_THREADS=1",
                   NULL};
    tk_spawn_cmd(c, argv, env);
    snprintf(c->name, sizeof(c->name), "%s", name);
}

/* Waits for every child; fails naming each one that did not exit 0. */
static void wait_all(tk_child *cs, int n, int64_t timeout_ms)
{
    int killed = tk_reap(cs, n, timeout_ms);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (tk_exit_code(&cs[i]) != 0) {
            fprintf(stderr, "%s exited with %d\n", cs[i].name,
                    tk_exit_code(&cs[i]));
            bad++;
        }
    }
    if (bad > 0) {
        fail_msg("%d of %d PyTorch processes failed, %d of them killed "
                 "for running too long (output above)",
                 bad, n, killed);
    }
}

static void client_every_op(int which, const char *script)
{
    ftc_store_server *srv = ssk_start(NULL);
    tk_child c;
    run_script(&c, script, which, script, NULL, NULL,
               ftc_store_server_port(srv));
    wait_all(&c, 1, 180000);
    /* exactly one connection was closed: the deliberate ADD on text */
    TK_WAIT_UNTIL(ssk_stats(srv).protocol_errors == 1, 5000);
    assert_int_equal(ssk_logged("store.badvalue", "not a number"), 1);
    ssk_stop(srv);
}

static void torch1_client_every_op(void **state)
{
    (void)state;
    client_every_op(0, "store_ops_torch1.py");
}

static void torch2_client_every_op(void **state)
{
    (void)state;
    client_every_op(1, "store_ops_torch2.py");
}

/* init_process_group("gloo") + all_reduce + new_group, two ranks per torch
 * version, all four processes on one server at once. */
static void gloo_jobs_of_both_versions(void **state)
{
    (void)state;
    ftc_store_server *srv = ssk_start(NULL);
    int port = ftc_store_server_port(srv);
    tk_child cs[4];
    for (int i = 0; i < 4; i++) {
        int torch = i / 2;
        char name[32];
        snprintf(name, sizeof(name), "torch%d rank %d", torch + 1, i % 2);
        run_script(&cs[i], name, torch, "store_pg.py", i % 2 ? "1" : "0",
                   torch ? "torch2" : "torch1", port);
    }
    wait_all(cs, 4, 240000);
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.protocol_errors, 0);
    assert_true(st.keys > 8); /* both jobs' rendezvous keys */
    ssk_stop(srv);
}

/* A server with a token and the open prefix "torch/": a PyTorch client
 * (which cannot authenticate) works inside it, sees nothing outside it,
 * and its read of a key outside closes its connection and changes
 * nothing; ftc's client with the token sees everything. */
static void torch2_client_inside_open_prefix(void **state)
{
    (void)state;
    const char *open[] = {"torch/"};
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.token = "interop-secret";
    o.open_prefixes = open;
    o.n_open_prefixes = 1;
    ftc_store_server *srv = ssk_start(&o);
    int port = ftc_store_server_port(srv);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ftc_store_client_opts co;
    ftc_store_client_opts_init(&co);
    co.token = "interop-secret";
    ftc_store_client *c;
    TK_OK(ftc_store_client_connect(addr, &co, &c));
    TK_OK(ftc_store_client_set(c, "secret/addr", "10.0.0.1", 8,
                               FTC_TIMEOUT_DEFAULT));
    tk_child child;
    run_script(&child, "open prefix", 1, "store_open_prefix.py", NULL, NULL,
               port);
    wait_all(&child, 1, 180000);
    void *v = NULL;
    size_t n = 0;
    TK_OK(ftc_store_client_get(c, "torch/a", &v, &n, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(n, 1);
    assert_memory_equal(v, "2", 1);
    ftc_free(v);
    int64_t keys = 0;
    TK_OK(ftc_store_client_num_keys(c, &keys, FTC_TIMEOUT_DEFAULT));
    assert_int_equal(keys, 3);
    assert_true(ssk_logged("store.auth", "secret/addr") >= 1);
    ftc_store_client_close(c);
    ssk_stop(srv);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--tk-role") != 0) {
        python[0] = argv[1];
        python[1] = argv[2];
        script_dir = argv[3];
        argc = 1;
    }
    if (script_dir == NULL) {
        fprintf(stderr, "usage: %s TORCH1_PYTHON TORCH2_PYTHON SCRIPT_DIR\n",
                argv[0]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(torch1_client_every_op),
        cmocka_unit_test(torch2_client_every_op),
        cmocka_unit_test(gloo_jobs_of_both_versions),
        cmocka_unit_test(torch2_client_inside_open_prefix),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
