/* The xpu device plugin: Intel GPUs through Level Zero, loaded at run time.
 *
 * Devices are the GPU root devices of every Level Zero driver, numbered in
 * driver order; each driver gets one context. A stream is an immediate
 * command list on the device's compute engine (work appended to it is
 * submitted at once, like a CUDA stream, with no list to close, execute
 * and reset per call). An event is a host-visible event in its own pool
 * (shareable with another process when the loader has the IPC calls):
 * record appends a barrier that signals it after everything before it on
 * the stream, query reads its status, synchronize waits on the host with
 * Level Zero's own timeout. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftc/plugin/device.h"
#include "xpu_int.h"

#define MAX_DRIVERS 16
#define MAX_DEVICES 64
/* How long destroying a stream or an event waits for the device to stop
 * using it; past that the object is leaked rather than freed under the
 * device's feet. */
#define DESTROY_WAIT_NS (30LL * 1000 * 1000 * 1000)

typedef struct xpu_device {
    ze_device_handle_t device;
    ze_context_handle_t context;
    uint32_t compute_ordinal; /* command queue group with compute */
} xpu_device;

/* Written once by the entry function (under the library's registry lock)
 * and only read afterwards. */
static struct {
    int ready;
    ftc__xpu_ze ze;
    ze_context_handle_t contexts[MAX_DRIVERS];
    int ncontexts;
    xpu_device devices[MAX_DEVICES];
    int count;
} xpu;

typedef struct xpu_event {
    int index;
    ze_event_pool_handle_t pool;
    ze_event_handle_t event;
    atomic_int recorded; /* never recorded: complete, as in CUDA */
} xpu_event;

typedef struct xpu_stream {
    int index;
    ze_command_list_handle_t list;
    xpu_event done; /* signalled by stream_synchronize's barrier */
    /* Appends to one command list must not run concurrently. */
    pthread_mutex_t lock;
} xpu_stream;

#define ZE (&xpu.ze)

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int check_index(int index)
{
    if (index < 0 || index >= xpu.count) {
        return ftc__xpu_fail(FTC_EINVAL, "xpu device %d out of range (%d)",
                             index, xpu.count);
    }
    return 0;
}

static int xpu_count(int *out)
{
    *out = xpu.count;
    return 0;
}

/* Level Zero's allocation table is the driver's, so any context of the
 * driver that made an allocation knows it (an allocation made in SYCL's or
 * PyTorch's context is found through ours); an unknown pointer is
 * ordinary host memory. */
static int xpu_memory_kind(const void *ptr, int *out)
{
    *out = FTC_MEMORY_HOST;
    for (int i = 0; i < xpu.ncontexts; i++) {
        ze_memory_allocation_properties_t props = {
            .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
        ze_result_t r =
            ZE->zeMemGetAllocProperties(xpu.contexts[i], ptr, &props, NULL);
        if (r != ZE_RESULT_SUCCESS) {
            return ftc__xpu_ze_fail("zeMemGetAllocProperties", r);
        }
        switch (props.type) {
        case ZE_MEMORY_TYPE_HOST:
            *out = FTC_MEMORY_HOST_PINNED;
            return 0;
        case ZE_MEMORY_TYPE_DEVICE:
            *out = FTC_MEMORY_DEVICE;
            return 0;
        case ZE_MEMORY_TYPE_SHARED:
            *out = FTC_MEMORY_MANAGED;
            return 0;
        default:
            break;
        }
    }
    return 0;
}

/* Every event: the only one of its pool, visible to the host. */
static const ze_event_desc_t host_event_desc = {
    .stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
    .index = 0,
    .signal = ZE_EVENT_SCOPE_FLAG_HOST,
    .wait = ZE_EVENT_SCOPE_FLAG_HOST,
};

/* Makes a one-event pool on device index and its event. */
static int event_init(xpu_event *e, int index)
{
    const xpu_device *d = &xpu.devices[index];
    ze_event_pool_desc_t pool_desc = {
        .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
        .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                 (ZE->ipc_events ? ZE_EVENT_POOL_FLAG_IPC : 0),
        .count = 1,
    };
    ze_device_handle_t dev = d->device;
    memset(e, 0, sizeof(*e));
    e->index = index;
    ze_result_t r =
        ZE->zeEventPoolCreate(d->context, &pool_desc, 1, &dev, &e->pool);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeEventPoolCreate", r);
    }
    r = ZE->zeEventCreate(e->pool, &host_event_desc, &e->event);
    if (r != ZE_RESULT_SUCCESS) {
        ZE->zeEventPoolDestroy(e->pool);
        return ftc__xpu_ze_fail("zeEventCreate", r);
    }
    return 0;
}

/* Waits on the host until e is signalled or deadline_ns passes. */
static int event_wait(xpu_event *e, int64_t deadline_ns)
{
    if (!atomic_load(&e->recorded)) {
        return 0;
    }
    uint64_t timeout = UINT64_MAX;
    if (deadline_ns != FTC_PLUGIN_DEADLINE_NEVER) {
        int64_t left = deadline_ns - now_ns();
        timeout = left > 0 ? (uint64_t)left : 0;
    }
    ze_result_t r = ZE->zeEventHostSynchronize(e->event, timeout);
    if (r == ZE_RESULT_NOT_READY) {
        return ftc__xpu_fail(FTC_ETIMEDOUT,
                             "xpu device %d: event not signalled before "
                             "the deadline",
                             e->index);
    }
    return r == ZE_RESULT_SUCCESS
               ? 0
               : ftc__xpu_ze_fail("zeEventHostSynchronize", r);
}

/* Releases e once the device is done with it (or leaks it if the device
 * never finishes). */
static void event_fini(xpu_event *e)
{
    if (event_wait(e, now_ns() + DESTROY_WAIT_NS) != 0) {
        return;
    }
    ZE->zeEventDestroy(e->event);
    ZE->zeEventPoolDestroy(e->pool);
}

/* Appends a barrier that signals e after all earlier work on s; with the
 * stream's lock held. */
static int signal_after(xpu_stream *s, xpu_event *e)
{
    ze_result_t r = ZE->zeEventHostReset(e->event);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeEventHostReset", r);
    }
    r = ZE->zeCommandListAppendBarrier(s->list, e->event, 0, NULL);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeCommandListAppendBarrier", r);
    }
    atomic_store(&e->recorded, 1);
    return 0;
}

static int xpu_stream_create(int index, void **out)
{
    int rc = check_index(index);
    if (rc != 0) {
        return rc;
    }
    const xpu_device *d = &xpu.devices[index];
    xpu_stream *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return ftc__xpu_fail(FTC_ENOMEM, "xpu stream: out of memory");
    }
    s->index = index;
    ze_command_queue_desc_t desc = {
        .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
        .ordinal = d->compute_ordinal,
        .index = 0,
        .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
        .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
    };
    ze_result_t r = ZE->zeCommandListCreateImmediate(d->context, d->device,
                                                     &desc, &s->list);
    if (r != ZE_RESULT_SUCCESS) {
        free(s);
        return ftc__xpu_ze_fail("zeCommandListCreateImmediate", r);
    }
    rc = event_init(&s->done, index);
    if (rc != 0) {
        ZE->zeCommandListDestroy(s->list);
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return 0;
}

static int xpu_stream_synchronize(void *stream, int64_t deadline_ns)
{
    xpu_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    int rc = signal_after(s, &s->done);
    if (rc == 0) {
        rc = event_wait(&s->done, deadline_ns);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static void xpu_stream_destroy(void *stream)
{
    xpu_stream *s = stream;
    if (xpu_stream_synchronize(s, now_ns() + DESTROY_WAIT_NS) != 0) {
        return; /* the device still uses it: leaked, never freed early */
    }
    event_fini(&s->done);
    ZE->zeCommandListDestroy(s->list);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int xpu_event_create(int index, void **out)
{
    int rc = check_index(index);
    if (rc != 0) {
        return rc;
    }
    xpu_event *e = malloc(sizeof(*e));
    if (e == NULL) {
        return ftc__xpu_fail(FTC_ENOMEM, "xpu event: out of memory");
    }
    rc = event_init(e, index);
    if (rc != 0) {
        free(e);
        return rc;
    }
    *out = e;
    return 0;
}

static void xpu_event_destroy(void *event)
{
    xpu_event *e = event;
    event_fini(e);
    free(e);
}

static int xpu_event_record(void *event, void *stream)
{
    xpu_stream *s = stream;
    pthread_mutex_lock(&s->lock);
    int rc = signal_after(s, event);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static int xpu_event_query(void *event, int *done)
{
    xpu_event *e = event;
    if (!atomic_load(&e->recorded)) {
        *done = 1;
        return 0;
    }
    ze_result_t r = ZE->zeEventQueryStatus(e->event);
    if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_NOT_READY) {
        return ftc__xpu_ze_fail("zeEventQueryStatus", r);
    }
    *done = r == ZE_RESULT_SUCCESS;
    return 0;
}

static int xpu_event_synchronize(void *event, int64_t deadline_ns)
{
    return event_wait(event, deadline_ns);
}

static int xpu_stream_wait_event(void *stream, void *event)
{
    xpu_stream *s = stream;
    xpu_event *e = event;
    if (!atomic_load(&e->recorded)) {
        return 0;
    }
    pthread_mutex_lock(&s->lock);
    ze_result_t r = ZE->zeCommandListAppendWaitOnEvents(s->list, 1, &e->event);
    pthread_mutex_unlock(&s->lock);
    return r == ZE_RESULT_SUCCESS
               ? 0
               : ftc__xpu_ze_fail("zeCommandListAppendWaitOnEvents", r);
}

/* The context whose driver made the allocation holding ptr. */
static int context_of(const void *ptr, ze_context_handle_t *out)
{
    for (int i = 0; i < xpu.ncontexts; i++) {
        ze_memory_allocation_properties_t props = {
            .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
        ze_result_t r =
            ZE->zeMemGetAllocProperties(xpu.contexts[i], ptr, &props, NULL);
        if (r == ZE_RESULT_SUCCESS && props.type != ZE_MEMORY_TYPE_UNKNOWN) {
            *out = xpu.contexts[i];
            return 0;
        }
    }
    return ftc__xpu_fail(FTC_EINVAL,
                         "%p is not a Level Zero allocation of any xpu "
                         "driver",
                         ptr);
}

_Static_assert(sizeof(ze_ipc_mem_handle_t) <= FTC_DEVICE_IPC_HANDLE_MAX,
               "ze_ipc_mem_handle_t fits an ftc IPC handle");
_Static_assert(sizeof(ze_ipc_event_pool_handle_t) <= FTC_DEVICE_IPC_HANDLE_MAX,
               "ze_ipc_event_pool_handle_t fits an ftc IPC handle");

/* Copies a Level Zero IPC handle of size bytes into out. */
static void handle_put(ftc_device_ipc_handle *out, const void *h, size_t size)
{
    memset(out, 0, sizeof(*out));
    out->size = (uint32_t)size;
    memcpy(out->bytes, h, size);
}

/* Checks index and that handle holds a Level Zero IPC handle of size bytes
 * (what: "memory" or "event"), and copies it into h. */
static int handle_take(int index, const ftc_device_ipc_handle *handle, void *h,
                       size_t size, const char *what)
{
    int rc = check_index(index);
    if (rc == 0 && handle->size != size) {
        rc =
            ftc__xpu_fail(FTC_EINVAL, "xpu IPC %s handle has %u bytes, not %zu",
                          what, handle->size, size);
    }
    if (rc == 0) {
        memcpy(h, handle->bytes, size);
    }
    return rc;
}

static int xpu_ipc_memory_get(const void *ptr, ftc_device_ipc_handle *out)
{
    ze_context_handle_t ctx;
    int rc = context_of(ptr, &ctx);
    if (rc != 0) {
        return rc;
    }
    ze_ipc_mem_handle_t h;
    ze_result_t r = ZE->zeMemGetIpcHandle(ctx, ptr, &h);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeMemGetIpcHandle", r);
    }
    handle_put(out, &h, sizeof(h));
    return 0;
}

static int xpu_ipc_memory_open(int index, const ftc_device_ipc_handle *handle,
                               void **ptr)
{
    ze_ipc_mem_handle_t h;
    int rc = handle_take(index, handle, &h, sizeof(h), "memory");
    if (rc != 0) {
        return rc;
    }
    const xpu_device *d = &xpu.devices[index];
    ze_result_t r = ZE->zeMemOpenIpcHandle(d->context, d->device, h, 0, ptr);
    return r == ZE_RESULT_SUCCESS ? 0
                                  : ftc__xpu_ze_fail("zeMemOpenIpcHandle", r);
}

static int xpu_ipc_memory_close(void *ptr)
{
    ze_context_handle_t ctx;
    int rc = context_of(ptr, &ctx);
    if (rc != 0) {
        return rc;
    }
    ze_result_t r = ZE->zeMemCloseIpcHandle(ctx, ptr);
    return r == ZE_RESULT_SUCCESS ? 0
                                  : ftc__xpu_ze_fail("zeMemCloseIpcHandle", r);
}

/* An event's IPC handle is its pool's: each event has a pool of its own,
 * so the handle names exactly one event (index 0). */
static int xpu_ipc_event_get(void *event, ftc_device_ipc_handle *out)
{
    xpu_event *e = event;
    ze_ipc_event_pool_handle_t h;
    ze_result_t r = ZE->zeEventPoolGetIpcHandle(e->pool, &h);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeEventPoolGetIpcHandle", r);
    }
    handle_put(out, &h, sizeof(h));
    return 0;
}

static int xpu_ipc_event_open(int index, const ftc_device_ipc_handle *handle,
                              void **event)
{
    ze_ipc_event_pool_handle_t h;
    int rc = handle_take(index, handle, &h, sizeof(h), "event");
    xpu_event *e = rc == 0 ? calloc(1, sizeof(*e)) : NULL;
    if (rc == 0 && e == NULL) {
        rc = ftc__xpu_fail(FTC_ENOMEM, "xpu event: out of memory");
    }
    if (rc != 0) {
        return rc;
    }
    e->index = index;
    /* Its owner records it: the status is read, never assumed. */
    atomic_store(&e->recorded, 1);
    ze_result_t r =
        ZE->zeEventPoolOpenIpcHandle(xpu.devices[index].context, h, &e->pool);
    if (r != ZE_RESULT_SUCCESS) {
        free(e);
        return ftc__xpu_ze_fail("zeEventPoolOpenIpcHandle", r);
    }
    r = ZE->zeEventCreate(e->pool, &host_event_desc, &e->event);
    if (r != ZE_RESULT_SUCCESS) {
        ZE->zeEventPoolCloseIpcHandle(e->pool);
        free(e);
        return ftc__xpu_ze_fail("zeEventCreate", r);
    }
    *event = e;
    return 0;
}

static void xpu_ipc_event_close(void *event)
{
    xpu_event *e = event;
    /* Not waited for: the owner signals it, maybe never. */
    ZE->zeEventDestroy(e->event);
    ZE->zeEventPoolCloseIpcHandle(e->pool);
    free(e);
}

/* The first compute-capable command queue group of a device. */
static int compute_ordinal(ze_device_handle_t dev, uint32_t *out)
{
    uint32_t n = 0;
    ze_result_t r = ZE->zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeDeviceGetCommandQueueGroupProperties", r);
    }
    ze_command_queue_group_properties_t props[16];
    n = n < 16 ? n : 16;
    for (uint32_t i = 0; i < n; i++) {
        props[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    }
    r = ZE->zeDeviceGetCommandQueueGroupProperties(dev, &n, props);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeDeviceGetCommandQueueGroupProperties", r);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
            *out = i;
            return 0;
        }
    }
    return ftc__xpu_fail(FTC_ENOTSUP,
                         "Level Zero GPU device has no compute engine");
}

/* Adds the GPU root devices of driver, and a context for them. */
static int add_driver(ze_driver_handle_t driver)
{
    uint32_t n = 0;
    ze_result_t r = ZE->zeDeviceGet(driver, &n, NULL);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeDeviceGet", r);
    }
    ze_device_handle_t devs[MAX_DEVICES];
    n = n < MAX_DEVICES ? n : MAX_DEVICES;
    r = ZE->zeDeviceGet(driver, &n, devs);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_ze_fail("zeDeviceGet", r);
    }
    ze_context_handle_t ctx = NULL;
    for (uint32_t i = 0; i < n && xpu.count < MAX_DEVICES; i++) {
        ze_device_properties_t props = {
            .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        r = ZE->zeDeviceGetProperties(devs[i], &props);
        if (r != ZE_RESULT_SUCCESS) {
            return ftc__xpu_ze_fail("zeDeviceGetProperties", r);
        }
        if (props.type != ZE_DEVICE_TYPE_GPU) {
            continue;
        }
        if (ctx == NULL) {
            ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
            r = ZE->zeContextCreate(driver, &desc, &ctx);
            if (r != ZE_RESULT_SUCCESS) {
                return ftc__xpu_ze_fail("zeContextCreate", r);
            }
            xpu.contexts[xpu.ncontexts++] = ctx;
        }
        xpu_device *d = &xpu.devices[xpu.count];
        int rc = compute_ordinal(devs[i], &d->compute_ordinal);
        if (rc != 0) {
            return rc;
        }
        d->device = devs[i];
        d->context = ctx;
        xpu.count++;
    }
    return 0;
}

/* The GPU drivers: zeInitDrivers where the loader has it (it initialises
 * only GPU drivers), else zeInit(0) and zeDriverGet. */
static int get_drivers(ze_driver_handle_t *drivers, uint32_t *n)
{
    if (ZE->zeInitDrivers != NULL) {
        ftc__xpu_init_driver_desc desc = {
            .stype = FTC__XPU_STYPE_INIT_DRIVER_TYPE_DESC,
            .flags = FTC__XPU_INIT_DRIVER_TYPE_FLAG_GPU,
        };
        uint32_t max = *n;
        *n = 0;
        ze_result_t r = ZE->zeInitDrivers(n, NULL, &desc);
        if (r == ZE_RESULT_SUCCESS) {
            *n = *n < max ? *n : max;
            r = ZE->zeInitDrivers(n, drivers, &desc);
        }
        return r == ZE_RESULT_SUCCESS ? 0
                                      : ftc__xpu_ze_fail("zeInitDrivers", r);
    }
    ze_result_t r = ZE->zeInit(0);
    if (r != ZE_RESULT_SUCCESS) {
        return ftc__xpu_fail(ftc__xpu_ze_code(r),
                             "Level Zero zeInit failed: %s (0x%x): no "
                             "usable Level Zero driver (loader %s)",
                             ftc__xpu_ze_result_name(r), (unsigned)r, ZE->path);
    }
    uint32_t max = *n;
    *n = 0;
    r = ZE->zeDriverGet(n, NULL);
    if (r == ZE_RESULT_SUCCESS) {
        *n = *n < max ? *n : max;
        r = ZE->zeDriverGet(n, drivers);
    }
    return r == ZE_RESULT_SUCCESS ? 0 : ftc__xpu_ze_fail("zeDriverGet", r);
}

/* Loads Level Zero and finds the devices. On failure nothing is left
 * open but the loader itself once a driver was asked (a loader is not
 * unloaded after zeInit) and the message says why. */
static int xpu_init(void)
{
    memset(&xpu, 0, sizeof(xpu));
    int rc = ftc__xpu_ze_load(ZE);
    if (rc != 0) {
        return rc;
    }
    ze_driver_handle_t drivers[MAX_DRIVERS];
    uint32_t n = MAX_DRIVERS;
    rc = get_drivers(drivers, &n);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = add_driver(drivers[i]);
    }
    if (rc == 0 && xpu.count == 0) {
        rc = ftc__xpu_fail(FTC_ENOTSUP,
                           "Level Zero (loader %s) found no GPU device "
                           "(%u drivers)",
                           ZE->path, n);
    }
    if (rc != 0) {
        for (int i = 0; i < xpu.ncontexts; i++) {
            ZE->zeContextDestroy(xpu.contexts[i]);
        }
        xpu.ncontexts = 0;
        xpu.count = 0;
    }
    return rc;
}

static ftc_device_plugin table = {
    .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(ftc_device_plugin),
    .kind = FTC_DEVICE_XPU,
    .name = "xpu",
    .host_access = 0,
    .count = xpu_count,
    .memory_kind = xpu_memory_kind,
    .stream_create = xpu_stream_create,
    .stream_destroy = xpu_stream_destroy,
    .stream_synchronize = xpu_stream_synchronize,
    .event_create = xpu_event_create,
    .event_destroy = xpu_event_destroy,
    .event_record = xpu_event_record,
    .event_query = xpu_event_query,
    .event_synchronize = xpu_event_synchronize,
    .stream_wait_event = xpu_stream_wait_event,
};

const ftc_device_plugin *ftc_device_plugin_entry(void)
{
    if (xpu.ready) {
        return &table;
    }
    if (xpu_init() != 0) {
        return NULL;
    }
    if (ZE->ipc_memory) {
        table.ipc_memory_get = xpu_ipc_memory_get;
        table.ipc_memory_open = xpu_ipc_memory_open;
        table.ipc_memory_close = xpu_ipc_memory_close;
    }
    if (ZE->ipc_events) {
        table.ipc_event_get = xpu_ipc_event_get;
        table.ipc_event_open = xpu_ipc_event_open;
        table.ipc_event_close = xpu_ipc_event_close;
    }
    xpu.ready = 1;
    return &table;
}
