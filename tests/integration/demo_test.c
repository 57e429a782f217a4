/* The example trainers end to end under `ftc demo`: train_ddp and
 * train_diloco, 3 replica groups x 2 ranks, at least five kill -9s of a
 * replica group at steps drawn from a fixed seed. Every step commits,
 * every rank of every replica ends with the same parameters (checksums
 * read from the launcher's summary, not the demo's verdict), each victim
 * came back, and the final loss is within the stated tolerance of a
 * fault-free run of the same steps. argv[1] is the ftc binary, argv[2]
 * the train_ddp binary (train_diloco is next to it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_kit.h"
#include "testkit.h"

#define T(x) ((char *)(x))

/* Every group finished, and for each group rank the checksums of all
 * groups are equal (and reported). */
static void assert_identical_replicas(json_t *job, int replicas, int ranks)
{
    json_t *groups = json_object_get(job, "replica_groups");
    assert_int_equal(json_array_size(groups), replicas);
    json_t *first =
        json_object_get(json_array_get(groups, 0), "rank_checksums");
    for (int g = 0; g < replicas; g++) {
        json_t *grp = json_array_get(groups, (size_t)g);
        assert_string_equal(rk_str(grp, "status"), "finished");
        json_t *sums = json_object_get(grp, "rank_checksums");
        assert_int_equal(json_array_size(sums), ranks);
        for (int r = 0; r < ranks; r++) {
            const char *a = json_string_value(json_array_get(first, r));
            const char *b = json_string_value(json_array_get(sums, r));
            assert_non_null(b);
            assert_string_equal(a, b);
        }
    }
}

static double final_loss(json_t *job)
{
    json_t *g = json_array_get(json_object_get(job, "replica_groups"), 0);
    return json_number_value(json_object_get(g, "final_loss"));
}

static void survives_kills(const char *algo, const char *trainer,
                           const char *steps, const char *pace,
                           const char *kills, double tolerance)
{
    char dir[4096], json[4200];
    char name[32];
    snprintf(name, sizeof(name), "demo-%s", algo);
    rk_dir(name, dir, sizeof(dir));
    snprintf(json, sizeof(json), "%s/demo.json", dir);
    char *args[] = {T("--algo"),
                    T(algo),
                    T("--trainer"),
                    T(trainer),
                    T("--steps"),
                    T(steps),
                    T("--pace-ms"),
                    T(pace),
                    T("--kills"),
                    T(kills),
                    T("--seed"),
                    T("11"),
                    T("--summary-json"),
                    json,
                    NULL};
    rk_run p;
    rk_start_cli(&p, "demo", args, NULL);
    int rc = rk_wait(&p, 300000);
    if (rc != 0) {
        fprintf(stderr, "%s\n", p.text);
    }
    assert_int_equal(rc, 0);
    assert_non_null(strstr(p.text, "result               PASS"));
    json_t *d = rk_summary(json);
    assert_true(json_is_true(json_object_get(d, "pass")));
    json_t *ref = json_object_get(d, "reference");
    json_t *ft = json_object_get(d, "faulted");
    json_int_t want = strtol(steps, NULL, 10);
    assert_int_equal(rk_int(ref, "steps_committed"), want);
    assert_int_equal(rk_int(ft, "steps_committed"), want);
    assert_int_equal(rk_int(ref, "failures_total"), 0);
    json_int_t n = rk_int(ft, "failures_injected");
    assert_true(n >= 5);
    assert_int_equal(rk_int(ft, "failures_total"), n);
    for (json_int_t i = 0; i < n; i++) {
        json_t *f = rk_failure(ft, (int)i);
        assert_string_equal(rk_str(f, "kind"), "kill");
        /* the others went on, and the victim came back and committed */
        assert_true(
            json_is_integer(json_object_get(f, "survivors_recovery_ms")));
        assert_true(json_is_integer(json_object_get(f, "victim_recovery_ms")));
    }
    assert_identical_replicas(ref, 3, 2);
    assert_identical_replicas(ft, 3, 2);
    double a = final_loss(ft), b = final_loss(ref);
    printf("%s: %lld kills, final loss %.4f vs %.4f fault-free (%+.2f%%)\n",
           trainer, (long long)n, a, b, 100.0 * (a - b) / b);
    assert_true(isfinite(a) && isfinite(b));
    assert_true(fabs(a - b) <= tolerance * b);
    json_decref(d);
    rk_free(&p);
}

static void ddp_survives_kills(void **state)
{
    (void)state;
    survives_kills("ddp", rk_trainer(), "500", "8", "6", 0.05);
}

/* Another example binary, next to train_ddp. */
static void sibling(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s", rk_trainer());
    char *at = strstr(path, "train_ddp");
    assert_non_null(at);
    snprintf(at, cap - (size_t)(at - path), "%s", name);
}

static void diloco_survives_kills(void **state)
{
    (void)state;
    char diloco[4096];
    sibling("train_diloco", diloco, sizeof(diloco));
    survives_kills("diloco", diloco, "120", "3", "5", 0.15);
}

/* The README's example, run as the README runs it: it trains to its
 * target on every replica through three kills, and the summary has its
 * steps, recoveries and checksums from the manager alone (ft_minimal
 * prints no FTC_EVENT line). */
static void readme_example_trains(void **state)
{
    (void)state;
    char minimal[4096], dir[4096], summary[4200];
    sibling("ft_minimal", minimal, sizeof(minimal));
    rk_dir("readme", dir, sizeof(dir));
    snprintf(summary, sizeof(summary), "%s/summary.json", dir);
    char *args[] = {T("--replicas"),
                    T("3"),
                    T("--kill-at-steps"),
                    T("50,100,150"),
                    T("--summary-json"),
                    summary,
                    T("--"),
                    minimal,
                    NULL};
    rk_run p;
    rk_start(&p, args, NULL);
    assert_int_equal(rk_wait(&p, 60000), 0);
    assert_int_equal(
        rk_count(p.text, "w = 1.000 2.000 3.000 4.000 after 200 steps"), 3);
    assert_int_equal(rk_count(p.text, "FTC_EVENT"), 0); /* not printed */
    json_t *s = rk_summary(summary);
    assert_int_equal(rk_int(s, "steps_committed"), 200);
    assert_int_equal(rk_int(s, "failures_injected"), 3);
    for (int i = 0; i < 3; i++) {
        assert_true(rk_int(rk_failure(s, i), "survivors_recovery_ms") >= 0);
        assert_true(rk_int(rk_failure(s, i), "victim_recovery_ms") > 0);
    }
    int restarts = 0, heals = 0;
    for (int g = 0; g < 3; g++) {
        json_t *grp = rk_group(s, g);
        assert_int_equal(rk_int(grp, "last_step"), 200);
        assert_true(rk_int(grp, "committed_steps") > 0);
        assert_non_null(json_string_value(json_object_get(grp, "checksum")));
        restarts += (int)rk_int(grp, "restarts");
        heals += (int)rk_int(grp, "heals");
    }
    assert_int_equal(restarts, 3);
    assert_true(heals >= 3); /* each victim healed (init_sync heals too) */
    assert_string_equal(rk_str(s, "checksums_from"), "manager");
    assert_true(json_is_true(json_object_get(s, "checksums_identical")));
    json_decref(s);
    rk_free(&p);
}

static void bad_options(void **state)
{
    (void)state;
    char *args[] = {T("--algo"), T("sgd"), NULL};
    rk_run p;
    rk_start_cli(&p, "demo", args, NULL);
    assert_int_equal(rk_wait(&p, 30000), 2);
    assert_non_null(strstr(p.text, "--algo is ddp or diloco, not sgd"));
    rk_free(&p);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_options),
        cmocka_unit_test(readme_example_trains),
        cmocka_unit_test(ddp_survives_kills),
        cmocka_unit_test(diloco_survives_kills),
    };
    int left = rk_init(argc, argv);
    if (left < 0) {
        return 2;
    }
    return tk_main(left, argv, NULL, 0, tests);
}
