/* The device vtable every device kind implements, and the registry that
 * maps a kind to its vtable (cpu built in, others loaded as plugins). */
#ifndef FTC_DEVICE_INT_H
#define FTC_DEVICE_INT_H

#include <stdint.h>

#include "base/clock.h"
#include "ftc/device.h"

/* Function pointers for a capability must be set when caps has the bit and
 * may be NULL otherwise; the registry refuses a vtable that breaks this,
 * and the public wrappers check caps before calling, so a missing
 * capability is always FTC_ENOTSUP and never a NULL call. */
typedef struct ftc__device_ops {
    int kind;
    const char *name;
    uint32_t caps; /* FTC_DEVCAP_* */
    int (*count)(int *out);
    int (*memory_kind)(const void *ptr, int *out);
    /* FTC_DEVCAP_STREAMS */
    int (*stream_create)(int index, void **out);
    void (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream, ftc__deadline dl);
    int (*stream_wait_event)(void *stream, void *event);
    /* FTC_DEVCAP_EVENTS */
    int (*event_create)(int index, void **out);
    void (*event_destroy)(void *event);
    int (*event_record)(void *event, void *stream);
    int (*event_query)(void *event, int *done);
    int (*event_synchronize)(void *event, ftc__deadline dl);
} ftc__device_ops;

/* The built-in cpu device. */
extern const ftc__device_ops ftc__device_cpu_ops;

/* Every environment variable the device layer reads (docs/operations.md,
 * "Environment variables"), NULL when unset. ftc__device_env_read
 * (device_env.c) is the layer's only getenv: it reads them when called. */
typedef struct ftc__device_env {
    const char *cuda_plugin;      /* FTC_DEVICE_CUDA_PLUGIN */
    const char *xpu_plugin;       /* FTC_DEVICE_XPU_PLUGIN */
    const char *cpu_device_count; /* FTC_CPU_DEVICE_COUNT */
} ftc__device_env;
void ftc__device_env_read(ftc__device_env *out);

/* The vtable for kind, loading its plugin on first use. Returns 0 or
 * FTC_ENOTSUP / FTC_EINVAL with a message. */
int ftc__device_get(int kind, const ftc__device_ops **out);

/* Installs a vtable for its kind (what a plugin loader does; tests use it
 * to install fakes). FTC_EINVAL if the vtable is inconsistent. Replaces a
 * previous entry; the vtable must outlive the process's use of it. */
int ftc__device_register(const ftc__device_ops *ops);
/* Forgets a registered vtable (the cpu kind cannot be removed). */
void ftc__device_unregister(int kind);

#endif
