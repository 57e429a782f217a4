/* The manager across real processes on loopback: replica groups of
 * several ranks training in lockstep, a commit failure on one replica, a
 * lighthouse restarted under them, a lighthouse that never answers,
 * shrink_only keeping a newcomer out, and a new replica joining mid-run.
 * Each ends with every replica's state bit-identical and every step
 * committed exactly once per replica line (ft_kit.c). */
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft_kit.h"
#include "lighthouse_kit.h"

static void healthy_3x2(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 2, 30, 3);
    for (int g = 0; g < 3; g++) {
        ftk_spawn(&j, g, NULL);
    }
    ftk_finish(&j, 120000);
    /* Every replica committed every step, none failed; at step 0 the
     * replicas that did not hold the primary's state healed from it. */
    for (int g = 0; g < 3; g++) {
        for (int r = 0; r < 2; r++) {
            assert_int_equal(ftk_count(&j, g, 0, r, "commit "), 30);
            assert_int_equal(ftk_count(&j, g, 0, r, "fail "), 0);
        }
    }
    int heals = 0;
    for (int g = 0; g < 3; g++) {
        heals += ftk_count(&j, g, 0, 0, "heal 0 ");
    }
    assert_int_equal(heals, 2);
    int64_t t1 = ftk_first_commit_after(&j, 0, 1, 0);
    int64_t t29 = ftk_first_commit_after(&j, 0, 29, 0);
    printf("healthy 3x2: steps 1-29 took %.2f ms each (quorum, allreduce "
           "of %d floats, vote)\n",
           (double)(t29 - t1) / 28 / 1e6, j.floats);
    ftk_stop(&j);
}

/* A replica that reports an error before the step's allreduce aborts
 * it for every replica (its data may be bad): all vote no and the step is
 * retried. One that reports it after the allreduce only fails its own
 * commit: the others commit, and it heals from them. */
static void commit_failures(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 2, 16, 3);
    char *before[] = {"FTK_FAIL_AT=5", NULL};
    char *after[] = {"FTK_FAIL_AFTER=10", NULL};
    ftk_spawn(&j, 0, NULL);
    ftk_spawn(&j, 1, before);
    ftk_spawn(&j, 2, after);
    ftk_finish(&j, 120000);
    for (int g = 0; g < 3; g++) {
        for (int r = 0; r < 2; r++) {
            assert_int_equal(ftk_count(&j, g, 0, r, "fail 5 5 "), 1);
            assert_int_equal(ftk_count(&j, g, 0, r, "commit 5 "), 1);
            assert_int_equal(ftk_count(&j, g, 0, r, "fail 10 10 "), g == 2);
            assert_int_equal(ftk_count(&j, g, 0, r, "heal 11 "), g == 2);
        }
    }
    ftk_stop(&j);
}

/* Checks the commits of rank r of group g (first incarnation) around a
 * lighthouse outage from t_down to t_up: before it they carry the old
 * epoch in their quorum ids; during it at most one (the step whose quorum
 * was decided before), still of the old epoch; after it the new epoch.
 * Returns how many came after. */
static int commits_around(const ftk_job *j, int g, int r, int64_t t_down,
                          int64_t t_up, uint32_t old_epoch, uint32_t new_epoch)
{
    char path[256], line[512];
    ftk_log_path(j, g, 0, r, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int during = 0, after = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        long long s, q, p, t;
        if (sscanf(line, "commit %lld %lld %lld %lld", &s, &q, &p, &t) != 4) {
            continue;
        }
        uint32_t epoch = (uint32_t)((uint64_t)q >> 32);
        if (t > t_up) {
            after++;
        } else {
            during += t > t_down;
        }
        if (epoch != (t > t_up ? new_epoch : old_epoch)) {
            fail_msg("group %d rank %d: step %lld committed in quorum %lld "
                     "(epoch %u), expected epoch %u",
                     g, r, s, q, epoch, t > t_up ? new_epoch : old_epoch);
        }
    }
    fclose(f);
    assert_true(during <= 1);
    return after;
}

/* The lighthouse is down for over a second while training runs, then a
 * new one starts on the same port: the managers reconnect (their calls
 * retry with backoff), and training goes on in quorums of the new epoch
 * with every step committed exactly once. */
static void lighthouse_restart(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 2, 2, 40, 2);
    ftk_spawn(&j, 0, NULL);
    ftk_spawn(&j, 1, NULL);
    ftk_wait_commit(&j, 0, 10, 60000);
    uint32_t old_epoch = (uint32_t)lt_status_int(j.lh_addr, "ftk", "epoch");
    int64_t t_down = ftk_now_ns();
    ftk_stop_lighthouse(&j);
    /* The outage itself, not a synchronisation: the ranks keep training
     * into it and find nobody at the address. */
    int64_t up_at = tk_now_ms() + 1000;
    while (tk_now_ms() < up_at) {
        tk_pause_ms(20);
    }
    int64_t t_up = ftk_now_ns();
    ftk_restart_lighthouse(&j);
    ftk_finish(&j, 120000);
    uint32_t new_epoch = (uint32_t)lt_status_int(j.lh_addr, "ftk", "epoch");
    assert_int_not_equal(new_epoch, old_epoch);
    for (int g = 0; g < 2; g++) {
        for (int r = 0; r < 2; r++) {
            assert_true(commits_around(&j, g, r, t_down, t_up, old_epoch,
                                       new_epoch) > 0);
        }
    }
    int64_t t1 = ftk_first_commit_after(&j, 0, 0, t_up);
    printf("lighthouse down %.0f ms: next commit %.1f ms after it came back "
           "(epoch %u -> %u)\n",
           (double)(t_up - t_down) / 1e6, (double)(t1 - t_up) / 1e6, old_epoch,
           new_epoch);
    ftk_stop(&j);
}

/* No lighthouse at the address: the leader's call fails at the quorum
 * timeout, and both ranks of the group get the error (torchft's other
 * ranks hang there). */
static void lighthouse_call_failing(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 1, 2, 5, 1);
    char *env[] = {"FTC_LIGHTHOUSE=127.0.0.1:1", "FTK_QUORUM_TIMEOUT_MS=1500",
                   "FTK_EXPECT_QUORUM_TIMEOUT=1", NULL};
    int64_t t0 = tk_now_ms();
    ftk_spawn(&j, 0, env);
    tk_reap(j.child[0][0], 2, 60000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(tk_exit_code(&j.child[0][0][r]), 0);
        assert_int_equal(ftk_count(&j, 0, 0, r, "expected FTC_ETIMEDOUT "), 1);
    }
    printf("lighthouse unreachable: both ranks failed the round after %lld "
           "ms (quorum timeout 1500 ms)\n",
           (long long)(tk_now_ms() - t0));
    ftk_stop(&j);
}

/* While the members ask shrink_only (until step 12), a newcomer waits;
 * then it is admitted, heals and trains. */
static void shrink_only_keeps_newcomers_out(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 1, 24, 2);
    /* The members wait at step 6 until the newcomer asked to join, so
     * that it is there while they still ask shrink_only. */
    char *members[] = {"FTK_SHRINK_UNTIL=12", "FTK_GATE_AT=6", NULL};
    ftk_spawn(&j, 0, members);
    ftk_spawn(&j, 1, members);
    ftk_wait_commit(&j, 0, 5, 60000);
    ftk_spawn(&j, 2, NULL);
    ftk_wait_participant(&j, 2, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 120000);
    /* Its first heal is to a step the others reached once they stopped
     * asking shrink_only. */
    char path[256];
    ftk_log_path(&j, 2, 0, 0, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long long healed = -1;
    char line[512];
    while (healed < 0 && fgets(line, sizeof(line), f) != NULL) {
        sscanf(line, "heal %lld", &healed);
    }
    fclose(f);
    assert_int_equal(healed, 12);
    ftk_stop(&j);
}

/* A third replica joins a running job: it heals from the others and from
 * then on commits with them. */
static void upscale(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 2, 30, 2);
    char *members[] = {"FTK_GATE_AT=10", NULL};
    ftk_spawn(&j, 0, members);
    ftk_spawn(&j, 1, members);
    ftk_wait_commit(&j, 0, 9, 60000);
    ftk_spawn(&j, 2, NULL);
    ftk_wait_participant(&j, 2, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 120000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(ftk_count(&j, 2, 0, r, "heal 10 "), 1);
        assert_int_equal(ftk_count(&j, 2, 0, r, "commit "), 30 - 10);
    }
    ftk_stop(&j);
}

/* Fixed world size with spares: of three up-to-date replicas two
 * participate (min_replica_size 2); the third runs every step on zeros,
 * commits it and ends identical, ready to replace a lost one. */
static void spares(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 3, 1, 12, 3);
    char *env[] = {"FTK_SPARES=1", "FTC_MIN_REPLICA_SIZE=2", NULL};
    for (int g = 0; g < 3; g++) {
        ftk_spawn(&j, g, env);
    }
    ftk_finish(&j, 120000);
    for (int g = 0; g < 3; g++) {
        assert_int_equal(ftk_count(&j, g, 0, 0, "commit "), 12);
    }
    /* Every commit counted two participants: "commit s q 2 t". */
    char path[256], line[512];
    ftk_log_path(&j, 2, 0, 0, path, sizeof(path));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        long long s, q, p;
        if (sscanf(line, "commit %lld %lld %lld", &s, &q, &p) == 3) {
            assert_int_equal(p, 2);
        }
    }
    fclose(f);
    ftk_stop(&j);
}

/* What rank r of incarnation i of group g logged after `prefix` (its
 * first such line), waited for up to 10 s. */
static void logged_in(const ftk_job *j, int g, int i, int r, const char *prefix,
                      char *buf, size_t cap)
{
    char path[256], line[512];
    ftk_log_path(j, g, i, r, path, sizeof(path));
    buf[0] = '\0';
    int64_t end = tk_now_ms() + tk_ms(10000);
    while (buf[0] == '\0' && tk_now_ms() < end) {
        FILE *f = fopen(path, "r");
        while (f != NULL && buf[0] == '\0' &&
               fgets(line, sizeof(line), f) != NULL) {
            if (strncmp(line, prefix, strlen(prefix)) == 0) {
                snprintf(buf, cap, "%.*s",
                         (int)strcspn(line, "\n") - (int)strlen(prefix),
                         line + strlen(prefix));
            }
        }
        if (f != NULL) {
            fclose(f);
        }
        tk_pause_ms(10);
    }
    if (buf[0] == '\0') {
        fail_msg("group %d incarnation %d rank %d logged no '%s' line", g, i, r,
                 prefix);
    }
}

/* The rest of the first line of group g's first incarnation's rank r
 * that starts with prefix, waited for. */
static void logged(const ftk_job *j, int g, int r, const char *prefix,
                   char *buf, size_t cap)
{
    logged_in(j, g, 0, r, prefix, buf, cap);
}

/* Replica group 0 advertises 127.0.0.2 (FTC_ADVERTISE_HOST), another
 * loopback address: the lighthouse shows it as the member's address and
 * each rank's healing address, its healing servers listen there only,
 * and group 1, joining late, heals through it (group 0 is its only
 * source). */
static void advertised_address_heals(void **state)
{
    (void)state;
    ftk_job j;
    ftk_start(&j, 2, 2, 20, 1);
    char *src[] = {"FTC_ADVERTISE_HOST=127.0.0.2", "FTK_GATE_AT=8", NULL};
    ftk_spawn(&j, 0, src);
    ftk_wait_commit(&j, 0, 7, 60000);
    char id[256], heal[2][128];
    ftk_replica_id(&j, 0, id, sizeof(id), 10000);
    for (int r = 0; r < 2; r++) {
        logged(&j, 0, r, "healing ", heal[r], sizeof(heal[r]));
        assert_int_equal(strncmp(heal[r], "127.0.0.2:", 10), 0);
        /* Nothing of it listens on 127.0.0.1. */
        char other[160];
        snprintf(other, sizeof(other), "127.0.0.1:%s", heal[r] + 10);
        assert_int_equal(
            lt_http(other, "GET", "/v1/heal/0/meta", NULL, NULL, NULL), 0);
    }
    json_t *st = lt_get_json(j.lh_addr, "/v1/jobs/ftk/status");
    json_t *members = json_object_get(json_object_get(st, "quorum"), "members");
    assert_int_equal(json_array_size(members), 1);
    json_t *m = json_array_get(members, 0);
    assert_string_equal(json_string_value(json_object_get(m, "replica_id")),
                        id);
    char want[160];
    snprintf(want, sizeof(want), "http://%s", heal[0]);
    assert_string_equal(json_string_value(json_object_get(m, "address")), want);
    json_t *data_heal = json_object_get(json_object_get(m, "data"), "heal");
    for (int r = 0; r < 2; r++) {
        assert_string_equal(
            json_string_value(json_array_get(data_heal, (size_t)r)), heal[r]);
    }
    json_decref(st);
    ftk_spawn(&j, 1, NULL);
    ftk_wait_participant(&j, 1, 60000);
    ftk_open_gate(&j);
    ftk_finish(&j, 120000);
    char healed[2][512];
    for (int r = 0; r < 2; r++) {
        logged(&j, 1, r, "heal 8 ", healed[r], sizeof(healed[r]));
        assert_int_equal(strncmp(healed[r], id, strlen(id)), 0);
        assert_int_equal(ftk_count(&j, 1, 0, r, "heal "), 1);
    }
    ftk_stop(&j);
}

/* With a token, the lighthouse's operator can kill a replica: both its
 * ranks learn it from their own watch and stop (start_quorum returns
 * FTC_ECANCELED), the other trains on alone. The token also guards the
 * lighthouse calls, the healing servers and the process groups. */
static void operator_kill_with_token(void **state)
{
    (void)state;
    ftk_job j;
    /* Both start together (min_replicas 2); once the victim is gone the
     * other must go on alone. */
    ftk_start(&j, 2, 2, 30, 2);
    ftk_set_token(&j, "s3cret-token");
    char *tok[] = {"FTC_TOKEN=s3cret-token", "FTK_GATE_AT=10", NULL};
    ftk_spawn(&j, 0, tok);
    ftk_spawn(&j, 1, tok);
    ftk_wait_commit(&j, 1, 9, 60000);
    TK_OK(ftc_lighthouse_configure_job(j.lh, "ftk:min_replicas=1"));
    char id[256], path[512];
    ftk_replica_id(&j, 1, id, sizeof(id), 10000);
    snprintf(path, sizeof(path), "/v1/jobs/ftk/replicas/%s/kill", id);
    assert_int_equal(lt_http(j.lh_addr, "POST", path, "", NULL, NULL), 401);
    assert_int_equal(lt_http(j.lh_addr, "POST", path, "", "s3cret-token", NULL),
                     200);
    ftk_open_gate(&j);
    ftk_reap_dead(&j, 1, 60000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(tk_exit_code(&j.child[1][0][r]), 0);
        assert_int_equal(ftk_count(&j, 1, 0, r, "killed "), 1);
    }
    ftk_finish(&j, 120000);
    ftk_stop(&j);
}

/* Whether a connection from `from` to addr is closed by the server before
 * it says a word (refused at accept) rather than answered. */
static bool refused_at_once(const char *from, const char *addr)
{
    int fd = lt_connect_from(from, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    bool refused = poll(&p, 1, (int)tk_ms(5000)) == 1 &&
                   recv(fd, &c, 1, MSG_DONTWAIT) == 0;
    close(fd);
    return refused;
}

/* Slowloris on the surviving replica's healing server while the other is
 * killed and comes back: 320 held-open connections from 20 addresses (as
 * from other hosts) fill every slot those may take, yet the victim, which
 * the lighthouse's quorum names as healing from it, is admitted, heals
 * and trains on, and the job ends bit-identical. (Before admission it
 * waited out the flood's idle timeout, 30 s.) */
static void slowloris_on_a_heal_server_during_a_kill(void **state)
{
    (void)state;
    enum { FROM = 20, EACH = 16 };
    ftk_job j;
    ftk_start(&j, 2, 1, 30, 2);
    ftk_set_token(&j, "s3cret-token");
    char *gated[] = {"FTC_TOKEN=s3cret-token", "FTK_GATE_AT=10", NULL};
    ftk_spawn(&j, 0, gated);
    ftk_spawn(&j, 1, gated);
    ftk_wait_commit(&j, 0, 9, 60000);
    ftk_wait_commit(&j, 1, 9, 60000);
    ftk_kill(&j, 1);
    char heal[128];
    logged(&j, 0, 0, "healing ", heal, sizeof(heal));
    int fds[FROM * EACH];
    for (int a = 0; a < FROM; a++) {
        char from[32];
        snprintf(from, sizeof(from), "127.0.0.%d", 2 + a);
        for (int i = 0; i < EACH; i++) {
            fds[a * EACH + i] = lt_connect_from(from, heal, "GET /v1/heal/1");
        }
    }
    /* The flood holds every slot a stranger may take. */
    TK_WAIT_UNTIL(refused_at_once("127.0.0.250", heal), 20000);
    char *tok[] = {"FTC_TOKEN=s3cret-token", NULL};
    ftk_spawn(&j, 1, tok);
    ftk_wait_participant(&j, 1, 60000);
    ftk_open_gate(&j);
    /* Healed well inside the flood's 30 s idle timeout. */
    TK_WAIT_UNTIL(ftk_count(&j, 1, 1, 0, "heal ") == 1, 15000);
    char healed[256];
    logged_in(&j, 1, 1, 0, "heal ", healed, sizeof(healed));
    print_message("the victim healed (step, source, seconds): %s\n", healed);
    for (int i = 0; i < FROM * EACH; i++) {
        close(fds[i]);
    }
    ftk_finish(&j, 120000);
    ftk_stop(&j);
}

/* The launcher and the manager together: `ftc run` starts 3 groups of 2
 * ranks of this test's trainer (it takes everything from the launcher's
 * environment), kills a group at two committed steps and restarts it; the
 * job finishes with every rank's final checksum identical across the
 * groups (the launcher compares the ranks' "result" events). */
static void launched_by_ftc_run(void **state)
{
    (void)state;
    char summary[512];
    snprintf(summary, sizeof(summary), "%s/summary.json", tk_tmpdir());
    /* Long enough for a restarted group to be back before the others
     * finish (nothing holds them back here). */
    char *argv[] = {FTC_CLI_PATH,      "run",
                    "--replicas",      "3",
                    "--ranks",         "2",
                    "--min-replicas",  "2",
                    "--kill-at-steps", "50,150",
                    "--seed",          "7",
                    "--env",           "FTK_STEPS=400",
                    "--env",           "FTK_FLOATS=100000",
                    "--quiet",         "--summary-json",
                    summary,           "--",
                    (char *)tk_self(), "--tk-role",
                    "ftk-rank",        NULL};
    tk_child c;
    tk_spawn_cmd(&c, argv, NULL);
    assert_int_equal(tk_reap(&c, 1, 180000), 0);
    assert_int_equal(tk_exit_code(&c), 0);
    json_error_t e;
    json_t *j = json_load_file(summary, 0, &e);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "outcome")),
                        "finished");
    assert_int_equal(json_integer_value(json_object_get(j, "steps_committed")),
                     400);
    assert_int_equal(
        json_integer_value(json_object_get(j, "failures_injected")), 2);
    assert_true(json_is_true(json_object_get(j, "checksums_identical")));
    json_t *groups = json_object_get(j, "replica_groups");
    int heals = 0;
    for (size_t g = 0; g < json_array_size(groups); g++) {
        heals += (int)json_integer_value(
            json_object_get(json_array_get(groups, g), "heals"));
    }
    assert_true(heals >= 2); /* each restarted incarnation healed */
    json_decref(j);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {FTK_ROLES};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(healthy_3x2),
        cmocka_unit_test(commit_failures),
        cmocka_unit_test(lighthouse_restart),
        cmocka_unit_test(lighthouse_call_failing),
        cmocka_unit_test(shrink_only_keeps_newcomers_out),
        cmocka_unit_test(upscale),
        cmocka_unit_test(spares),
        cmocka_unit_test(advertised_address_heals),
        cmocka_unit_test(operator_kill_with_token),
        cmocka_unit_test(slowloris_on_a_heal_server_during_a_kill),
        cmocka_unit_test(launched_by_ftc_run),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
