/* The device layer's environment variables, read in this one place. */
#include <stdlib.h>

#include "device/device_int.h"

void ftc__device_env_read(ftc__device_env *out)
{
    out->cuda_plugin = getenv("FTC_DEVICE_CUDA_PLUGIN");
    out->xpu_plugin = getenv("FTC_DEVICE_XPU_PLUGIN");
    out->cpu_device_count = getenv("FTC_CPU_DEVICE_COUNT");
}
