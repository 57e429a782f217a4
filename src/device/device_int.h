/* The registry that maps a device kind to its plugin table (cpu built in,
 * others loaded from a shared library) and what it derives from it. */
#ifndef FTC_DEVICE_INT_H
#define FTC_DEVICE_INT_H

#include <stdint.h>

#include "base/clock.h"
#include "ftc/device.h"
#include "ftc/plugin/device.h"

/* A usable device kind: the known prefix of its plugin table (fields a
 * smaller, older table lacks are NULL) and the capabilities derived from
 * it. The public wrappers check caps before calling a slot, so a missing
 * capability is always FTC_ENOTSUP and never a NULL call. */
typedef struct ftc__device {
    ftc_device_plugin table;
    uint32_t caps; /* FTC_DEVCAP_* */
    /* The plugin's optional ftc_device_plugin_error, or NULL. */
    const char *(*error)(void);
} ftc__device;

/* The built-in cpu device's table. */
extern const ftc_device_plugin ftc__device_cpu_plugin;

/* Every environment variable the device layer reads (docs/operations.md,
 * "Environment variables"), NULL when unset. ftc__device_env_read
 * (device_env.c) is the layer's only getenv: it reads them when called. */
typedef struct ftc__device_env {
    const char *cuda_plugin;      /* FTC_DEVICE_CUDA_PLUGIN */
    const char *xpu_plugin;       /* FTC_DEVICE_XPU_PLUGIN */
    const char *cpu_device_count; /* FTC_CPU_DEVICE_COUNT */
} ftc__device_env;
void ftc__device_env_read(ftc__device_env *out);

/* The device for kind, loading its plugin on first use. Returns 0 or
 * FTC_ENOTSUP / FTC_EINVAL with a message. */
int ftc__device_get(int kind, const ftc__device **out);

/* Returns rc, a slot's result; when it is a failure and the plugin
 * explains it (ftc_device_plugin_error), sets the message to the plugin's
 * text, so the runtime's own words reach ftc_last_error(). */
int ftc__device_rc(const ftc__device *dev, int rc);

/* Installs a plugin table for its kind, checked as a loaded one is (tests
 * use it to install fakes): FTC_EINVAL naming what is wrong, or a cpu
 * kind. Replaces a previous entry; the table is copied. */
int ftc__device_register(const ftc_device_plugin *table);
/* Forgets a registered kind (the cpu kind cannot be removed). */
void ftc__device_unregister(int kind);

#endif
