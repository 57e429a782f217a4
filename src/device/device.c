/* The public device API: checks arguments and capabilities, then calls the
 * kind's plugin table. A missing capability is FTC_ENOTSUP, never a fallback.
 */
#include <string.h>

#include "base/base_int.h"
#include "device/device_int.h"

#define STREAM_MAGIC 0x5354524dU /* "STRM" */
#define EVENT_MAGIC 0x45564e54U  /* "EVNT" */

/* Streams and events share one layout; the magic tells them apart, so a
 * stream passed where an event is expected is caught. */
typedef struct handle {
    uint32_t magic;
    int index;
    const ftc__device *dev;
    void *impl;
} handle;

struct ftc_device_stream {
    handle h;
};

struct ftc_device_event {
    handle h;
};

static const char *const kind_names[FTC_DEVICE_KIND_COUNT] = {
    [FTC_DEVICE_CPU] = "cpu",
    [FTC_DEVICE_CUDA] = "cuda",
    [FTC_DEVICE_XPU] = "xpu",
};

const char *ftc_device_kind_name(int kind)
{
    if (kind < 0 || kind >= FTC_DEVICE_KIND_COUNT) {
        return "?";
    }
    return kind_names[kind];
}

int ftc_device_kind_parse(const char *name, int *kind)
{
    ftc__clearerr();
    for (int k = 0; name != NULL && k < FTC_DEVICE_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *kind = k;
            return 0;
        }
    }
    return ftc__seterr(FTC_EINVAL, "unknown device kind '%s'",
                       name != NULL ? name : "(null)");
}

int ftc_device_available(int kind)
{
    ftc__clearerr();
    const ftc__device *dev;
    return ftc__device_get(kind, &dev);
}

int ftc_device_caps(int kind, uint32_t *caps)
{
    ftc__clearerr();
    const ftc__device *dev;
    int rc = ftc__device_get(kind, &dev);
    if (rc == 0) {
        *caps = dev->caps;
    }
    return rc;
}

/* Capability check shared by the public calls: 0 or FTC_ENOTSUP naming
 * the first missing capability. */
static int require(const ftc__device *dev, uint32_t caps)
{
    uint32_t missing = caps & ~dev->caps;
    if (missing == 0) {
        return 0;
    }
    uint32_t first = missing & -missing;
    return ftc__seterr(FTC_ENOTSUP, "device '%s' lacks capability '%s'",
                       dev->table.name, ftc_device_cap_name(first));
}

int ftc_device_require(int kind, uint32_t caps)
{
    ftc__clearerr();
    const ftc__device *dev;
    int rc = ftc__device_get(kind, &dev);
    return rc != 0 ? rc : require(dev, caps);
}

int ftc_device_count(int kind, int *count)
{
    ftc__clearerr();
    const ftc__device *dev;
    int rc = ftc__device_get(kind, &dev);
    return rc != 0 ? rc : ftc__device_rc(dev, dev->table.count(count));
}

int ftc_device_memory_kind(int kind, const void *ptr, int *memory_kind)
{
    ftc__clearerr();
    if (ptr == NULL || memory_kind == NULL) {
        return ftc__seterr(FTC_EINVAL, "memory_kind: NULL argument");
    }
    const ftc__device *dev;
    int rc = ftc__device_get(kind, &dev);
    return rc != 0
               ? rc
               : ftc__device_rc(dev, dev->table.memory_kind(ptr, memory_kind));
}

/* Looks up kind, checks cap and that index names an existing device. */
static int prepare(int kind, int index, uint32_t cap, const ftc__device **dev)
{
    int rc = ftc__device_get(kind, dev);
    if (rc == 0) {
        rc = require(*dev, cap);
    }
    int n = 0;
    if (rc == 0) {
        rc = ftc__device_rc(*dev, (*dev)->table.count(&n));
    }
    if (rc == 0 && (index < 0 || index >= n)) {
        rc = ftc__seterr(FTC_EINVAL,
                         "device '%s' index %d out of range "
                         "(%d devices)",
                         (*dev)->table.name, index, n);
    }
    return rc;
}

/* Creates a stream or an event (chosen by magic) on kind:index. */
static int create_handle(int kind, int index, uint32_t magic, handle **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EINVAL, "create: out is NULL");
    }
    *out = NULL;
    int is_stream = magic == STREAM_MAGIC;
    const ftc__device *dev;
    int rc = prepare(kind, index,
                     is_stream ? FTC_DEVCAP_STREAMS : FTC_DEVCAP_EVENTS, &dev);
    if (rc != 0) {
        return rc;
    }
    handle *h = ftc__calloc(1, sizeof(ftc_device_stream));
    if (h == NULL) {
        return ftc__seterr(FTC_ENOMEM, "device handle: out of memory");
    }
    rc = ftc__device_rc(dev, is_stream
                                 ? dev->table.stream_create(index, &h->impl)
                                 : dev->table.event_create(index, &h->impl));
    if (rc != 0) {
        ftc__free(h);
        return rc;
    }
    h->magic = magic;
    h->index = index;
    h->dev = dev;
    *out = h;
    return 0;
}

int ftc_device_stream_create(int kind, int index, ftc_device_stream **out)
{
    return create_handle(kind, index, STREAM_MAGIC, (handle **)out);
}

void ftc_device_stream_destroy(ftc_device_stream *s)
{
    if (s == NULL || s->h.magic != STREAM_MAGIC) {
        return;
    }
    s->h.dev->table.stream_destroy(s->h.impl);
    s->h.magic = 0;
    ftc__free(s);
}

static int check_stream(const ftc_device_stream *s)
{
    if (s == NULL || s->h.magic != STREAM_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a device stream");
    }
    return 0;
}

static int check_event(const ftc_device_event *e)
{
    if (e == NULL || e->h.magic != EVENT_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a device event");
    }
    return 0;
}

int ftc_device_stream_synchronize(ftc_device_stream *s, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = check_stream(s);
    if (rc != 0) {
        return rc;
    }
    return ftc__device_rc(s->h.dev,
                          s->h.dev->table.stream_synchronize(
                              s->h.impl, ftc__deadline_in_ms(timeout_ms).ns));
}

/* A stream and an event meet only on the same device. */
static int same_device(const ftc_device_stream *s, const ftc_device_event *e)
{
    if (s->h.dev != e->h.dev || s->h.index != e->h.index) {
        return ftc__seterr(FTC_EINVAL,
                           "stream (%s:%d) and event (%s:%d) are on "
                           "different devices",
                           s->h.dev->table.name, s->h.index,
                           e->h.dev->table.name, e->h.index);
    }
    return 0;
}

int ftc_device_stream_wait_event(ftc_device_stream *s, ftc_device_event *e)
{
    ftc__clearerr();
    int rc = check_stream(s);
    if (rc == 0) {
        rc = check_event(e);
    }
    if (rc == 0) {
        rc = same_device(s, e);
    }
    return rc != 0 ? rc
                   : ftc__device_rc(s->h.dev, s->h.dev->table.stream_wait_event(
                                                  s->h.impl, e->h.impl));
}

int ftc_device_event_create(int kind, int index, ftc_device_event **out)
{
    return create_handle(kind, index, EVENT_MAGIC, (handle **)out);
}

void ftc_device_event_destroy(ftc_device_event *e)
{
    if (e == NULL || e->h.magic != EVENT_MAGIC) {
        return;
    }
    e->h.dev->table.event_destroy(e->h.impl);
    e->h.magic = 0;
    ftc__free(e);
}

int ftc_device_event_record(ftc_device_event *e, ftc_device_stream *s)
{
    ftc__clearerr();
    int rc = check_event(e);
    if (rc == 0) {
        rc = check_stream(s);
    }
    if (rc == 0) {
        rc = same_device(s, e);
    }
    return rc != 0 ? rc
                   : ftc__device_rc(e->h.dev, e->h.dev->table.event_record(
                                                  e->h.impl, s->h.impl));
}

int ftc_device_event_query(ftc_device_event *e, int *done)
{
    ftc__clearerr();
    int rc = check_event(e);
    if (rc == 0 && done == NULL) {
        rc = ftc__seterr(FTC_EINVAL, "event_query: done is NULL");
    }
    return rc != 0
               ? rc
               : ftc__device_rc(e->h.dev,
                                e->h.dev->table.event_query(e->h.impl, done));
}

int ftc_device_event_synchronize(ftc_device_event *e, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = check_event(e);
    return rc != 0 ? rc
                   : ftc__device_rc(
                         e->h.dev,
                         e->h.dev->table.event_synchronize(
                             e->h.impl, ftc__deadline_in_ms(timeout_ms).ns));
}
