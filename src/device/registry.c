/* The device registry: kind -> vtable. cpu is built in; other kinds are
 * loaded from a plugin library on first use, once per process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base_int.h"
#include "device/device_int.h"

/* Process-wide, like the device runtimes the plugins wrap: a device kind
 * is either usable in this process or not. Guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const ftc__device_ops *table[FTC_DEVICE_KIND_COUNT] = {
    [FTC_DEVICE_CPU] = &ftc__device_cpu_ops,
};
static int load_tried[FTC_DEVICE_KIND_COUNT];
static char load_error[FTC_DEVICE_KIND_COUNT][256];

static const struct {
    uint32_t cap;
    const char *name;
} cap_names[] = {
    {FTC_DEVCAP_HOST_ACCESS, "host_access"},
    {FTC_DEVCAP_STREAMS, "streams"},
    {FTC_DEVCAP_EVENTS, "events"},
    {FTC_DEVCAP_IPC_EVENTS, "ipc_events"},
    {FTC_DEVCAP_IPC_MEMORY, "ipc_memory"},
};

const char *ftc_device_cap_name(uint32_t cap)
{
    for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++) {
        if (cap_names[i].cap == cap) {
            return cap_names[i].name;
        }
    }
    return "?";
}

static int consistent(const ftc__device_ops *o)
{
    if (o == NULL || o->kind <= FTC_DEVICE_CPU ||
        o->kind >= FTC_DEVICE_KIND_COUNT || o->name == NULL ||
        o->count == NULL || o->memory_kind == NULL) {
        return 0;
    }
    if ((o->caps & FTC_DEVCAP_STREAMS) &&
        (o->stream_create == NULL || o->stream_destroy == NULL ||
         o->stream_synchronize == NULL)) {
        return 0;
    }
    if ((o->caps & FTC_DEVCAP_EVENTS) &&
        (o->event_create == NULL || o->event_destroy == NULL ||
         o->event_record == NULL || o->event_query == NULL ||
         o->event_synchronize == NULL)) {
        return 0;
    }
    /* Waiting on an event from a stream needs both. */
    if ((o->caps & FTC_DEVCAP_STREAMS) && (o->caps & FTC_DEVCAP_EVENTS) &&
        o->stream_wait_event == NULL) {
        return 0;
    }
    return 1;
}

int ftc__device_register(const ftc__device_ops *ops)
{
    if (!consistent(ops)) {
        return ftc__seterr(FTC_EINVAL,
                           "device vtable rejected: bad kind, missing name, "
                           "or a capability without its functions");
    }
    pthread_mutex_lock(&lock);
    table[ops->kind] = ops;
    load_tried[ops->kind] = 1;
    pthread_mutex_unlock(&lock);
    return 0;
}

void ftc__device_unregister(int kind)
{
    if (kind <= FTC_DEVICE_CPU || kind >= FTC_DEVICE_KIND_COUNT) {
        return;
    }
    pthread_mutex_lock(&lock);
    table[kind] = NULL;
    load_tried[kind] = 0;
    load_error[kind][0] = '\0';
    pthread_mutex_unlock(&lock);
}

/* Loads the plugin for kind with lock held; records why it failed. The
 * library stays loaded for the life of the process (its vtable is used
 * without further locking). */
static void load_plugin(int kind)
{
    const char *name = ftc_device_kind_name(kind);
    char env[64], lib[128];
    snprintf(env, sizeof(env), "FTC_DEVICE_%s_PLUGIN",
             kind == FTC_DEVICE_CUDA ? "CUDA" : "XPU");
    ftc__device_env de;
    ftc__device_env_read(&de);
    const char *path = kind == FTC_DEVICE_CUDA ? de.cuda_plugin : de.xpu_plugin;
    if (path == NULL || path[0] == '\0') {
        snprintf(lib, sizeof(lib), "libftc_device_%s.so", name);
        path = lib;
    }
    load_tried[kind] = 1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(load_error[kind], sizeof(load_error[kind]),
                 "device kind '%s' is not available: no plugin (%s; set %s "
                 "to its path)",
                 name, dlerror(), env);
        return;
    }
    typedef const ftc__device_ops *(*entry_fn)(void);
    entry_fn entry;
    *(void **)&entry = dlsym(h, "ftc_device_plugin_ops");
    const ftc__device_ops *ops = entry != NULL ? entry() : NULL;
    if (ops == NULL || ops->kind != kind || !consistent(ops)) {
        snprintf(load_error[kind], sizeof(load_error[kind]),
                 "device kind '%s': plugin %s has no valid "
                 "ftc_device_plugin_ops",
                 name, path);
        dlclose(h);
        return;
    }
    table[kind] = ops;
}

int ftc__device_get(int kind, const ftc__device_ops **out)
{
    if (kind < 0 || kind >= FTC_DEVICE_KIND_COUNT) {
        return ftc__seterr(FTC_EINVAL, "device kind %d out of range", kind);
    }
    if (kind == FTC_DEVICE_CPU) {
        *out = &ftc__device_cpu_ops;
        return 0;
    }
    pthread_mutex_lock(&lock);
    if (table[kind] == NULL && !load_tried[kind]) {
        load_plugin(kind);
    }
    const ftc__device_ops *ops = table[kind];
    int rc = 0;
    if (ops == NULL) {
        rc = ftc__seterr(FTC_ENOTSUP, "%s", load_error[kind]);
    }
    pthread_mutex_unlock(&lock);
    *out = ops;
    return rc;
}
