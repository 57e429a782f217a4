/* The device registry: kind -> plugin table. cpu is built in; other kinds
 * are loaded from a plugin library on first use, once per process. Every
 * table, the built-in one included, passes the same checks: ABI version,
 * size, required slots, and capabilities whose slots are all set or all
 * NULL. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "base/plugin.h"
#include "device/device_int.h"

/* The size of the first version of the table (ABI 1.0): a plugin's table
 * is never smaller. Fields added by later minors come after it. */
#define FIRST_SIZE                                                             \
    (offsetof(ftc_device_plugin, ipc_event_close) +                            \
     sizeof(((ftc_device_plugin *)0)->ipc_event_close))

/* Process-wide, like the device runtimes the plugins wrap: a device kind
 * is either usable in this process or not. Guarded by lock; an entry is
 * written before present is set and never changed while present. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ftc__device devices[FTC_DEVICE_KIND_COUNT];
static int present[FTC_DEVICE_KIND_COUNT];
static int load_tried[FTC_DEVICE_KIND_COUNT];
static char load_error[FTC_DEVICE_KIND_COUNT][1024];

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

/* One slot of a capability: its field name and whether it is set. */
typedef struct slot {
    const char *name;
    int set;
} slot;

#define SLOT(t, field)                                                         \
    {                                                                          \
#field, (t)->field != NULL                                             \
    }

/* Adds cap to *caps when every slot is set; nothing when none is; -1 with
 * why filled when only some are. */
static int derive(uint32_t cap, const slot *slots, size_t n, uint32_t *caps,
                  char *why, size_t why_size)
{
    size_t set = 0;
    const char *missing = NULL;
    for (size_t i = 0; i < n; i++) {
        if (slots[i].set) {
            set++;
        } else {
            missing = slots[i].name;
        }
    }
    if (set > 0 && set < n) {
        snprintf(why, why_size, "sets some slots of capability '%s' but not %s",
                 ftc_device_cap_name(cap), missing);
        return -1;
    }
    if (set == n) {
        *caps |= cap;
    }
    return 0;
}

#define DERIVE(cap, slots)                                                     \
    derive(cap, slots, sizeof(slots) / sizeof(slots[0]), &dev->caps, why,      \
           why_size)

/* Checks t, a table for kind, and fills dev with its known prefix and
 * capabilities. Returns -1 with why filled if it cannot be used. */
static int adopt(const ftc_device_plugin *t, int kind, ftc__device *dev,
                 char *why, size_t why_size)
{
    if (ftc__plugin_check_abi(t->abi_version, t->struct_size,
                              FTC_DEVICE_PLUGIN_ABI_VERSION, FIRST_SIZE, why,
                              why_size) != 0) {
        return -1;
    }
    memset(dev, 0, sizeof(*dev));
    memcpy(&dev->table, t,
           t->struct_size < sizeof(dev->table) ? t->struct_size
                                               : sizeof(dev->table));
    t = &dev->table;
    if (t->kind != kind || t->name == NULL || t->count == NULL ||
        t->memory_kind == NULL) {
        snprintf(why, why_size,
                 "is not a table for kind '%s' (kind %d, name, count and "
                 "memory_kind are required)",
                 ftc_device_kind_name(kind), t->kind);
        return -1;
    }
    dev->caps = t->host_access ? FTC_DEVCAP_HOST_ACCESS : 0;
    const slot streams[] = {SLOT(t, stream_create), SLOT(t, stream_destroy),
                            SLOT(t, stream_synchronize)};
    const slot events[] = {SLOT(t, event_create), SLOT(t, event_destroy),
                           SLOT(t, event_record), SLOT(t, event_query),
                           SLOT(t, event_synchronize)};
    const slot ipc_memory[] = {SLOT(t, ipc_memory_get),
                               SLOT(t, ipc_memory_open),
                               SLOT(t, ipc_memory_close)};
    const slot ipc_events[] = {SLOT(t, ipc_event_get), SLOT(t, ipc_event_open),
                               SLOT(t, ipc_event_close)};
    if (DERIVE(FTC_DEVCAP_STREAMS, streams) != 0 ||
        DERIVE(FTC_DEVCAP_EVENTS, events) != 0 ||
        DERIVE(FTC_DEVCAP_IPC_MEMORY, ipc_memory) != 0 ||
        DERIVE(FTC_DEVCAP_IPC_EVENTS, ipc_events) != 0) {
        return -1;
    }
    uint32_t both = FTC_DEVCAP_STREAMS | FTC_DEVCAP_EVENTS;
    if ((dev->caps & both) == both && t->stream_wait_event == NULL) {
        snprintf(why, why_size,
                 "offers streams and events but not stream_wait_event");
        return -1;
    }
    return 0;
}

int ftc__device_register(const ftc_device_plugin *table)
{
    if (table == NULL || table->kind <= FTC_DEVICE_CPU ||
        table->kind >= FTC_DEVICE_KIND_COUNT) {
        return ftc__seterr(FTC_EINVAL, "device table rejected: no table or "
                                       "not a plugin kind");
    }
    ftc__device dev;
    char why[256];
    if (adopt(table, table->kind, &dev, why, sizeof(why)) != 0) {
        return ftc__seterr(FTC_EINVAL, "device table rejected: it %s", why);
    }
    pthread_mutex_lock(&lock);
    devices[dev.table.kind] = dev;
    present[dev.table.kind] = 1;
    load_tried[dev.table.kind] = 1;
    pthread_mutex_unlock(&lock);
    return 0;
}

void ftc__device_unregister(int kind)
{
    if (kind <= FTC_DEVICE_CPU || kind >= FTC_DEVICE_KIND_COUNT) {
        return;
    }
    pthread_mutex_lock(&lock);
    present[kind] = 0;
    load_tried[kind] = 0;
    load_error[kind][0] = '\0';
    pthread_mutex_unlock(&lock);
}

/* Loads the plugin for kind with lock held; records why it failed. The
 * library stays loaded for the life of the process (its functions are
 * called without further locking). */
static void load_plugin(int kind)
{
    const char *name = ftc_device_kind_name(kind);
    const char *symbol = FTC_DEVICE_PLUGIN_ENTRY_SYMBOL;
    char env[64], lib[128], why[640];
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
    typedef const ftc_device_plugin *(*entry_fn)(void);
    entry_fn entry;
    *(void **)&entry = dlsym(h, symbol);
    const ftc_device_plugin *table = entry != NULL ? entry() : NULL;
    const char *(*error)(void);
    *(void **)&error = dlsym(h, FTC_DEVICE_PLUGIN_ERROR_SYMBOL);
    const char *text = table == NULL && error != NULL ? error() : NULL;
    if (entry == NULL) {
        snprintf(why, sizeof(why), "does not export it");
    } else if (table == NULL && text != NULL && text[0] != '\0') {
        snprintf(why, sizeof(why), "returned no table: %s", text);
    } else if (table == NULL) {
        snprintf(why, sizeof(why),
                 "returned no table (its device runtime "
                 "is unusable in this process)");
    }
    if (table == NULL ||
        adopt(table, kind, &devices[kind], why, sizeof(why)) != 0) {
        snprintf(load_error[kind], sizeof(load_error[kind]),
                 "device kind '%s' is not available: plugin %s, symbol %s: "
                 "%s",
                 name, path, symbol, why);
        dlclose(h);
        return;
    }
    devices[kind].error = error;
    present[kind] = 1;
}

int ftc__device_rc(const ftc__device *dev, int rc)
{
    const char *text = rc < 0 && dev->error != NULL ? dev->error() : NULL;
    if (text != NULL && text[0] != '\0') {
        return ftc__seterr(rc, "device '%s': %s", dev->table.name, text);
    }
    return rc;
}

int ftc__device_get(int kind, const ftc__device **out)
{
    if (kind < 0 || kind >= FTC_DEVICE_KIND_COUNT) {
        return ftc__seterr(FTC_EINVAL, "device kind %d out of range", kind);
    }
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (!present[kind] && !load_tried[kind]) {
        if (kind == FTC_DEVICE_CPU) {
            load_tried[kind] = 1;
            present[kind] =
                adopt(&ftc__device_cpu_plugin, kind, &devices[kind],
                      load_error[kind], sizeof(load_error[kind])) == 0;
        } else {
            load_plugin(kind);
        }
    }
    if (!present[kind]) {
        rc = ftc__seterr(FTC_ENOTSUP, "%s", load_error[kind]);
    }
    pthread_mutex_unlock(&lock);
    *out = &devices[kind];
    return rc;
}
