/* The cpu device: host memory only, and inert streams and events (work on
 * a cpu "stream" is synchronous, so every event is complete at once). */
#include <stdlib.h>

#include "base/base_int.h"
#include "device/device_int.h"

static int cpu_count(int *out)
{
    /* One device per process unless the operator describes nodes with
     * several CPU ranks each (hybrid-shard layouts on CPU-only jobs). */
    ftc__device_env de;
    ftc__device_env_read(&de);
    const char *env = de.cpu_device_count;
    if (env == NULL || env[0] == '\0') {
        *out = 1;
        return 0;
    }
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
        return ftc__seterr(FTC_EINVAL,
                           "FTC_CPU_DEVICE_COUNT='%s' is not an integer in "
                           "1..4096",
                           env);
    }
    *out = (int)n;
    return 0;
}

static int cpu_memory_kind(const void *ptr, int *out)
{
    (void)ptr;
    *out = FTC_MEMORY_HOST;
    return 0;
}

/* Streams and events need distinct non-NULL handles but carry no state. */
static int cpu_handle_create(int index, void **out)
{
    (void)index;
    *out = ftc__malloc(1);
    if (*out == NULL) {
        return ftc__seterr(FTC_ENOMEM, "cpu stream/event: out of memory");
    }
    return 0;
}

static void cpu_handle_destroy(void *h)
{
    ftc__free(h);
}

static int cpu_synchronize(void *h, ftc__deadline dl)
{
    (void)h;
    (void)dl;
    return 0;
}

static int cpu_pair_noop(void *a, void *b)
{
    (void)a;
    (void)b;
    return 0;
}

static int cpu_event_query(void *event, int *done)
{
    (void)event;
    *done = 1;
    return 0;
}

const ftc__device_ops ftc__device_cpu_ops = {
    .kind = FTC_DEVICE_CPU,
    .name = "cpu",
    .caps = FTC_DEVCAP_HOST_ACCESS | FTC_DEVCAP_STREAMS | FTC_DEVCAP_EVENTS,
    .count = cpu_count,
    .memory_kind = cpu_memory_kind,
    .stream_create = cpu_handle_create,
    .stream_destroy = cpu_handle_destroy,
    .stream_synchronize = cpu_synchronize,
    .stream_wait_event = cpu_pair_noop,
    .event_create = cpu_handle_create,
    .event_destroy = cpu_handle_destroy,
    .event_record = cpu_pair_noop,
    .event_query = cpu_event_query,
    .event_synchronize = cpu_synchronize,
};
