/* `ftc bench store` runs end to end (a smoke test, not a measurement): its
 * JSON lines have every field, for processes and threads, against its own
 * embedded server. argv[1] is the ftc binary. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "testkit.h"

static const char *cli_path;

/* Runs the bench with extra arguments and checks one row per op. */
static void bench_rows(const char *extra, const char *mode)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "%s bench store --clients 3 --value-bytes 100 --duration 0.2 "
             "--rounds 5 --json %s",
             cli_path, extra);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    const char *ops[] = {"set", "get", "add", "barrier"};
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof(line), p) != NULL) {
        json_error_t err;
        json_t *r = json_loads(line, 0, &err);
        if (r == NULL) {
            fail_msg("not JSON: %s", line);
        }
        assert_true(rows < 4);
        assert_string_equal(json_string_value(json_object_get(r, "op")),
                            ops[rows]);
        assert_int_equal(json_integer_value(json_object_get(r, "clients")), 3);
        assert_int_equal(json_integer_value(json_object_get(r, "value_bytes")),
                         rows < 2 ? 100 : 0);
        assert_true(json_number_value(json_object_get(r, "ops_per_s")) > 0);
        double p50 = json_number_value(json_object_get(r, "p50_us"));
        double p99 = json_number_value(json_object_get(r, "p99_us"));
        assert_true(p50 > 0 && p99 >= p50);
        assert_string_equal(json_string_value(json_object_get(r, "mode")),
                            mode);
        json_decref(r);
        rows++;
    }
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(rows, 4);
}

static void bench_with_processes(void **state)
{
    (void)state;
    bench_rows("--procs", "procs");
}

static void bench_with_threads(void **state)
{
    (void)state;
    bench_rows("--threads", "threads");
}

static void bench_rejects_bad_options(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s bench store --ops nope 2>/dev/null",
             cli_path);
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
}

int main(int argc, char **argv)
{
    cli_path = argc > 1 ? argv[1] : "ftc";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_with_processes),
        cmocka_unit_test(bench_with_threads),
        cmocka_unit_test(bench_rejects_bad_options),
    };
    return tk_main(1, argv, NULL, 0, tests);
}
