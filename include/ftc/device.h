/* ftc/device.h: device kinds (cpu now; cuda and xpu as plugins later) and
 * the capabilities each offers: device count, memory kind of a buffer,
 * streams, events, and whether events and memory can cross processes.
 *
 * Code asks for a capability and gets FTC_ENOTSUP with a message naming
 * the kind and the missing capability when it is absent; nothing silently
 * falls back to another device or to a slower path.
 *
 * Thread-safety: every call may be made from any thread. Stream and event
 * handles follow the device's own rules (for cpu they are inert). */
#ifndef FTC_DEVICE_H
#define FTC_DEVICE_H

#include "ftc/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device kind. CPU is always available; the others come from a plugin
 * library loaded on first use (see docs/operations.md) and report
 * FTC_ENOTSUP until one is installed. */
typedef enum ftc_device_kind {
    FTC_DEVICE_CPU = 0,
    FTC_DEVICE_CUDA = 1,
    FTC_DEVICE_XPU = 2,
    FTC_DEVICE_KIND_COUNT = 3,
} ftc_device_kind;

/* Capability bits (ftc_device_caps). */
typedef enum ftc_device_cap {
    FTC_DEVCAP_HOST_ACCESS = 1u << 0, /* the CPU can read/write its buffers */
    FTC_DEVCAP_STREAMS = 1u << 1,     /* ordered work queues */
    FTC_DEVCAP_EVENTS = 1u << 2,      /* record/query/synchronize */
    FTC_DEVCAP_IPC_EVENTS = 1u << 3,  /* an event can be shared with another
                                         process */
    FTC_DEVCAP_IPC_MEMORY = 1u << 4,  /* a buffer can be mapped by another
                                         process */
} ftc_device_cap;

/* Where a buffer lives (ftc_device_memory_kind). */
typedef enum ftc_memory_kind {
    FTC_MEMORY_HOST = 0,        /* ordinary pageable host memory */
    FTC_MEMORY_HOST_PINNED = 1, /* page-locked host memory */
    FTC_MEMORY_DEVICE = 2,      /* device memory, not host-addressable */
    FTC_MEMORY_MANAGED = 3,     /* migrates between host and device */
} ftc_memory_kind;

/* "cpu", "cuda", "xpu"; "?" for an unknown kind. Static string. */
FTC_API const char *ftc_device_kind_name(int kind);

/* Parses a kind name. FTC_EINVAL for an unknown name. */
FTC_API int ftc_device_kind_parse(const char *name, int *kind /* OUT */);

/* 0 if the kind is usable in this process (for a plugin kind this loads
 * the plugin on first call); FTC_ENOTSUP with the reason otherwise;
 * FTC_EINVAL for a kind out of range. */
FTC_API int ftc_device_available(int kind);

/* The kind's capability bits (FTC_DEVCAP_*). Errors as for _available. */
FTC_API int ftc_device_caps(int kind, uint32_t *caps /* OUT */);

/* 0 if the kind has every capability in caps, else FTC_ENOTSUP naming the
 * first missing one ("device 'cpu' lacks capability 'ipc_memory'"). */
FTC_API int ftc_device_require(int kind, uint32_t caps);

/* The static name of one capability bit ("streams"), or "?". */
FTC_API const char *ftc_device_cap_name(uint32_t cap);

/* Devices of this kind visible to this process. For cpu it is 1 unless the
 * environment variable FTC_CPU_DEVICE_COUNT (1..4096) says otherwise, which
 * lets a CPU-only job describe nodes with several ranks each. */
FTC_API int ftc_device_count(int kind, int *count /* OUT */);

/* The memory kind (FTC_MEMORY_*) of the buffer at ptr, as the device kind
 * sees it. FTC_EINVAL for NULL. */
FTC_API int ftc_device_memory_kind(int kind, const void *ptr,
                                   int *memory_kind /* OUT */);

/* Streams and events. Creating one needs FTC_DEVCAP_STREAMS or
 * FTC_DEVCAP_EVENTS (else FTC_ENOTSUP) and a device index in
 * [0, count) (else FTC_EINVAL). On cpu both exist and are inert: work is
 * synchronous, so a recorded event is complete at once. Handles are
 * released with their _destroy (NULL is a no-op). */
typedef struct ftc_device_stream ftc_device_stream;
typedef struct ftc_device_event ftc_device_event;

FTC_API int ftc_device_stream_create(int kind, int index,
                                     ftc_device_stream **out);
FTC_API void ftc_device_stream_destroy(ftc_device_stream *stream);
/* Blocks until the stream's queued work is done (FTC_ETIMEDOUT). */
FTC_API int ftc_device_stream_synchronize(ftc_device_stream *stream,
                                          int64_t timeout_ms);
/* Makes later work on stream wait for event (no host blocking). */
FTC_API int ftc_device_stream_wait_event(ftc_device_stream *stream,
                                         ftc_device_event *event);

FTC_API int ftc_device_event_create(int kind, int index,
                                    ftc_device_event **out);
FTC_API void ftc_device_event_destroy(ftc_device_event *event);
/* Records the event at the current end of stream (stream of the same kind
 * and index). */
FTC_API int ftc_device_event_record(ftc_device_event *event,
                                    ftc_device_stream *stream);
/* *done = 1 once the work before the record point has finished. */
FTC_API int ftc_device_event_query(ftc_device_event *event, int *done);
FTC_API int ftc_device_event_synchronize(ftc_device_event *event,
                                         int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
