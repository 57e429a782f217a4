/* NCCL's C API loaded with dlopen (nccl_api.h). */
#include "pg/nccl/nccl_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ftc__nccl_api_load(const char *path, ftc__nccl_api *api, char *msg,
                       size_t msg_size)
{
    memset(api, 0, sizeof(*api));
    const char *env = getenv("FTC_NCCL_LIBRARY");
    if (path == NULL || path[0] == '\0') {
        path = env != NULL && env[0] != '\0' ? env : "libnccl.so.2";
    }
    snprintf(api->path, sizeof(api->path), "%s", path);
    api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (api->lib == NULL) {
        snprintf(msg, msg_size,
                 "cannot load NCCL %s (set FTC_NCCL_LIBRARY to its path): %s",
                 path, dlerror());
        return FTC_ENOTSUP;
    }
#define RESOLVE(name)                                                          \
    if ((*(void **)&api->name = dlsym(api->lib, #name)) == NULL) {             \
        snprintf(msg, msg_size, "NCCL %s lacks symbol %s", path, #name);       \
        goto unusable;                                                         \
    }
    FTC__NCCL_SYMBOLS(RESOLVE)
#undef RESOLVE
    ncclResult_t r = api->ncclGetVersion(&api->version);
    if (r != ncclSuccess) {
        snprintf(msg, msg_size, "NCCL %s: ncclGetVersion failed: %s", path,
                 api->ncclGetErrorString(r));
        goto unusable;
    }
    if (api->version < FTC__NCCL_MIN_VERSION ||
        api->version > FTC__NCCL_MAX_VERSION) {
        snprintf(msg, msg_size,
                 "NCCL %s is version %d (ncclGetVersion); ftc needs %d to %d",
                 path, api->version, FTC__NCCL_MIN_VERSION,
                 FTC__NCCL_MAX_VERSION);
        goto unusable;
    }
    return 0;
unusable:
    ftc__nccl_api_unload(api);
    return FTC_ENOTSUP;
}

void ftc__nccl_api_unload(ftc__nccl_api *api)
{
    if (api->lib != NULL) {
        dlclose(api->lib);
    }
    memset(api, 0, sizeof(*api));
}

static const char *const result_names[] = {
    "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
    "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
    "ncclRemoteError",   "ncclInProgress",
};

int ftc__nccl_result(const ftc__nccl_api *api, ncclResult_t result,
                     const char *call, ncclComm_t comm, char *msg,
                     size_t msg_size)
{
    int rc;
    switch (result) {
    case ncclSuccess:
        return 0;
    case ncclInProgress:
        return FTC__NCCL_IN_PROGRESS;
    case ncclInvalidArgument:
        rc = FTC_EINVAL;
        break;
    case ncclInvalidUsage:
        rc = FTC_EMISUSE;
        break;
    case ncclRemoteError:
        rc = FTC_EPEER;
        break;
    default: /* CUDA, system, internal and unknown errors */
        rc = FTC_ESYS;
        break;
    }
    unsigned n = (unsigned)result;
    const char *last = api->ncclGetLastError(comm);
    snprintf(msg, msg_size, "%s: %s (%s, %u)%s%s", call,
             api->ncclGetErrorString(result),
             n < sizeof(result_names) / sizeof(result_names[0])
                 ? result_names[n]
                 : "unknown result",
             n, last != NULL && last[0] != '\0' ? ": " : "",
             last != NULL ? last : "");
    return rc;
}
