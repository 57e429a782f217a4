/* Real PyTorch clients against the embedded ftc store server: every op of
 * a torch 1.13 and a torch 2.x TCPStore client, and two 2-rank gloo jobs
 * (one per torch version, at once) whose store is our server.
 * Usage: store_server_interop_test TORCH1_PYTHON TORCH2_PYTHON SCRIPT_DIR.
 * A missing interpreter fails the test: interop is never skipped. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "store_server_kit.h"
#include "testkit.h"

static const char *python[2]; /* [0] torch 1.13, [1] torch 2.x */
static const char *script_dir;

static void require_python(int which)
{
    if (access(python[which], X_OK) != 0) {
        fail_msg("%s (FTC_TORCH%d_PYTHON) is not an executable: install "
                 "%s (see scripts/pydeps.sh) or point the CMake cache "
                 "variable at one",
                 python[which], which + 1,
                 which == 0 ? "Debian's python3-torch" : "the .venv torch");
    }
}

/* Starts "python script args..." with FTC_STORE_PORT set; the child dies
 * with this process. The environment is built before fork: the server's
 * thread is running, so the child only calls async-signal-safe functions
 * before exec. */
static pid_t run_script(int which, const char *script, const char *arg1,
                        const char *arg2, int port)
{
    require_python(which);
    char path[1024], port_env[32];
    snprintf(path, sizeof(path), "%s/%s", script_dir, script);
    snprintf(port_env, sizeof(port_env), "FTC_STORE_PORT=%d", port);
    static char *envp[512];
    size_t n = 0;
    for (char **e = environ; *e != NULL && n < 500; e++) {
        if (strncmp(*e, "FTC_STORE_PORT=", 15) != 0 &&
            strncmp(*e, "GLOO_SOCKET_IFNAME=", 19) != 0 &&
            strncmp(*e, "OMP_NUM_THREADS=", 16) != 0) {
            envp[n++] = *e;
        }
    }
    envp[n++] = port_env;
    envp[n++] = "GLOO_SOCKET_IFNAME=lo";
    envp[n++] = "OMP_NUM_THREADS=1";
    envp[n] = NULL;
    char *argv[] = {(char *)python[which], "-u",         path,
                    (char *)arg1,          (char *)arg2, NULL};
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        execve(python[which], argv, envp);
        _exit(127);
    }
    return pid;
}

/* Waits for every process (killing those past the deadline); fails naming
 * each one that did not exit 0. */
static void wait_all(const pid_t *pids, const char *const *names, int n,
                     int64_t timeout_ms)
{
    int status[8] = {0}, done[8] = {0}, left = n;
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    while (left > 0 && tk_now_ms() < end) {
        for (int i = 0; i < n; i++) {
            if (!done[i] && waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
                done[i] = 1;
                left--;
            }
        }
        tk_pause_ms(20);
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (!done[i]) {
            fprintf(stderr, "%s did not finish in time; killing it\n",
                    names[i]);
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status[i], 0);
            bad++;
        } else if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]) != 0) {
            fprintf(stderr, "%s failed (status 0x%x)\n", names[i], status[i]);
            bad++;
        }
    }
    if (bad > 0) {
        fail_msg("%d of %d PyTorch processes failed (output above)", bad, n);
    }
}

static void client_every_op(int which, const char *script)
{
    ftc_store_server *srv = ssk_start(NULL);
    pid_t pid =
        run_script(which, script, NULL, NULL, ftc_store_server_port(srv));
    const char *name = script;
    wait_all(&pid, &name, 1, 180000);
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
    pid_t pids[4];
    const char *names[4] = {"torch1 rank 0", "torch1 rank 1", "torch2 rank 0",
                            "torch2 rank 1"};
    pids[0] = run_script(0, "store_pg.py", "0", "torch1", port);
    pids[1] = run_script(0, "store_pg.py", "1", "torch1", port);
    pids[2] = run_script(1, "store_pg.py", "0", "torch2", port);
    pids[3] = run_script(1, "store_pg.py", "1", "torch2", port);
    wait_all(pids, names, 4, 240000);
    ftc_store_server_stats st = ssk_stats(srv);
    assert_int_equal(st.protocol_errors, 0);
    assert_true(st.keys > 8); /* both jobs' rendezvous keys */
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
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
