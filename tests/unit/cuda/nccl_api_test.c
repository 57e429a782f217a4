/* The NCCL loader against the real libnccl.so.2: version, unique id, and
 * a 1-rank communicator, which needs a GPU: without one ncclCommInitRank
 * fails and the mapped error must carry NCCL's own text ("CUDA driver
 * version is insufficient"). A missing library and a library without the
 * symbols are FTC_ENOTSUP naming them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/nccl/nccl_api.h"
#include "testkit.h"

static void assert_has(const char *text, const char *part)
{
    if (strstr(text, part) == NULL) {
        fail_msg("'%s' lacks '%s'", text, part);
    }
}

static void loads_and_reports_version(void **state)
{
    (void)state;
    ftc__nccl_api api;
    char msg[512] = "";
    int rc = ftc__nccl_api_load(NULL, &api, msg, sizeof(msg));
    if (rc != 0) {
        fail_msg("load: %d: %s", rc, msg);
    }
    printf("NCCL %s version %d\n", api.path, api.version);
    assert_true(api.version >= FTC__NCCL_MIN_VERSION);
    assert_int_equal(api.version / 10000, NCCL_MAJOR);
    /* This machine kind's header and library agree (2.28.9: 22809). */
    assert_int_equal(api.version, NCCL_VERSION_CODE);

    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    rc = ftc__nccl_result(&api, api.ncclGetUniqueId(&id), "ncclGetUniqueId",
                          NULL, msg, sizeof(msg));
    if (rc != 0) {
        fail_msg("ncclGetUniqueId: %d: %s", rc, msg);
    }
    static const ncclUniqueId zero;
    assert_memory_not_equal(&id, &zero, sizeof(id));

    ncclComm_t comm = NULL;
    ncclResult_t r = api.ncclCommInitRank(&comm, 1, id, 0);
    rc = ftc__nccl_result(&api, r, "ncclCommInitRank", NULL, msg, sizeof(msg));
    if (r == ncclSuccess) {
        int count = 0, rank = -1;
        printf("GPU: 1-rank NCCL communicator made\n");
        assert_int_equal(api.ncclCommCount(comm, &count), ncclSuccess);
        assert_int_equal(count, 1);
        assert_int_equal(api.ncclCommUserRank(comm, &rank), ncclSuccess);
        assert_int_equal(rank, 0);
        ncclResult_t async = ncclInternalError;
        assert_int_equal(api.ncclCommGetAsyncError(comm, &async), ncclSuccess);
        assert_int_equal(async, ncclSuccess);
        assert_int_equal(api.ncclCommFinalize(comm), ncclSuccess);
        assert_int_equal(api.ncclCommDestroy(comm), ncclSuccess);
    } else {
        printf("no GPU (ncclCommInitRank: %s): checked the loading path "
               "only\n",
               msg);
        /* A CUDA failure below NCCL is a system error, with NCCL's words
         * and the last error's detail. */
        assert_int_equal(r, ncclUnhandledCudaError);
        assert_int_equal(rc, FTC_ESYS);
        assert_has(msg, "ncclCommInitRank: ");
        assert_has(msg, api.ncclGetErrorString(r));
        assert_has(msg, "ncclUnhandledCudaError, 1");
        assert_has(msg, "CUDA driver version is insufficient");
    }
    ftc__nccl_api_unload(&api);
    assert_null(api.lib);
}

static void result_mapping(void **state)
{
    (void)state;
    ftc__nccl_api api;
    char msg[512] = "";
    assert_int_equal(ftc__nccl_api_load(NULL, &api, msg, sizeof(msg)), 0);
    assert_int_equal(
        ftc__nccl_result(&api, ncclSuccess, "x", NULL, msg, sizeof(msg)), 0);
    assert_int_equal(
        ftc__nccl_result(&api, ncclInProgress, "x", NULL, msg, sizeof(msg)),
        FTC__NCCL_IN_PROGRESS);
    assert_int_equal(ftc__nccl_result(&api, ncclInvalidArgument, "ncclSend",
                                      NULL, msg, sizeof(msg)),
                     FTC_EINVAL);
    assert_has(msg, "ncclSend: ");
    assert_has(msg, "(ncclInvalidArgument, 4)");
    assert_int_equal(
        ftc__nccl_result(&api, ncclInvalidUsage, "x", NULL, msg, sizeof(msg)),
        FTC_EMISUSE);
    assert_int_equal(
        ftc__nccl_result(&api, ncclRemoteError, "x", NULL, msg, sizeof(msg)),
        FTC_EPEER);
    assert_int_equal(
        ftc__nccl_result(&api, ncclSystemError, "x", NULL, msg, sizeof(msg)),
        FTC_ESYS);
    assert_int_equal(
        ftc__nccl_result(&api, (ncclResult_t)42, "x", NULL, msg, sizeof(msg)),
        FTC_ESYS);
    assert_has(msg, "unknown result, 42");
    ftc__nccl_api_unload(&api);
}

static void missing_library_is_enotsup(void **state)
{
    (void)state;
    ftc__nccl_api api;
    char msg[512] = "";
    setenv("FTC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    assert_int_equal(ftc__nccl_api_load(NULL, &api, msg, sizeof(msg)),
                     FTC_ENOTSUP);
    unsetenv("FTC_NCCL_LIBRARY");
    assert_has(msg, "cannot load NCCL /nonexistent/libnccl.so.2");
    assert_has(msg, "FTC_NCCL_LIBRARY");
    assert_null(api.lib);
}

static void library_without_symbols_is_enotsup(void **state)
{
    (void)state;
    ftc__nccl_api api;
    char msg[512] = "";
    assert_int_equal(ftc__nccl_api_load("libm.so.6", &api, msg, sizeof(msg)),
                     FTC_ENOTSUP);
    assert_has(msg, "NCCL libm.so.6 lacks symbol ncclGetVersion");
    assert_null(api.lib);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_and_reports_version),
        cmocka_unit_test(result_mapping),
        cmocka_unit_test(missing_library_is_enotsup),
        cmocka_unit_test(library_without_symbols_is_enotsup),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
