/* A device plugin for tests, written against the public header only: kind
 * xpu, 3 devices, device memory, IPC memory handles and nothing else, so
 * callers get FTC_ENOTSUP for streams, events and IPC events. The test
 * CMake builds it once per FAKE_VARIANT, most of them broken on purpose:
 *   GOOD       the plugin above
 *   MAJOR      ABI version 2.0
 *   SMALL      struct_size smaller than the first version's table
 *   NO_ENTRY   exports its table under another name
 *   PARTIAL    IPC memory without ipc_memory_close
 *   NEWER      ABI 1.7 with fields appended after the 1.0 table */
#include <string.h>

#include "ftc/plugin/device.h"

static int fake_count(int *out)
{
    *out = 3;
    return 0;
}

static int fake_memory_kind(const void *ptr, int *out)
{
    (void)ptr;
    *out = FTC_MEMORY_DEVICE;
    return 0;
}

/* IPC memory on a fake device: the handle carries the pointer itself. */
static int fake_ipc_memory_get(const void *ptr, ftc_device_ipc_handle *out)
{
    out->size = sizeof(ptr);
    memcpy(out->bytes, &ptr, sizeof(ptr));
    return 0;
}

static int fake_ipc_memory_open(int index, const ftc_device_ipc_handle *h,
                                void **ptr)
{
    (void)index;
    memcpy(ptr, h->bytes, sizeof(*ptr));
    return 0;
}

#if !defined(FAKE_PARTIAL)
static int fake_ipc_memory_close(void *ptr)
{
    (void)ptr;
    return 0;
}
#endif

/* A table from a later minor version: the 1.0 table, then fields this
 * library does not know, which it must not read. */
typedef struct newer_table {
    ftc_device_plugin first;
    void (*unknown_slot)(void);
    uint64_t unknown_value;
} newer_table;

static const newer_table table = {
    .first =
        {
#if defined(FAKE_MAJOR)
            .abi_version = FTC_PLUGIN_ABI(2, 0),
#elif defined(FAKE_NEWER)
            .abi_version = FTC_PLUGIN_ABI(1, 7),
#else
            .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
#endif
#if defined(FAKE_SMALL)
            .struct_size = 40,
#elif defined(FAKE_NEWER)
            .struct_size = sizeof(newer_table),
#else
            .struct_size = sizeof(ftc_device_plugin),
#endif
            .kind = FTC_DEVICE_XPU,
            .name = "xpu",
            .count = fake_count,
            .memory_kind = fake_memory_kind,
            .ipc_memory_get = fake_ipc_memory_get,
            .ipc_memory_open = fake_ipc_memory_open,
#if !defined(FAKE_PARTIAL)
            .ipc_memory_close = fake_ipc_memory_close,
#endif
        },
    .unknown_slot = NULL,
    .unknown_value = UINT64_MAX,
};

#if defined(FAKE_NO_ENTRY)
FTC_PLUGIN_EXPORT const ftc_device_plugin *fake_entry_misnamed(void);
FTC_PLUGIN_EXPORT const ftc_device_plugin *fake_entry_misnamed(void)
#else
FTC_PLUGIN_EXPORT const ftc_device_plugin *ftc_device_plugin_entry(void)
#endif
{
    return &table.first;
}
