/* oneCCL's C API loaded with dlopen: the function table, the version
 * check, error mapping, the environment oneCCL reads once per process,
 * and a communicator made through an ftc store (see ccl_api.h). */
#include "pg/xccl/ccl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/err.h"
#include "base/log.h"
#include "ftc/pg.h"

/* The default when FTC_CCL_LIBRARY is unset: found on the loader path. */
#define CCL_DEFAULT_LIBRARY "libccl.so.2"

/* The symbols, in the table's order; the first one missing is named. */
#define CCL_SYMBOLS(X)                                                         \
    X(get_version, "onecclGetVersion")                                         \
    X(get_unique_id, "onecclGetUniqueId")                                      \
    X(comm_init_rank, "onecclCommInitRank")                                    \
    X(comm_finalize, "onecclCommFinalize")                                     \
    X(comm_destroy, "onecclCommDestroy")                                       \
    X(comm_count, "onecclCommCount")                                           \
    X(comm_user_rank, "onecclCommUserRank")                                    \
    X(get_error_string, "onecclGetErrorString")                                \
    X(get_last_error, "onecclGetLastError")                                    \
    X(all_reduce, "onecclAllReduce")                                           \
    X(broadcast, "onecclBroadcast")                                            \
    X(reduce, "onecclReduce")                                                  \
    X(reduce_scatter, "onecclReduceScatter")                                   \
    X(all_gather, "onecclAllGather")                                           \
    X(all_to_all, "onecclAllToAll")                                            \
    X(all_to_all_v, "onecclAllToAllV")                                         \
    X(send, "onecclSend")                                                      \
    X(recv, "onecclRecv")                                                      \
    X(group_start, "onecclGroupStart")                                         \
    X(group_end, "onecclGroupEnd")

int ftc__ccl_version_check(int version)
{
    if (version < FTC__CCL_VERSION_MIN) {
        return ftc__seterr(FTC_ENOTSUP,
                           "oneCCL %d.%d.%d is too old: the C API needs "
                           ">= %d.%d.%d",
                           version / 10000, version / 100 % 100, version % 100,
                           FTC__CCL_VERSION_MIN / 10000,
                           FTC__CCL_VERSION_MIN / 100 % 100,
                           FTC__CCL_VERSION_MIN % 100);
    }
    return 0;
}

void ftc__ccl_api_close(ftc__ccl_api *api)
{
    if (api != NULL && api->handle != NULL) {
        dlclose(api->handle);
    }
    if (api != NULL) {
        memset(api, 0, sizeof(*api));
    }
}

int ftc__ccl_api_open(const char *path, ftc__ccl_api *api)
{
    int rc = 0;
    memset(api, 0, sizeof(*api));
    if (strlen(path) >= sizeof(api->path)) {
        FTC__FAIL(FTC_EINVAL, "oneCCL library path longer than %zu bytes: %s",
                  sizeof(api->path) - 1, path);
    }
    snprintf(api->path, sizeof(api->path), "%s", path);
    /* RTLD_LOCAL: oneCCL's C++ symbols stay out of the global scope. */
    api->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (api->handle == NULL) {
        const char *why = dlerror();
        FTC__FAIL(FTC_ENOTSUP,
                  "oneCCL library %s cannot be loaded (%s); set "
                  "FTC_CCL_LIBRARY to libccl.so.2 of oneCCL >= 2022.2 "
                  "(scripts/ccl_deps.sh unpacks one)",
                  path, why != NULL ? why : "?");
    }
#define CCL_RESOLVE(field, name)                                               \
    *(void **)&api->field = dlsym(api->handle, name);                          \
    if (api->field == NULL) {                                                  \
        FTC__FAIL(FTC_ENOTSUP, "oneCCL library %s lacks symbol %s", path,      \
                  name);                                                       \
    }
    CCL_SYMBOLS(CCL_RESOLVE)
#undef CCL_RESOLVE
    int result = api->get_version(&api->version);
    if (result != FTC__CCL_SUCCESS) {
        FTC__FAIL(FTC_ENOTSUP, "oneCCL %s: onecclGetVersion returned %d", path,
                  result);
    }
    FTC__CHECK_ADDERR(ftc__ccl_version_check(api->version), "%s", path);
    return 0;
fail:
    ftc__ccl_api_close(api);
    return rc;
}

/* The process's library: loaded once under the lock, never unloaded. */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static ftc__ccl_api loaded;
static int loaded_ok;
static int env_applied;

/* setenv(name, value) unless the user set name; logs what it set. */
static void env_default(const char *name, const char *value)
{
    if (getenv(name) == NULL) {
        setenv(name, value, 0);
        FTC_LOG_DEBUG("xccl.env", "%s=%s", name, value);
    }
}

int ftc__ccl_env_apply(const ftc__ccl_env_hint *hint)
{
    pthread_mutex_lock(&load_mu);
    int first = !env_applied;
    if (first) {
        char n[32];
        env_default("CCL_PROCESS_LAUNCHER", "none");
        snprintf(n, sizeof(n), "%d", hint->local_rank);
        env_default("CCL_LOCAL_RANK", n);
        snprintf(n, sizeof(n), "%d", hint->local_size);
        env_default("CCL_LOCAL_SIZE", n);
        env_default("FI_PROVIDER", "tcp");
        /* The shm provider alone fails CommInitRank: oneCCL's ATL must be
         * told too. */
        const char *prov = getenv("FI_PROVIDER");
        if (prov != NULL && strcmp(prov, "shm") == 0) {
            env_default("CCL_ATL_SHM", "1");
        }
        if (hint->loopback) {
            env_default("FI_TCP_IFACE", "lo");
            env_default("CCL_KVS_IFACE", "lo");
        }
        /* Each rank spins in two threads (the caller and oneCCL's
         * worker); once they outnumber the cores they starve each other:
         * a 1 MiB allreduce of 2 ranks on 2 cores took 100 ms instead of
         * 1 ms (docs/decisions.md). */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (cores > 0 && 2L * hint->local_size > cores) {
            env_default("CCL_YIELD", "sched_yield");
        }
        env_applied = 1;
    }
    pthread_mutex_unlock(&load_mu);
    return first;
}

int ftc__ccl_load(const ftc__ccl_env_hint *hint, const ftc__ccl_api **out)
{
    *out = NULL;
    ftc__ccl_env_apply(hint);
    pthread_mutex_lock(&load_mu);
    int rc = 0;
    if (!loaded_ok) {
        const char *path = getenv("FTC_CCL_LIBRARY");
        if (path == NULL || path[0] == '\0') {
            path = CCL_DEFAULT_LIBRARY;
        }
        rc = ftc__ccl_api_open(path, &loaded);
        if (rc == 0) {
            loaded_ok = 1;
            FTC_LOG_INFO("xccl.load", "oneCCL %d from %s", loaded.version,
                         path);
        }
    }
    if (rc == 0) {
        *out = &loaded;
    }
    pthread_mutex_unlock(&load_mu);
    return rc;
}

const char *ftc__ccl_result_name(int result)
{
    static const char *const names[] = {
        "onecclSuccess",         "onecclError",
        "onecclSystemError",     "onecclInternalError",
        "onecclInvalidArgument", "onecclInvalidUsage",
        "onecclInProgress",      "onecclFailureGPU",
        "onecclFailureCPU",      "onecclAllocFailureCPU",
        "onecclAllocFailureGPU", "onecclPluginException",
        "onecclNotImplemented",
    };
    if (result < 0 || (size_t)result >= sizeof(names) / sizeof(names[0])) {
        return "?";
    }
    return names[result];
}

/* ftc's code for a oneCCL result, by meaning. */
static int result_code(int result)
{
    switch (result) {
    case FTC__CCL_SUCCESS:
        return 0;
    case FTC__CCL_INVALID_ARGUMENT:
        return FTC_EINVAL;
    case FTC__CCL_INVALID_USAGE:
        return FTC_EMISUSE;
    case FTC__CCL_ALLOC_FAILURE_CPU:
    case FTC__CCL_ALLOC_FAILURE_GPU:
        return FTC_ENOMEM;
    /* What oneCCL cannot do (AVG raises "unsupported op" in the plugin,
     * CommAbort is not implemented): a missing capability. */
    case FTC__CCL_PLUGIN_EXCEPTION:
    case FTC__CCL_NOT_IMPLEMENTED:
        return FTC_ENOTSUP;
    default:
        return FTC_ESYS;
    }
}

int ftc__ccl_error(const ftc__ccl_api *api, int result, ftc__ccl_comm *comm,
                   const char *what)
{
    if (result == FTC__CCL_SUCCESS) {
        return 0;
    }
    const char *text = NULL;
    if (comm != NULL) {
        text = api->get_last_error(comm);
    }
    if (text == NULL || text[0] == '\0') {
        text = api->get_error_string(result);
    }
    /* oneCCL's string for 11 is "Unknown error code": say what it is. */
    const char *hint = "";
    if (result == FTC__CCL_PLUGIN_EXCEPTION) {
        hint = " (oneCCL raised in its plugin; on CPU buffers this is "
               "an op it does not support, such as AVG)";
    }
    return ftc__seterr(result_code(result), "oneCCL %s: %s (%d): %s%s", what,
                       ftc__ccl_result_name(result), result,
                       text != NULL ? text : "", hint);
}

int ftc__ccl_dtype(int dtype)
{
    switch (dtype) {
    case FTC_DTYPE_F32:
        return FTC__CCL_FLOAT32;
    case FTC_DTYPE_F64:
        return FTC__CCL_FLOAT64;
    case FTC_DTYPE_F16:
        return FTC__CCL_FLOAT16;
    case FTC_DTYPE_BF16:
        return FTC__CCL_BFLOAT16;
    case FTC_DTYPE_I8:
        return FTC__CCL_INT8;
    case FTC_DTYPE_U8:
        return FTC__CCL_UINT8;
    case FTC_DTYPE_I32:
        return FTC__CCL_INT32;
    case FTC_DTYPE_I64:
        return FTC__CCL_INT64;
    default:
        return -1;
    }
}

int ftc__ccl_op(int op)
{
    switch (op) {
    case FTC_OP_SUM:
        return FTC__CCL_SUM;
    case FTC_OP_AVG:
        return FTC__CCL_AVG;
    case FTC_OP_MIN:
        return FTC__CCL_MIN;
    case FTC_OP_MAX:
        return FTC__CCL_MAX;
    case FTC_OP_PROD:
        return FTC__CCL_PROD;
    default:
        return -1;
    }
}

/* The unique id exchange and the arrival check. One function, so that the
 * backend ABI's generic exchange helper can replace it. */
static int exchange_unique_id(const ftc__ccl_api *api, ftc_store_client *store,
                              const char *prefix, int rank, int size,
                              ftc__deadline dl, ftc__ccl_unique_id *id)
{
    int rc = 0;
    char key[512];
    char **keys = NULL;
    void *value = NULL;
    size_t len = 0;
    snprintf(key, sizeof(key), "%s/ccl_uid", prefix);
    if (rank == 0) {
        FTC__CHECK(ftc__ccl_error(api, api->get_unique_id(id), NULL,
                                  "onecclGetUniqueId"));
        FTC__CHECK(ftc_store_client_set(store, key, id, sizeof(*id),
                                        ftc__deadline_left_ms(dl)));
    } else {
        FTC__CHECK_ADDERR(ftc_store_client_get(store, key, &value, &len,
                                               ftc__deadline_left_ms(dl)),
                          "oneCCL unique id from rank 0");
        if (len != sizeof(*id)) {
            FTC__FAIL(FTC_EPROTO,
                      "oneCCL unique id under %s is %zu bytes, "
                      "not %zu",
                      key, len, sizeof(*id));
        }
        memcpy(id, value, sizeof(*id));
    }
    /* Everyone arrived: past this point only a death inside oneCCL's
     * init can hang the others. */
    keys = ftc__calloc((size_t)size, sizeof(*keys));
    if (keys == NULL) {
        FTC__FAIL(FTC_ENOMEM, "oneCCL arrival keys");
    }
    for (int r = 0; r < size; r++) {
        size_t n = strlen(prefix) + 32;
        keys[r] = ftc__malloc(n);
        if (keys[r] == NULL) {
            FTC__FAIL(FTC_ENOMEM, "oneCCL arrival keys");
        }
        snprintf(keys[r], n, "%s/ccl_arrived/%d", prefix, r);
    }
    FTC__CHECK(ftc_store_client_set(store, keys[rank], "1", 1,
                                    ftc__deadline_left_ms(dl)));
    FTC__CHECK_ADDERR(ftc_store_client_wait(store, (const char *const *)keys,
                                            (size_t)size,
                                            ftc__deadline_left_ms(dl)),
                      "oneCCL communicator: ranks missing");
fail:
    if (keys != NULL) {
        for (int r = 0; r < size; r++) {
            ftc__free(keys[r]);
        }
    }
    ftc__free(keys);
    ftc_free(value);
    return rc;
}

int ftc__ccl_comm_create(const ftc__ccl_api *api, ftc_store_client *store,
                         const char *prefix, int rank, int size,
                         ftc__deadline dl, ftc__ccl_comm **out)
{
    int rc = 0;
    ftc__ccl_unique_id *id = NULL;
    *out = NULL;
    if (size < 1 || rank < 0 || rank >= size) {
        FTC__FAIL(FTC_EINVAL, "oneCCL communicator: rank %d of %d", rank, size);
    }
    /* The keys are built in 512-byte buffers. */
    if (prefix == NULL || strlen(prefix) > 400) {
        FTC__FAIL(FTC_EINVAL,
                  "oneCCL communicator: prefix NULL or over 400 bytes");
    }
    /* 4 KiB: not on the stack of a caller's thread twice. */
    id = ftc__calloc(1, sizeof(*id));
    if (id == NULL) {
        FTC__FAIL(FTC_ENOMEM, "oneCCL unique id");
    }
    FTC__CHECK(exchange_unique_id(api, store, prefix, rank, size, dl, id));
    ftc__ccl_comm *comm = NULL;
    int64_t t0 = ftc__now_ms();
    int result = api->comm_init_rank(&comm, (size_t)size, *id, rank);
    FTC__CHECK(ftc__ccl_error(api, result, NULL, "onecclCommInitRank"));
    FTC_LOG_DEBUG("xccl.init", "rank %d of %d: onecclCommInitRank %lld ms",
                  rank, size, (long long)(ftc__now_ms() - t0));
    *out = comm;
fail:
    ftc__free(id);
    return rc;
}

int ftc__ccl_comm_destroy(const ftc__ccl_api *api, ftc__ccl_comm *comm)
{
    if (comm == NULL) {
        return 0;
    }
    return ftc__ccl_error(api, api->comm_destroy(comm), NULL,
                          "onecclCommDestroy");
}
