/* The xpu device plugin's internals: the Level Zero entry points it looks
 * up in the loader (libze_loader.so.1, never linked), and its message. */
#ifndef FTC_DEVICE_XPU_INT_H
#define FTC_DEVICE_XPU_INT_H

#include <level_zero/ze_api.h>
#include <stdint.h>

/* Every Level Zero function the plugin calls without which it cannot
 * work, in the order they are looked up (a loader lacking one is refused
 * naming the first missing). */
#define FTC__XPU_ZE_REQUIRED(X)                                                \
    X(zeInit)                                                                  \
    X(zeDriverGet)                                                             \
    X(zeDeviceGet)                                                             \
    X(zeDeviceGetProperties)                                                   \
    X(zeDeviceGetCommandQueueGroupProperties)                                  \
    X(zeContextCreate)                                                         \
    X(zeContextDestroy)                                                        \
    X(zeMemGetAllocProperties)                                                 \
    X(zeCommandListCreateImmediate)                                            \
    X(zeCommandListDestroy)                                                    \
    X(zeCommandListAppendBarrier)                                              \
    X(zeCommandListAppendWaitOnEvents)                                         \
    X(zeEventPoolCreate)                                                       \
    X(zeEventPoolDestroy)                                                      \
    X(zeEventCreate)                                                           \
    X(zeEventDestroy)                                                          \
    X(zeEventHostReset)                                                        \
    X(zeEventQueryStatus)                                                      \
    X(zeEventHostSynchronize)

/* IPC memory and IPC events: each capability is offered only when the
 * loader has all three of its functions. */
#define FTC__XPU_ZE_IPC_MEMORY(X)                                              \
    X(zeMemGetIpcHandle)                                                       \
    X(zeMemOpenIpcHandle)                                                      \
    X(zeMemCloseIpcHandle)
#define FTC__XPU_ZE_IPC_EVENTS(X)                                              \
    X(zeEventPoolGetIpcHandle)                                                 \
    X(zeEventPoolOpenIpcHandle)                                                \
    X(zeEventPoolCloseIpcHandle)

/* zeInitDrivers (Level Zero 1.10) is newer than Debian's ze_api.h (1.4),
 * so its descriptor is spelled here, as the specification lays it out. */
#define FTC__XPU_STYPE_INIT_DRIVER_TYPE_DESC 0x00020021u
#define FTC__XPU_INIT_DRIVER_TYPE_FLAG_GPU 1u
typedef struct ftc__xpu_init_driver_desc {
    uint32_t stype;
    const void *pNext;
    uint32_t flags;
} ftc__xpu_init_driver_desc;
typedef ze_result_t (*ftc__xpu_init_drivers_fn)(
    uint32_t *count, ze_driver_handle_t *drivers,
    ftc__xpu_init_driver_desc *desc);

/* The loader and the functions found in it. */
typedef struct ftc__xpu_ze {
    void *lib;
    char path[256]; /* as given, for messages */
#define FTC__XPU_ZE_FIELD(name) __typeof__(name) *name;
    FTC__XPU_ZE_REQUIRED(FTC__XPU_ZE_FIELD)
    FTC__XPU_ZE_IPC_MEMORY(FTC__XPU_ZE_FIELD)
    FTC__XPU_ZE_IPC_EVENTS(FTC__XPU_ZE_FIELD)
#undef FTC__XPU_ZE_FIELD
    ftc__xpu_init_drivers_fn zeInitDrivers; /* NULL before loader 1.18 */
    int ipc_memory;                         /* all three found */
    int ipc_events;
} ftc__xpu_ze;

/* Opens the loader (FTC_LEVEL_ZERO_LOADER or libze_loader.so.1) and looks
 * up the functions. 0, or FTC_ENOTSUP naming the library and the first
 * missing symbol (nothing stays loaded then). */
int ftc__xpu_ze_load(ftc__xpu_ze *ze);

/* "ZE_RESULT_ERROR_UNINITIALIZED"; "ZE_RESULT_?" for an unknown value. */
const char *ftc__xpu_ze_result_name(ze_result_t r);

/* The FTC_E* code for a failed Level Zero call. */
int ftc__xpu_ze_code(ze_result_t r);

/* Sets this thread's plugin message (read by the library through
 * ftc_device_plugin_error) and returns code. */
int ftc__xpu_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ftc__xpu_fail for a Level Zero call that returned r: "Level Zero
 * <call> failed: <name> (0x...)". */
int ftc__xpu_ze_fail(const char *call, ze_result_t r);

#endif
