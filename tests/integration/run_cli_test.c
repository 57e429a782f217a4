/* `ftc run` as users see it: usage errors and their exit code, the
 * environment contract delivered to every rank, output prefixing with
 * malformed events tolerated, and the summary (JSON fields, checksums).
 * argv[1] is the ftc binary, argv[2] the fake trainer. */
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

static void usage_errors(void **state)
{
    (void)state;
    static const struct {
        const char *args[10];
        int code;
        const char *says;
    } cases[] = {
        {{"--help"}, 0, "--kill-at-steps"},
        {{"--replicas", "0", "--", "true"}, 2, "bad value for --replicas"},
        {{"--ranks", "x", "--", "true"}, 2, "bad value for --ranks"},
        {{"--lighthouse", "nowhere", "--", "true"}, 2, "--lighthouse"},
        {{"--kill-every", "1", "--kill-at-steps", "3", "--", "true"},
         2,
         "not both"},
        {{"--replicas", "2", "--min-replicas", "2", "--kill-every", "1", "--",
          "true"},
         2,
         "never kills every group"},
        {{"--kill-at-steps", "3,", "--", "true"}, 2, "trailing comma"},
        {{"--env", "FTC_JOB=x", "--", "true"}, 2, "the launcher sets"},
        {{"--env", "1A=x", "--", "true"}, 2, "bad value for --env"},
        {{"--kill-mode", "maim", "--", "true"}, 2, "kill, stop or mixed"},
        {{"--lighthouse", "127.0.0.1:1", "--host", "10.254.0.1", "--", "true"},
         1,
         "refusing to serve on '10.254.0.1' without a token"},
        {{"--job", "a b", "--", "true"}, 2, "bad value for --job"},
        {{"--frobnicate", "1", "--", "true"}, 2, "unknown option"},
        {{"--replicas", "2"}, 2, "no COMMAND"},
        {{"--lighthouse", "127.0.0.1:1", "--", "/no/such/trainer"},
         127,
         "cannot run '/no/such/trainer'"},
        {{"--lighthouse", "127.0.0.1:1", "--", "no-such-trainer-in-path"},
         127,
         "No such file"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rk_run p;
        rk_start(&p, (char *const *)cases[i].args, NULL);
        int code = rk_wait(&p, 10000);
        if (code != cases[i].code || strstr(p.text, cases[i].says) == NULL) {
            fail_msg("case %zu (%s ...): exit %d, expected %d with '%s':\n%s",
                     i, cases[i].args[0], code, cases[i].code, cases[i].says,
                     p.text);
        }
        rk_free(&p);
    }
}

/* Every rank of a 2 x 2 job gets the whole contract, its own process
 * group, and its group's store; --env and the inherited environment pass
 * through; a contract variable in the launcher's own environment does
 * not. */
static void env_contract(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("env", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"),
                        T("2"),
                        T("--ranks"),
                        T("2"),
                        T("--job"),
                        T("envjob"),
                        T("--env"),
                        T("RUNTEST_A=1"),
                        T("--env"),
                        T("RUNTEST_B=x=y"),
                        NULL};
    char *trainer[] = {T("--steps"), T("2"), NULL};
    char *env[] = {T("RUNTEST_INHERITED=yes"), T("FTC_REPLICA_ID=bogus"),
                   T("RUNTEST_A=overridden"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, env);
    assert_int_equal(rk_wait(&p, 20000), 0);
    assert_int_equal(rk_seen_count(dir), 4);
    char v[256], store[2][256];
    for (int i = 0; i < 2; i++) {
        for (int r = 0; r < 2; r++) {
            char want[64];
            assert_int_equal(rk_seen(dir, i, r, 0, "FTC_JOB", v, sizeof(v)), 0);
            assert_string_equal(v, "envjob");
            rk_seen(dir, i, r, 0, "FTC_LIGHTHOUSE", v, sizeof(v));
            assert_string_equal(v, "127.0.0.1:1");
            snprintf(want, sizeof(want), "replica_%d", i);
            rk_seen(dir, i, r, 0, "FTC_REPLICA_ID", v, sizeof(v));
            assert_string_equal(v, want);
            assert_int_equal(rk_seen_long(dir, i, r, 0, "FTC_REPLICA_INDEX"),
                             i);
            assert_int_equal(rk_seen_long(dir, i, r, 0, "FTC_NUM_REPLICAS"), 2);
            assert_int_equal(rk_seen_long(dir, i, r, 0, "FTC_GROUP_RANK"), r);
            assert_int_equal(rk_seen_long(dir, i, r, 0, "FTC_GROUP_SIZE"), 2);
            assert_int_equal(rk_seen_long(dir, i, r, 0, "FTC_INCARNATION"), 0);
            snprintf(want, sizeof(want), "replica_%d/0", i);
            rk_seen(dir, i, r, 0, "FTC_STORE_PREFIX", v, sizeof(v));
            assert_string_equal(v, want);
            rk_seen(dir, i, r, 0, "FTC_RUN_DIR", v, sizeof(v));
            assert_string_equal(v, dir);
            rk_seen(dir, i, r, 0, "RUNTEST_A", v, sizeof(v));
            assert_string_equal(v, "1");
            rk_seen(dir, i, r, 0, "RUNTEST_B", v, sizeof(v));
            assert_string_equal(v, "x=y");
            rk_seen(dir, i, r, 0, "RUNTEST_INHERITED", v, sizeof(v));
            assert_string_equal(v, "yes");
            /* --lighthouse given and no token: the job is open */
            rk_seen(dir, i, r, 0, "store", v, sizeof(v));
            assert_string_equal(v, "ftc/accepted");
            rk_seen(dir, i, r, 0, "lighthouse", v, sizeof(v));
            assert_string_equal(v, "down"); /* 127.0.0.1:1 */
            assert_int_equal(rk_seen_long(dir, i, r, 0, "pgid"),
                             rk_seen_long(dir, i, r, 0, "pid"));
            rk_seen(dir, i, r, 0, "FTC_STORE_ADDR", v, sizeof(v));
            if (r == 0) {
                snprintf(store[i], sizeof(store[i]), "%s", v);
            } else {
                assert_string_equal(v, store[i]); /* one store per group */
            }
        }
    }
    assert_string_not_equal(store[0], store[1]);
    assert_int_equal(strncmp(store[0], "127.0.0.1:", 10), 0);
    rk_free(&p);
}

/* Rank output is prefixed per rank on both streams, partial and overlong
 * lines survive, valid events are consumed, malformed ones are printed
 * with a note and never stop the job. */
static void output_prefixes(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("prefix", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("2"), T("--ranks"), T("2"), NULL};
    char *trainer[] = {T("--steps"), T("3"), T("--chatter"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 20000), 0);
    const char *out = p.text;
    for (int i = 0; i < 2; i++) {
        for (int r = 0; r < 2; r++) {
            char want[128];
            snprintf(want, sizeof(want),
                     "[r%d.%d] hello from replica %d rank %d\n", i, r, i, r);
            assert_non_null(strstr(out, want));
            snprintf(want, sizeof(want),
                     "[r%d.%d] warning from replica %d rank %d\n", i, r, i, r);
            assert_non_null(strstr(out, want));
            snprintf(want, sizeof(want), "[r%d.%d] unterminated last line\n", i,
                     r);
            assert_non_null(strstr(out, want));
            snprintf(want, sizeof(want), "[r%d.%d] long line done\n", i, r);
            assert_non_null(strstr(out, want));
        }
    }
    /* 20000 x's: one 16384-byte piece and the rest, each prefixed */
    assert_int_equal(rk_count(out, "xxxxxxxxxxxxxxxx\n[r"), 8);
    assert_int_equal(rk_count(out, "] FTC_EVENT {not json\n"), 4);
    assert_int_equal(rk_count(out, "FTC_EVENT {\"kind\":\"step\",\"step\":-4"),
                     4);
    assert_int_equal(rk_count(out, "] FTC_EVENTS are not events\n"), 4);
    /* two bad lines per rank, four per group: three noted, one counted */
    assert_int_equal(rk_count(out, "ignored a malformed FTC_EVENT line"), 6);
    assert_int_equal(rk_count(out, "(further ones are only counted)"), 2);
    assert_non_null(strstr(out, "\"step\" is not an integer >= 0"));
    assert_int_equal(rk_count(out, "healed at step 0 from replica_9"), 4);
    assert_int_equal(rk_count(out, "reports an error: chatty"), 4);
    /* well-formed events are not echoed (no --show-events) */
    assert_null(strstr(out, "\"kind\":\"result\""));
    assert_null(strstr(out, "from-the-future"));
    assert_null(strstr(out, "\033["));
    rk_free(&p);
}

/* --quiet keeps rank output back, but --show-events still prints the
 * events, each prefixed, when both are given. */
static void quiet_shows_asked_events(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("quietevents", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("1"), T("--quiet"),
                        T("--show-events"), NULL};
    char *trainer[] = {T("--steps"), T("3"), T("--chatter"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 20000), 0);
    assert_null(strstr(p.text, "[r0.0] hello"));
    assert_non_null(strstr(p.text, "[r0.0] FTC_EVENT {\"kind\":\"result\""));
    rk_free(&p);
}

static void summary_json(const char *name, const char *extra, int identical)
{
    char dir[4096];
    rk_dir(name, dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("3"),      T("--ranks"), T("2"),
                        T("--job"),      T("sumjob"), T("--seed"),  T("7"),
                        T("--quiet"),    NULL};
    char *trainer[] = {T("--steps"), T("12"), T(extra), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, NULL);
    assert_int_equal(rk_wait(&p, 20000), 0);
    /* --quiet: no rank output, the summary table still */
    assert_null(strstr(p.text, "[r0.0] hello"));
    assert_non_null(strstr(p.text, "ftc run summary: job sumjob, 3 x 2"));
    assert_non_null(strstr(p.text, identical ? "checksums: identical"
                                             : "checksums: NOT identical"));
    json_t *s = rk_job_summary(dir);
    assert_string_equal(rk_str(s, "job"), "sumjob");
    assert_string_equal(rk_str(s, "outcome"), "finished");
    assert_string_equal(rk_str(s, "lighthouse"), "127.0.0.1:1");
    assert_int_equal(rk_int(s, "exit_code"), 0);
    assert_int_equal(rk_int(s, "replicas"), 3);
    assert_int_equal(rk_int(s, "ranks"), 2);
    assert_int_equal(rk_int(s, "seed"), 7);
    assert_int_equal(rk_int(s, "steps_committed"), 12);
    assert_int_equal(rk_int(s, "failures_injected"), 0);
    assert_int_equal(rk_int(s, "failures_total"), 0);
    assert_int_equal(json_array_size(json_object_get(s, "failures")), 0);
    assert_true(rk_int(s, "duration_ms") > 0);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(s, "command"), 0)),
        rk_trainer());
    assert_true(json_is_object(json_object_get(s, "recovery")));
    assert_int_equal(json_array_size(json_object_get(s, "replica_groups")), 3);
    for (int i = 0; i < 3; i++) {
        json_t *g = rk_group(s, i);
        char id[32];
        snprintf(id, sizeof(id), "replica_%d", i);
        assert_string_equal(rk_str(g, "replica_id"), id);
        assert_string_equal(rk_str(g, "status"), "finished");
        assert_int_equal(rk_int(g, "restarts"), 0);
        assert_int_equal(rk_int(g, "incarnation"), 0);
        assert_int_equal(rk_int(g, "last_step"), 12);
        assert_int_equal(rk_int(g, "committed_steps"), 12);
        /* the fake trainer's loss after 12 steps is 1/13 */
        assert_float_equal(json_real_value(json_object_get(g, "final_loss")),
                           1.0 / 13, 1e-6);
        json_t *sums = json_object_get(g, "rank_checksums");
        assert_int_equal(json_array_size(sums), 2);
        assert_string_equal(rk_str(g, "checksum"),
                            json_string_value(json_array_get(sums, 0)));
        /* --chatter: 2 malformed events, 1 heal, 1 error per rank */
        int chatty = strcmp(extra, "--chatter") == 0;
        assert_int_equal(rk_int(g, "bad_events"), chatty ? 4 : 0);
        assert_int_equal(rk_int(g, "heals"), chatty ? 2 : 0);
        assert_int_equal(rk_int(g, "errors"), chatty ? 2 : 0);
        /* checksums of replica 0 vs this one */
        int same = strcmp(rk_str(g, "checksum"),
                          rk_str(rk_group(s, 0), "checksum")) == 0;
        assert_int_equal(same, i == 0 || identical);
    }
    assert_int_equal(json_is_true(json_object_get(s, "checksums_identical")),
                     identical);
    json_decref(s);
    rk_free(&p);
}

static void summary_identical(void **state)
{
    (void)state;
    summary_json("same", "--chatter", 1);
}

static void summary_different(void **state)
{
    (void)state;
    summary_json("different", "--distinct-checksum", 0);
}

/* Without --lighthouse the launcher serves one itself (when the build has
 * ftc/ft.h) and every rank can reach it; builds without say so and fail
 * before starting anything. */
static void embedded_lighthouse(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("lighthouse", dir, sizeof(dir));
    char *args[] = {T("--replicas"), T("2"),       T("--run-dir"), dir, T("--"),
                    T(rk_trainer()), T("--steps"), T("2"),         NULL};
    rk_run p;
    rk_start(&p, args, NULL);
#if defined(__has_include) && __has_include("ftc/ft.h")
    assert_int_equal(rk_wait(&p, 20000), 0);
    assert_non_null(strstr(p.text, "(dashboard http://127.0.0.1:"));
    assert_non_null(strstr(p.text, "a random token made for this job"));
    char v[128], token[128];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rk_seen(dir, i, 0, 0, "lighthouse", v, sizeof(v)), 0);
        assert_string_equal(v, "http");
        /* Closed by default: every rank has the job's token, and the
         * group's store refuses a tokenless client's write. */
        rk_seen(dir, i, 0, 0, "store", v, sizeof(v));
        assert_string_equal(v, "ftc-locked/refused");
        /* A would-be member without the token cannot join the job. */
        rk_seen(dir, i, 0, 0, "lighthouse_write", v, sizeof(v));
        assert_string_equal(v, "401");
        rk_seen(dir, i, 0, 0, "FTC_TOKEN", v, sizeof(v));
        assert_int_equal(strlen(v), 64);
        if (i == 0) {
            snprintf(token, sizeof(token), "%s", v);
        }
        assert_string_equal(v, token);
    }
#else
    assert_int_equal(rk_wait(&p, 20000), 1);
    assert_non_null(strstr(p.text, "no embedded lighthouse; pass "
                                   "--lighthouse HOST:PORT"));
    assert_int_equal(rk_seen_count(dir), 0);
#endif
    rk_free(&p);
}

/* A token from FTC_TOKEN is the job's: the ranks get it, and a
 * tokenless write to the group's store is refused. */
static void token_from_environment(void **state)
{
    (void)state;
    char dir[4096];
    rk_dir("token", dir, sizeof(dir));
    char *launcher[] = {T("--replicas"), T("1"), NULL};
    char *trainer[] = {T("--steps"), T("1"), NULL};
    char *env[] = {T("FTC_TOKEN=run-test-secret"), NULL};
    rk_run p;
    rk_start_job(&p, dir, launcher, trainer, env);
    assert_int_equal(rk_wait(&p, 20000), 0);
    assert_non_null(strstr(p.text, "token from --token-file or FTC_TOKEN"));
    char v[128];
    rk_seen(dir, 0, 0, 0, "FTC_TOKEN", v, sizeof(v));
    assert_string_equal(v, "run-test-secret");
    rk_seen(dir, 0, 0, 0, "store", v, sizeof(v));
    assert_string_equal(v, "ftc-locked/refused");
    rk_free(&p);
}

/* Runs "ftc run ARGS" on a pseudo-terminal; its output into out.
 * Returns its exit code. */
static int run_on_terminal(char *const args[], char *out, size_t cap)
{
    char *argv[32] = {T(rk_ftc()), T("run")};
    for (int i = 0; args[i] != NULL && i < 29; i++) {
        argv[i + 2] = args[i];
    }
    struct winsize ws = {.ws_row = 40, .ws_col = 200};
    int master;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    tk_adopt(pid); /* forkpty's child leads a session, so a group */
    size_t len = 0;
    int64_t end = tk_now_ms() + tk_ms(20000);
    for (;;) {
        struct pollfd pfd = {.fd = master, .events = POLLIN};
        int64_t left = end - tk_now_ms();
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            kill(pid, SIGKILL);
            break;
        }
        ssize_t n = read(master, out + len, cap - 1 - len);
        if (n <= 0) {
            break; /* EIO: the terminal's last writer is gone */
        }
        len += (size_t)n;
    }
    out[len] = '\0';
    close(master);
    int status;
    tk_waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* On a terminal: prefixes coloured per replica, one status line redrawn
 * in place and erased before other lines, and NO_COLOR honoured. */
static void terminal_output(void **state)
{
    (void)state;
    static char out[1 << 20];
    char dir[4096];
    rk_dir("tty", dir, sizeof(dir));
    char *args[] = {T("--replicas"),  T("2"),          T("--lighthouse"),
                    T("127.0.0.1:1"), T("--run-dir"),  dir,
                    T("--"),          T(rk_trainer()), T("--steps"),
                    T("30"),          T("--chatter"),  NULL};
    assert_int_equal(run_on_terminal(args, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "\033[31m[r0.0]\033[0m hello from replica 0"));
    assert_non_null(strstr(out, "\033[32m[r1.0]\033[0m hello from replica 1"));
    assert_non_null(strstr(out, "\r\033[K0."));            /* drawn */
    assert_non_null(strstr(out, "| up 2/2 | failures 0")); /* its text */
    assert_non_null(strstr(out, "\r\033[K\033[3"));        /* erased first */
    setenv("NO_COLOR", "1", 1);
    assert_int_equal(run_on_terminal(args, out, sizeof(out)), 0);
    unsetenv("NO_COLOR");
    assert_non_null(strstr(out, "[r0.0] hello from replica 0"));
    assert_null(strstr(out, "\033[31m"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_errors),
        cmocka_unit_test(env_contract),
        cmocka_unit_test(output_prefixes),
        cmocka_unit_test(quiet_shows_asked_events),
        cmocka_unit_test(summary_identical),
        cmocka_unit_test(summary_different),
        cmocka_unit_test(terminal_output),
        cmocka_unit_test(embedded_lighthouse),
        cmocka_unit_test(token_from_environment),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
