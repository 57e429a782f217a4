/* The kit's promise: a test that fails (an assert inside a cmocka test, or
 * a failure outside one, which exits) leaves no child running, nor any
 * process of the child's group. Each failing test runs in a process of its
 * own (a role) so this test can watch what it leaves. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testkit.h"

/* A bound on the sleepers' lives should the kit fail to kill them. */
#define TKT_SLEEP_S 60

static const char *pid_file;

/* The child: forks a grandchild into its own process group (a plain
 * fork, without PR_SET_PDEATHSIG, so only a group kill ends it), writes
 * both pids and sleeps. */
static int role_group(int argc, char **argv)
{
    (void)argc;
    pid_t grandchild = fork();
    if (grandchild == 0) {
        alarm(TKT_SLEEP_S);
        for (;;) {
            pause();
        }
    }
    FILE *f = fopen(argv[1], "w");
    if (f == NULL || grandchild < 0) {
        return 2;
    }
    fprintf(f, "%d %d\n", (int)getpid(), (int)grandchild);
    fclose(f);
    alarm(TKT_SLEEP_S);
    for (;;) {
        pause();
    }
}

/* Starts the child group and waits for its pids. */
static void start_group(void)
{
    tk_child c;
    char *args[] = {(char *)pid_file, NULL};
    tk_spawn(&c, "group", args, NULL);
    TK_WAIT_UNTIL(access(pid_file, F_OK) == 0, 10000);
    tk_pause_ms(20); /* the line is written right after the file appears */
}

static void spawn_then_fail(void **state)
{
    (void)state;
    start_group();
    fail_msg("failing on purpose, with a child group running");
}

/* A cmocka run whose only test fails an assert. */
static int role_fail_assert(int argc, char **argv)
{
    (void)argc;
    pid_file = argv[1];
    const struct CMUnitTest failing[] = {cmocka_unit_test(spawn_then_fail)};
    return tk_run_group(failing, NULL, NULL);
}

/* A failure outside any test: cmocka exits. */
static int role_fail_exit(int argc, char **argv)
{
    (void)argc;
    pid_file = argv[1];
    start_group();
    fail_msg("failing on purpose outside a test");
    return 0;
}

/* Whether pid is gone: reaps it if it became our zombie (this process is
 * the subreaper of orphans below it), then asks kill(pid, 0). */
static int gone(pid_t pid)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static void expect_no_survivors(const char *role)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.pids", tk_tmpdir(), role);
    char *args[] = {path, NULL};
    tk_child c;
    tk_spawn(&c, role, args, NULL);
    assert_int_equal(tk_reap(&c, 1, 20000), 0);
    assert_int_not_equal(tk_exit_code(&c), 0);

    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int child = 0, grandchild = 0;
    assert_int_equal(fscanf(f, "%d %d", &child, &grandchild), 2);
    fclose(f);
    assert_true(child > 0 && grandchild > 0);
    TK_WAIT_UNTIL(gone(child) && gone(grandchild), 5000);
}

static void failed_assert_kills_child_group(void **state)
{
    (void)state;
    expect_no_survivors("fail-assert");
}

static void exit_kills_child_group(void **state)
{
    (void)state;
    expect_no_survivors("fail-exit");
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"group", role_group},
                             {"fail-assert", role_fail_assert},
                             {"fail-exit", role_fail_exit}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failed_assert_kills_child_group),
        cmocka_unit_test(exit_kills_child_group),
    };
    /* Orphans of the roles come to this process, which reaps them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return tk_main(argc, argv, roles, 3, tests);
}
