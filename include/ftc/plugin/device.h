/* ftc/plugin/device.h: the table a device plugin gives the library.
 *
 * A device kind other than cpu (cuda, xpu) lives in a shared library,
 * libftc_device_<kind>.so or the path in FTC_DEVICE_<KIND>_PLUGIN, loaded
 * on first use. The library looks up FTC_DEVICE_PLUGIN_ENTRY_SYMBOL in it
 * and calls it once; the table it returns must stay valid until the
 * process exits (the library is never unloaded). A plugin fills the table
 * with designated initialisers:
 *
 *     static const ftc_device_plugin table = {
 *         .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
 *         .struct_size = sizeof(ftc_device_plugin),
 *         .kind = FTC_DEVICE_CUDA,
 *         .name = "cuda",
 *         .count = my_count,
 *         ...
 *     };
 *     FTC_PLUGIN_EXPORT const ftc_device_plugin *ftc_device_plugin_entry(void)
 *     {
 *         return &table;
 *     }
 *
 * Capabilities follow from the slots: a capability is offered when all of
 * its slots are set, and absent (FTC_ENOTSUP naming it, e.g. "device
 * 'cuda' lacks capability 'ipc_memory'") when all are NULL. A table that
 * sets only some slots of a capability is refused when it is loaded.
 *
 * Every slot returns 0 or a negative FTC_E* code and may be called from
 * any thread. Streams and events are the plugin's own opaque pointers;
 * the library pairs a stream and an event only when both are on the same
 * device index. Versioning is described in ftc/plugin/abi.h. */
#ifndef FTC_PLUGIN_DEVICE_H
#define FTC_PLUGIN_DEVICE_H

#include "ftc/device.h"
#include "ftc/plugin/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of ftc_device_plugin this header describes. */
#define FTC_DEVICE_PLUGIN_ABI_VERSION FTC_PLUGIN_ABI(1, 0)

/* The name the library looks up with dlsym. */
#define FTC_DEVICE_PLUGIN_ENTRY_SYMBOL "ftc_device_plugin_entry"

/* An IPC handle: bytes another process on the same host opens to reach a
 * buffer or an event (cudaIpcMemHandle_t and ze_ipc_mem_handle_t fit);
 * the plugin fills the first `size` bytes. */
#define FTC_DEVICE_IPC_HANDLE_MAX 128
typedef struct ftc_device_ipc_handle {
    uint32_t size;
    uint8_t bytes[FTC_DEVICE_IPC_HANDLE_MAX];
} ftc_device_ipc_handle;

typedef struct ftc_device_plugin {
    uint32_t abi_version; /* FTC_DEVICE_PLUGIN_ABI_VERSION */
    uint32_t struct_size; /* sizeof(ftc_device_plugin) */
    int kind;             /* FTC_DEVICE_CUDA or FTC_DEVICE_XPU */
    const char *name;     /* "cuda", for messages */
    /* Nonzero if the CPU can read and write the device's buffers
     * (FTC_DEVCAP_HOST_ACCESS: host transports may move them). */
    int host_access;

    /* Required. Devices visible to this process. */
    int (*count)(int *out);
    /* Required. The FTC_MEMORY_* kind of the buffer at ptr (not NULL). */
    int (*memory_kind)(const void *ptr, int *out);

    /* FTC_DEVCAP_STREAMS. index is in [0, count). synchronize returns
     * FTC_ETIMEDOUT once deadline_ns (absolute CLOCK_MONOTONIC; INT64_MAX:
     * never) passes. */
    int (*stream_create)(int index, void **out);
    void (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream, int64_t deadline_ns);

    /* FTC_DEVCAP_EVENTS. record marks the current end of stream; query
     * sets *done to 1 once the work before that point has finished. */
    int (*event_create)(int index, void **out);
    void (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event, int *done);
    int (*event_synchronize)(void *event, int64_t deadline_ns);

    /* Required when both streams and events are offered: later work on
     * stream waits for event, without blocking the host. */
    int (*stream_wait_event)(void *stream, void *event);

    /* FTC_DEVCAP_IPC_MEMORY. get describes the allocation holding ptr;
     * open maps a handle from another process on device index and sets
     * *ptr; close unmaps what open returned. */
    int (*ipc_memory_get)(const void *ptr, ftc_device_ipc_handle *out);
    int (*ipc_memory_open)(int index, const ftc_device_ipc_handle *handle,
                           void **ptr);
    int (*ipc_memory_close)(void *ptr);

    /* FTC_DEVCAP_IPC_EVENTS. get describes an event made by event_create
     * (the plugin creates it shareable); open gives an event usable with
     * the event and stream slots; close releases what open returned. */
    int (*ipc_event_get)(void *event, ftc_device_ipc_handle *out);
    int (*ipc_event_open)(int index, const ftc_device_ipc_handle *handle,
                          void **event);
    void (*ipc_event_close)(void *event);
} ftc_device_plugin;

/* The entry every device plugin exports: its table, or NULL if the device
 * runtime cannot be used in this process (the kind is then unavailable). */
FTC_PLUGIN_EXPORT const ftc_device_plugin *ftc_device_plugin_entry(void);

/* Optional, looked up next to the entry (ABI 1.0 plugins may lack it): the
 * reason for the calling thread's last failure in the plugin, the entry's
 * NULL or a slot's FTC_E* code, with the runtime's own text ("libcudart.so.13:
 * cudaGetDeviceCount: CUDA driver version is insufficient ..."); "" or NULL
 * if none. The library puts it into the message ftc_last_error() returns.
 * The string stays valid until the thread's next call into the plugin. */
#define FTC_DEVICE_PLUGIN_ERROR_SYMBOL "ftc_device_plugin_error"
FTC_PLUGIN_EXPORT const char *ftc_device_plugin_error(void);

#ifdef __cplusplus
}
#endif
#endif
