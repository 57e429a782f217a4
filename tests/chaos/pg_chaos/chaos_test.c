/* Process-group failures between real processes: a rank killed with
 * SIGKILL mid-allreduce, a rank stopped with SIGSTOP, a connection shut
 * down under a running allreduce. Every survivor must fail with the
 * expected code and a message naming the failed rank (and its address),
 * within a bound far below the operation timeout where the failure is
 * detectable at once; then the survivors rebuild a group on a new name and
 * run an allreduce on it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/tcp/tcp.h"
#include "pg_kit.h"

/* Exit codes of a member. */
enum {
    OK = 0,
    WRONG_ERROR = 3,
    NO_ERROR = 4,
    REBUILD_FAILED = 5,
    SEGMENT_LEFT = 6
};

static const char *scenario;

static void mark_ready(const char *dir, int rank)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/ready.%s.%d", dir, scenario, rank);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fclose(f);
    }
}

static bool is_ready(const char *dir, int rank)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/ready.%s.%d", dir, scenario, rank);
    return access(path, F_OK) == 0;
}

/* Survivors rebuild without the failed rank on a fresh name. */
static int rebuild(const char *store, int rank, int n, int gone)
{
    int r = rank < gone ? rank : rank - 1;
    char name[64];
    snprintf(name, sizeof(name), "%s-rebuilt", scenario);
    ftc_pg *pg = NULL;
    int rc = pgt_create(store, name, r, n - 1, NULL, &pg);
    if (rc == 0) {
        rc = pgt_check(pg, PGT_ALLREDUCE, FTC_DTYPE_F32, FTC_OP_SUM, 100000,
                       FTC_ALGO_AUTO, 0, 99);
    }
    if (rc != 0) {
        fprintf(stderr, "rank %d: rebuild: %s\n", rank, ftc_last_error());
    }
    ftc_pg_destroy(pg);
    return rc == 0 ? OK : REBUILD_FAILED;
}

/* Role: argv dir store n rank victim. Loops allreduces until one fails,
 * checks the failure, then rebuilds. */
static int member(int argc, char **argv)
{
    if (argc < 6) {
        return 2;
    }
    const char *dir = argv[1], *store = argv[2];
    argv++;
    int n = (int)strtol(argv[2], NULL, 10),
        rank = (int)strtol(argv[3], NULL, 10),
        victim = (int)strtol(argv[4], NULL, 10);
    bool stop = strcmp(scenario, "sigstop") == 0;
    bool link = strcmp(scenario, "link") == 0;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    /* Deaths and broken links must be seen at once: a timeout this long
     * would show in the reap bound. A stopped rank is only seen by the
     * timeout, so that one is short. */
    o.timeout_ms = stop ? tk_ms(1500) : tk_ms(120000);
    o.connect_timeout_ms = tk_ms(20000);
    ftc_pg *pg = NULL;
    if (pgt_create(store, scenario, rank, n, &o, &pg) != 0) {
        fprintf(stderr, "rank %d: create: %s\n", rank, ftc_last_error());
        return 1;
    }
    size_t count = stop ? 1024 : (4u << 20); /* 16 MiB f32: ring */
    float *x = calloc(count, sizeof(float));
    ftc_tensor t = ftc_tensor_cpu(x, count, FTC_DTYPE_F32);
    int rc = 0;
    for (int it = 0; rc == 0; it++) {
        if (it == 3) {
            mark_ready(dir, rank);
        }
        /* Soon after all are ready: the reap bound is for seeing the
         * failure, not for the 16 MiB allreduces before it (slow under
         * TSan). */
        if (link && rank == victim && it == 5) {
            ftc__pg_testing_break_link(pg, (victim + 1) % n);
        }
        ftc_work *w;
        rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
        if (rc == 0) {
            rc = ftc_work_wait(w, tk_ms(180000));
            ftc_work_release(w);
        }
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", ftc_last_error());
    int want = stop ? FTC_ETIMEDOUT : FTC_EPEER;
    char name[32];
    /* The failed rank; for a broken link, each end names the other. */
    int blamed = link && rank == victim ? (victim + 1) % n : victim;
    snprintf(name, sizeof(name), "rank %d (127.0.0.1:", blamed);
    int code = OK;
    if (rc != want || strstr(msg, name) == NULL) {
        fprintf(stderr, "rank %d: got %s: %s\n", rank, ftc_err_name(rc), msg);
        code = WRONG_ERROR;
    }
    /* The failure latches: later calls say the group is unusable. */
    ftc_work *w2 = NULL;
    if (code == OK && (ftc_pg_barrier(pg, NULL, &w2) != rc ||
                       strstr(ftc_last_error(), "unusable") == NULL)) {
        fprintf(stderr, "rank %d: after failure: %s\n", rank, ftc_last_error());
        code = WRONG_ERROR;
    }
    ftc_pg_destroy(pg);
    free(x);
    /* A failed group leaves no shared-memory segment behind. */
    if (code == OK && pgt_lane_segments() != 0) {
        fprintf(stderr, "rank %d: %d lane segments left\n", rank,
                pgt_lane_segments());
        code = SEGMENT_LEFT;
    }
    if (code == OK && !link) {
        code = rebuild(store, rank, n, victim);
    }
    return code;
}

static void run(const char *name, int n, int victim, int signal_no,
                int64_t bound_ms)
{
    scenario = name;
    setenv("PG_CHAOS", name, 1);
    tk_child kids[8];
    char size[16], rank[8][16], vic[16];
    snprintf(size, sizeof(size), "%d", n);
    snprintf(vic, sizeof(vic), "%d", victim);
    for (int r = 0; r < n; r++) {
        snprintf(rank[r], sizeof(rank[r]), "%d", r);
        char *args[] = {
            (char *)tk_tmpdir(), (char *)pgt_store(), size, rank[r], vic, NULL};
        tk_spawn(&kids[r], "member", args, NULL);
    }
    for (int r = 0; r < n; r++) {
        TK_WAIT_UNTIL(is_ready(tk_tmpdir(), r), 30000);
    }
    if (signal_no != 0) {
        tk_signal(&kids[victim], signal_no);
    }
    /* Survivors must finish (error seen, group rebuilt) within the bound;
     * the victim is reaped separately. */
    tk_child survivors[8];
    int ns = 0;
    for (int r = 0; r < n; r++) {
        if (r != victim || signal_no == 0) {
            survivors[ns++] = kids[r];
        }
    }
    int killed = tk_reap(survivors, ns, bound_ms);
    if (signal_no == SIGSTOP) {
        tk_signal(&kids[victim], SIGCONT);
        tk_signal(&kids[victim], SIGKILL);
    }
    if (signal_no != 0) {
        tk_reap(&kids[victim], 1, 10000);
    }
    assert_int_equal(killed, 0);
    for (int i = 0; i < ns; i++) {
        assert_int_equal(tk_exit_code(&survivors[i]), OK);
    }
}

static void kill9_mid_allreduce(void **state)
{
    (void)state;
    run("kill9", 4, 2, SIGKILL, 15000);
}

static void sigstopped_rank_times_out_by_name(void **state)
{
    (void)state;
    run("sigstop", 3, 1, SIGSTOP, 15000);
}

static void broken_link_fails_both_ends(void **state)
{
    (void)state;
    run("link", 3, 1, 0, 15000);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member}};
    scenario = getenv("PG_CHAOS") != NULL ? getenv("PG_CHAOS") : "";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kill9_mid_allreduce),
        cmocka_unit_test(sigstopped_rank_times_out_by_name),
        cmocka_unit_test(broken_link_fails_both_ends),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
