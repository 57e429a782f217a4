/* The cuda device plugin (libftc_device_cuda.so) over the CUDA runtime.
 *
 * It never links libcudart: on the first ftc_device_plugin_entry() call it
 * dlopen's FTC_CUDA_RUNTIME, else libcudart.so.13, else libcudart.so.12,
 * and dlsym's every function it calls into one table (the toolkit's headers
 * give the types). A missing library or symbol, or a runtime with no
 * usable device (cudaGetDeviceCount failing: no driver, no device), makes
 * the entry return NULL with the reason in ftc_device_plugin_error(), which
 * the registry puts into ftc_device_available's FTC_ENOTSUP message.
 *
 * Streams and events are CUDA's own handles; a call that needs a current
 * device (create, IPC open) sets it for the call and restores the
 * caller's. Events are made with cudaEventDisableTiming|cudaEventInterprocess
 * so any of them can be shared (ipc_event_get), as the table requires. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftc/plugin/device.h"

/* The runtime calls the plugin uses, dlsym'd by name. */
#define CUDA_SYMBOLS(X)                                                        \
    X(cudaGetErrorString)                                                      \
    X(cudaGetErrorName)                                                        \
    X(cudaGetDeviceCount)                                                      \
    X(cudaGetDevice)                                                           \
    X(cudaSetDevice)                                                           \
    X(cudaPointerGetAttributes)                                                \
    X(cudaStreamCreateWithFlags)                                               \
    X(cudaStreamDestroy)                                                       \
    X(cudaStreamQuery)                                                         \
    X(cudaStreamWaitEvent)                                                     \
    X(cudaEventCreateWithFlags)                                                \
    X(cudaEventDestroy)                                                        \
    X(cudaEventRecord)                                                         \
    X(cudaEventQuery)                                                          \
    X(cudaIpcGetMemHandle)                                                     \
    X(cudaIpcOpenMemHandle)                                                    \
    X(cudaIpcCloseMemHandle)                                                   \
    X(cudaIpcGetEventHandle)                                                   \
    X(cudaIpcOpenEventHandle)

#define DECLARE(name) __typeof__(name) *name;
static struct {
    void *lib;
    const char *path; /* the library actually loaded, for messages */
    CUDA_SYMBOLS(DECLARE)
} rt;
#undef DECLARE

/* The calling thread's last failure, for ftc_device_plugin_error(). */
static _Thread_local char last_error[512];

static void set_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

FTC_PLUGIN_EXPORT const char *ftc_device_plugin_error(void)
{
    return last_error;
}

/* Maps a failed runtime call to an FTC_E* code and records CUDA's text. */
static int fail(const char *call, cudaError_t err)
{
    set_error("%s: %s: %s (%s, %d)", rt.path, call, rt.cudaGetErrorString(err),
              rt.cudaGetErrorName(err), (int)err);
    switch (err) {
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidResourceHandle:
        return FTC_EINVAL;
    case cudaErrorMemoryAllocation:
        return FTC_ENOMEM;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorNotSupported:
        return FTC_ENOTSUP;
    default:
        return FTC_ESYS;
    }
}

#define CHECK(call, args)                                                      \
    do {                                                                       \
        cudaError_t err_ = rt.call args;                                       \
        if (err_ != cudaSuccess) {                                             \
            rc = fail(#call, err_);                                            \
            goto out;                                                          \
        }                                                                      \
    } while (0)

/* Makes index the calling thread's device; *prev gets the old one. */
static int enter_device(int index, int *prev)
{
    int rc = 0;
    CHECK(cudaGetDevice, (prev));
    if (*prev != index) {
        CHECK(cudaSetDevice, (index));
    }
out:
    return rc;
}

static void leave_device(int index, int prev)
{
    if (prev != index) {
        rt.cudaSetDevice(prev);
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls query until it says done or deadline_ns passes, sleeping 1 us at
 * first and doubling up to 1 ms, so a short wait costs microseconds and a
 * long one little CPU (cudaStreamSynchronize has no deadline). */
static int poll_until(cudaError_t (*query)(void *), void *what,
                      const char *call, int64_t deadline_ns)
{
    long sleep_ns = 1000;
    for (;;) {
        cudaError_t err = query(what);
        if (err == cudaSuccess) {
            return 0;
        }
        if (err != cudaErrorNotReady) {
            return fail(call, err);
        }
        int64_t now = now_ns();
        if (now >= deadline_ns) {
            set_error("%s: not done before the deadline", call);
            return FTC_ETIMEDOUT;
        }
        if (deadline_ns - now < sleep_ns) {
            sleep_ns = (long)(deadline_ns - now);
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        sleep_ns = sleep_ns < 500000 ? sleep_ns * 2 : 1000000;
    }
}

static int cuda_count(int *out)
{
    int rc = 0;
    CHECK(cudaGetDeviceCount, (out));
out:
    return rc;
}

static int cuda_memory_kind(const void *ptr, int *out)
{
    int rc = 0;
    struct cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes, (&attr, ptr));
    switch (attr.type) {
    case cudaMemoryTypeHost:
        *out = FTC_MEMORY_HOST_PINNED;
        break;
    case cudaMemoryTypeDevice:
        *out = FTC_MEMORY_DEVICE;
        break;
    case cudaMemoryTypeManaged:
        *out = FTC_MEMORY_MANAGED;
        break;
    default:
        *out = FTC_MEMORY_HOST;
        break;
    }
out:
    return rc;
}

/* A stream is the runtime's cudaStream_t and an event its cudaEvent_t,
 * not a wrapper: a backend hands the stream it gets from the device layer
 * straight to NCCL (ncclAllReduce(..., stream)). */
static int cuda_stream_create(int index, void **out)
{
    int rc, prev = index;
    if ((rc = enter_device(index, &prev)) != 0) {
        return rc;
    }
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags, (&s, cudaStreamNonBlocking));
    *out = s;
out:
    leave_device(index, prev);
    return rc;
}

static void cuda_stream_destroy(void *s)
{
    rt.cudaStreamDestroy((cudaStream_t)s);
}

static cudaError_t query_stream(void *s)
{
    return rt.cudaStreamQuery((cudaStream_t)s);
}

static int cuda_stream_synchronize(void *s, int64_t deadline_ns)
{
    return poll_until(query_stream, s, "cudaStreamQuery", deadline_ns);
}

static int cuda_stream_wait_event(void *s, void *e)
{
    int rc = 0;
    CHECK(cudaStreamWaitEvent, ((cudaStream_t)s, (cudaEvent_t)e, 0));
out:
    return rc;
}

static int cuda_event_create(int index, void **out)
{
    int rc, prev = index;
    if ((rc = enter_device(index, &prev)) != 0) {
        return rc;
    }
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags,
          (&e, cudaEventDisableTiming | cudaEventInterprocess));
    *out = e;
out:
    leave_device(index, prev);
    return rc;
}

static void cuda_event_destroy(void *e)
{
    rt.cudaEventDestroy((cudaEvent_t)e);
}

static int cuda_event_record(void *e, void *s)
{
    int rc = 0;
    CHECK(cudaEventRecord, ((cudaEvent_t)e, (cudaStream_t)s));
out:
    return rc;
}

static cudaError_t query_event(void *e)
{
    return rt.cudaEventQuery((cudaEvent_t)e);
}

static int cuda_event_query(void *e, int *done)
{
    cudaError_t err = query_event(e);
    if (err == cudaSuccess || err == cudaErrorNotReady) {
        *done = err == cudaSuccess;
        return 0;
    }
    return fail("cudaEventQuery", err);
}

static int cuda_event_synchronize(void *e, int64_t deadline_ns)
{
    return poll_until(query_event, e, "cudaEventQuery", deadline_ns);
}

/* CUDA's IPC handles are 64 bytes; the table's slot holds 128. */
_Static_assert(sizeof(cudaIpcMemHandle_t) <= FTC_DEVICE_IPC_HANDLE_MAX,
               "cudaIpcMemHandle_t fits ftc_device_ipc_handle");
_Static_assert(sizeof(cudaIpcEventHandle_t) <= FTC_DEVICE_IPC_HANDLE_MAX,
               "cudaIpcEventHandle_t fits ftc_device_ipc_handle");

static int check_handle(const ftc_device_ipc_handle *h, size_t size,
                        const char *what)
{
    if (h->size != size) {
        set_error("%s: handle of %u bytes, CUDA's is %zu", what, h->size, size);
        return FTC_EINVAL;
    }
    return 0;
}

/* Copies CUDA's handle into the table's. */
static void put_handle(ftc_device_ipc_handle *out, const void *h, size_t size)
{
    memset(out, 0, sizeof(*out));
    out->size = (uint32_t)size;
    memcpy(out->bytes, h, size);
}

static int cuda_ipc_memory_get(const void *ptr, ftc_device_ipc_handle *out)
{
    int rc = 0;
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle, (&h, (void *)ptr));
    put_handle(out, &h, sizeof(h));
out:
    return rc;
}

static int cuda_ipc_memory_open(int index, const ftc_device_ipc_handle *handle,
                                void **ptr)
{
    int rc, prev = index;
    cudaIpcMemHandle_t h;
    if ((rc = check_handle(handle, sizeof(h), "ipc_memory_open")) != 0 ||
        (rc = enter_device(index, &prev)) != 0) {
        return rc;
    }
    memcpy(&h, handle->bytes, sizeof(h));
    CHECK(cudaIpcOpenMemHandle, (ptr, h, cudaIpcMemLazyEnablePeerAccess));
out:
    leave_device(index, prev);
    return rc;
}

static int cuda_ipc_memory_close(void *ptr)
{
    int rc = 0;
    CHECK(cudaIpcCloseMemHandle, (ptr));
out:
    return rc;
}

static int cuda_ipc_event_get(void *e, ftc_device_ipc_handle *out)
{
    int rc = 0;
    cudaIpcEventHandle_t h;
    CHECK(cudaIpcGetEventHandle, (&h, (cudaEvent_t)e));
    put_handle(out, &h, sizeof(h));
out:
    return rc;
}

static int cuda_ipc_event_open(int index, const ftc_device_ipc_handle *handle,
                               void **out)
{
    int rc, prev = index;
    cudaIpcEventHandle_t h;
    if ((rc = check_handle(handle, sizeof(h), "ipc_event_open")) != 0 ||
        (rc = enter_device(index, &prev)) != 0) {
        return rc;
    }
    memcpy(&h, handle->bytes, sizeof(h));
    cudaEvent_t e;
    CHECK(cudaIpcOpenEventHandle, (&e, h));
    *out = e;
out:
    leave_device(index, prev);
    return rc;
}

static const ftc_device_plugin table = {
    .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(ftc_device_plugin),
    .kind = FTC_DEVICE_CUDA,
    .name = "cuda",
    .host_access = 0,
    .count = cuda_count,
    .memory_kind = cuda_memory_kind,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_synchronize = cuda_event_synchronize,
    .stream_wait_event = cuda_stream_wait_event,
    .ipc_memory_get = cuda_ipc_memory_get,
    .ipc_memory_open = cuda_ipc_memory_open,
    .ipc_memory_close = cuda_ipc_memory_close,
    .ipc_event_get = cuda_ipc_event_get,
    .ipc_event_open = cuda_ipc_event_open,
    .ipc_event_close = cuda_event_destroy,
};

/* Opens the runtime: FTC_CUDA_RUNTIME, else the sonames CUDA 13 and 12
 * use. Returns 0, or -1 with the reason recorded. */
static int load_runtime(void)
{
    const char *env = getenv("FTC_CUDA_RUNTIME");
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12"};
    if (env != NULL && env[0] != '\0') {
        rt.path = env;
        rt.lib = dlopen(env, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (rt.lib == NULL) {
            set_error("cannot load the CUDA runtime FTC_CUDA_RUNTIME=%s: %s",
                      env, dlerror());
            return -1;
        }
    } else {
        for (size_t i = 0; i < 2 && rt.lib == NULL; i++) {
            rt.path = names[i];
            rt.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        }
        if (rt.lib == NULL) {
            set_error("cannot load the CUDA runtime (libcudart.so.13 or "
                      ".12; set FTC_CUDA_RUNTIME to its path): %s",
                      dlerror());
            return -1;
        }
    }
#define RESOLVE(name)                                                          \
    if ((*(void **)&rt.name = dlsym(rt.lib, #name)) == NULL) {                 \
        set_error("the CUDA runtime %s lacks symbol %s", rt.path, #name);      \
        return -1;                                                             \
    }
    CUDA_SYMBOLS(RESOLVE)
#undef RESOLVE
    return 0;
}

FTC_PLUGIN_EXPORT const ftc_device_plugin *ftc_device_plugin_entry(void)
{
    last_error[0] = '\0';
    if (load_runtime() != 0) {
        goto unusable;
    }
    int n;
    if (cuda_count(&n) != 0) {
        goto unusable;
    }
    return &table;
unusable:
    /* The registry unloads a plugin that returns NULL; the runtime stays
     * mapped (RTLD_NODELETE: it may have started threads). */
    if (rt.lib != NULL) {
        dlclose(rt.lib);
    }
    memset(&rt, 0, sizeof(rt));
    return NULL;
}
