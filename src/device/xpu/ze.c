/* Loading Level Zero at run time: the loader library, the functions the
 * plugin uses, the names of its result codes, and the plugin's message. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftc/plugin/device.h"
#include "xpu_int.h"

#define DEFAULT_LOADER "libze_loader.so.1"

/* The plugin's only environment variable (docs/operations.md). */
static const char *loader_path(void)
{
    const char *path = getenv("FTC_LEVEL_ZERO_LOADER");
    return path != NULL && path[0] != '\0' ? path : DEFAULT_LOADER;
}

static _Thread_local char message[512];

const char *ftc_device_plugin_error(void)
{
    return message;
}

int ftc__xpu_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    return code;
}

int ftc__xpu_ze_fail(const char *call, ze_result_t r)
{
    return ftc__xpu_fail(ftc__xpu_ze_code(r), "Level Zero %s failed: %s (0x%x)",
                         call, ftc__xpu_ze_result_name(r), (unsigned)r);
}

int ftc__xpu_ze_code(ze_result_t r)
{
    switch (r) {
    case ZE_RESULT_SUCCESS:
        return FTC_OK;
    case ZE_RESULT_NOT_READY:
        return FTC_ETIMEDOUT;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
        return FTC_ENOMEM;
    case ZE_RESULT_ERROR_UNINITIALIZED:
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_NOT_AVAILABLE:
    case ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE:
        return FTC_ENOTSUP;
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
    case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
    case ZE_RESULT_ERROR_INVALID_SIZE:
    case ZE_RESULT_ERROR_INVALID_ENUMERATION:
        return FTC_EINVAL;
    default:
        return FTC_ESYS;
    }
}

const char *ftc__xpu_ze_result_name(ze_result_t r)
{
#define NAME(n)                                                                \
    case n:                                                                    \
        return #n;
    switch (r) {
        NAME(ZE_RESULT_SUCCESS)
        NAME(ZE_RESULT_NOT_READY)
        NAME(ZE_RESULT_ERROR_DEVICE_LOST)
        NAME(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        NAME(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
        NAME(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
        NAME(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
        NAME(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
        NAME(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
        NAME(ZE_RESULT_ERROR_NOT_AVAILABLE)
        NAME(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
        NAME(ZE_RESULT_ERROR_UNINITIALIZED)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
        NAME(ZE_RESULT_ERROR_INVALID_ARGUMENT)
        NAME(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
        NAME(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
        NAME(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
        NAME(ZE_RESULT_ERROR_INVALID_SIZE)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
        NAME(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
        NAME(ZE_RESULT_ERROR_INVALID_ENUMERATION)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
        NAME(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
        NAME(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
        NAME(ZE_RESULT_ERROR_UNKNOWN)
    default:
        return "ZE_RESULT_?";
    }
#undef NAME
}

/* Looks up one symbol into *slot; the name of the symbol when it is
 * missing and required, else NULL. */
static const char *find(void *lib, const char *name, void **slot, int required)
{
    *slot = dlsym(lib, name);
    return *slot == NULL && required ? name : NULL;
}

int ftc__xpu_ze_load(ftc__xpu_ze *ze)
{
    const char *path = loader_path();
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        return ftc__xpu_fail(FTC_ENOTSUP,
                             "cannot load the Level Zero loader %s: %s "
                             "(Debian's libze1 installs it; "
                             "FTC_LEVEL_ZERO_LOADER names another path)",
                             path, dlerror());
    }
    const char *missing = NULL;
#define FIND(name, required)                                                   \
    if (missing == NULL) {                                                     \
        missing = find(lib, #name, (void **)&ze->name, required);              \
    }
#define FIND_REQUIRED(name) FIND(name, 1)
#define FIND_OPTIONAL(name) FIND(name, 0)
    FTC__XPU_ZE_REQUIRED(FIND_REQUIRED)
    FTC__XPU_ZE_IPC_MEMORY(FIND_OPTIONAL)
    FTC__XPU_ZE_IPC_EVENTS(FIND_OPTIONAL)
#undef FIND_OPTIONAL
#undef FIND_REQUIRED
#undef FIND
    if (missing != NULL) {
        dlclose(lib);
        return ftc__xpu_fail(FTC_ENOTSUP,
                             "the Level Zero loader %s lacks symbol %s "
                             "(not a Level Zero loader, or too old)",
                             path, missing);
    }
    *(void **)&ze->zeInitDrivers = dlsym(lib, "zeInitDrivers");
    ze->ipc_memory = ze->zeMemGetIpcHandle != NULL &&
                     ze->zeMemOpenIpcHandle != NULL &&
                     ze->zeMemCloseIpcHandle != NULL;
    ze->ipc_events = ze->zeEventPoolGetIpcHandle != NULL &&
                     ze->zeEventPoolOpenIpcHandle != NULL &&
                     ze->zeEventPoolCloseIpcHandle != NULL;
    ze->lib = lib;
    snprintf(ze->path, sizeof(ze->path), "%s", path);
    return 0;
}
