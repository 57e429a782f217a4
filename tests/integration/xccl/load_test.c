/* Loading oneCCL (src/pg/xccl/ccl_api.c) with the real library and with
 * what is not it: a missing file and a library without the symbols
 * (libm.so.6) are FTC_ENOTSUP naming the library and the first missing
 * symbol; a version below 2022.2 is refused; the real one (FTC_CCL_LIBRARY,
 * from scripts/ccl_deps.sh) loads and reports 2022.2 or later; the
 * environment ftc sets never overrides the user's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg/xccl/ccl_api.h"
#include "testkit.h"

static void expect_message(const char *part)
{
    if (strstr(ftc_last_error(), part) == NULL) {
        fail_msg("message '%s' lacks '%s'", ftc_last_error(), part);
    }
}

static void missing_library(void **state)
{
    (void)state;
    ftc__ccl_api api;
    TK_EXPECT(ftc__ccl_api_open("/nonexistent/libccl.so.2", &api), FTC_ENOTSUP);
    expect_message("/nonexistent/libccl.so.2");
    expect_message("FTC_CCL_LIBRARY");
    assert_null(api.handle);
}

static void library_without_symbols(void **state)
{
    (void)state;
    ftc__ccl_api api;
    TK_EXPECT(ftc__ccl_api_open("libm.so.6", &api), FTC_ENOTSUP);
    expect_message("libm.so.6 lacks symbol onecclGetVersion");
    assert_null(api.handle);
}

static void version_too_old(void **state)
{
    (void)state;
    TK_EXPECT(ftc__ccl_version_check(FTC__CCL_VERSION(2022, 1, 2)),
              FTC_ENOTSUP);
    expect_message("2022.1.2 is too old");
    expect_message(">= 2022.2.0");
    TK_OK(ftc__ccl_version_check(20220200));
    TK_OK(ftc__ccl_version_check(FTC__CCL_VERSION(2023, 0, 0)));
}

static void mappings(void **state)
{
    (void)state;
    assert_int_equal(ftc__ccl_dtype(FTC_DTYPE_BF16), FTC__CCL_BFLOAT16);
    assert_int_equal(ftc__ccl_dtype(FTC_DTYPE_I64), FTC__CCL_INT64);
    assert_int_equal(ftc__ccl_dtype(FTC_DTYPE_COUNT), -1);
    assert_int_equal(ftc__ccl_op(FTC_OP_MIN), FTC__CCL_MIN);
    assert_int_equal(ftc__ccl_op(FTC_OP_PROD), FTC__CCL_PROD);
    assert_int_equal(ftc__ccl_op(FTC_OP_COUNT), -1);
    assert_string_equal(ftc__ccl_result_name(11), "onecclPluginException");
    assert_string_equal(ftc__ccl_result_name(13), "?");
}

/* In one process: FTC_CCL_LIBRARY wrong (refused, not remembered), then
 * right; the environment applied once, the user's values kept. */
static void load_from_env(void **state)
{
    (void)state;
    const char *real = getenv("FTC_CCL_LIBRARY");
    if (real == NULL || access(real, R_OK) != 0) {
        fail_msg("oneCCL is not unpacked at FTC_CCL_LIBRARY=%s: run "
                 "scripts/ccl_deps.sh (make check does)",
                 real != NULL ? real : "(unset)");
    }
    char *keep = strdup(real);
    assert_non_null(keep);
    setenv("FI_PROVIDER", "shm", 1); /* the user's choice */
    unsetenv("CCL_ATL_SHM");
    unsetenv("CCL_YIELD");
    setenv("FTC_CCL_LIBRARY", "/nonexistent/libccl.so.2", 1);
    ftc__ccl_env_hint hint = {.local_rank = 1, .local_size = 64, .loopback = 1};
    const ftc__ccl_api *api = (const ftc__ccl_api *)&hint;
    TK_EXPECT(ftc__ccl_load(&hint, &api), FTC_ENOTSUP);
    assert_null(api);
    expect_message("/nonexistent/libccl.so.2");
    assert_string_equal(getenv("FI_PROVIDER"), "shm");
    assert_string_equal(getenv("CCL_ATL_SHM"), "1");
    assert_string_equal(getenv("CCL_PROCESS_LAUNCHER"), "none");
    assert_string_equal(getenv("CCL_LOCAL_RANK"), "1");
    assert_string_equal(getenv("CCL_LOCAL_SIZE"), "64");
    assert_string_equal(getenv("FI_TCP_IFACE"), "lo");
    assert_string_equal(getenv("CCL_KVS_IFACE"), "lo");
    assert_string_equal(getenv("CCL_YIELD"), "sched_yield");

    setenv("FTC_CCL_LIBRARY", keep, 1);
    free(keep);
    ftc__ccl_env_hint other = {.local_rank = 0, .local_size = 1};
    TK_OK(ftc__ccl_load(&other, &api));
    assert_non_null(api);
    assert_true(api->version >= FTC__CCL_VERSION_MIN);
    assert_int_equal(ftc__ccl_env_apply(&other), 0);
    assert_string_equal(getenv("CCL_LOCAL_RANK"), "1");
    const ftc__ccl_api *again = NULL;
    TK_OK(ftc__ccl_load(&other, &again));
    assert_ptr_equal(again, api);
    print_message("oneCCL %d from %s\n", api->version, api->path);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_library),
        cmocka_unit_test(library_without_symbols),
        cmocka_unit_test(version_too_old),
        cmocka_unit_test(mappings),
        cmocka_unit_test(load_from_env),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
