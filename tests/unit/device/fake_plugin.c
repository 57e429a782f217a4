/* A device plugin for tests: kind xpu, 3 devices, host memory only and no
 * streams or events, so callers must get FTC_ENOTSUP for those. */
#include "device/device_int.h"

const ftc__device_ops *ftc_device_plugin_ops(void);

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

static const ftc__device_ops ops = {
    .kind = FTC_DEVICE_XPU,
    .name = "xpu",
    .caps = FTC_DEVCAP_IPC_MEMORY,
    .count = fake_count,
    .memory_kind = fake_memory_kind,
};

__attribute__((visibility("default"))) const ftc__device_ops *
ftc_device_plugin_ops(void)
{
    return &ops;
}
