/* The tracer behind FTC_TRACE (include/ftc/base.h): events buffered in
 * memory as Chrome/Perfetto trace-event JSON text, written at exit and on
 * ftc_trace_flush. Off, every call costs one atomic load. */
#ifndef FTC_BASE_TRACE_H
#define FTC_BASE_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default cap on the buffered events' text (FTC_TRACE_MAX_MB overrides):
 * events beyond it are dropped and counted (otherData.dropped_events). */
#define FTC__TRACE_DEFAULT_MAX_BYTES ((size_t)64 << 20)

/* 0: FTC_TRACE not read yet; 1: off; 2: on. */
extern atomic_int ftc__trace_state;

/* Reads FTC_TRACE once (thread-safe) and opens the tracer; true if on. */
bool ftc__trace_start(void);

/* Acquire (a plain load on x86): a thread that sees the tracer on also
 * sees what its opening wrote (pid, buffers). */
static inline bool ftc__trace_on(void)
{
    int s = atomic_load_explicit(&ftc__trace_state, memory_order_acquire);
    return s == 2 || (s == 0 && ftc__trace_start());
}

/* Now on the monotonic clock in ns when tracing, else 0: a span's start
 * that costs nothing when off (the end then skips the event). */
int64_t ftc__trace_clock(void);

/* One member of an event's args object: key (a literal: not escaped)
 * and a value of its kind (a string is escaped). Built with the macros. */
typedef enum ftc__trace_kind {
    FTC__TRACE_INT,
    FTC__TRACE_UINT,
    FTC__TRACE_BOOL,
    FTC__TRACE_STR,
} ftc__trace_kind;

typedef struct ftc__trace_arg {
    const char *key;
    ftc__trace_kind kind;
    const char *str;
    uint64_t num; /* INT: the int64_t's bits */
} ftc__trace_arg;

#define FTC__TRACE_ARG_INT(k, v)                                               \
    ((ftc__trace_arg){(k), FTC__TRACE_INT, NULL, (uint64_t)(int64_t)(v)})
#define FTC__TRACE_ARG_UINT(k, v)                                              \
    ((ftc__trace_arg){(k), FTC__TRACE_UINT, NULL, (uint64_t)(v)})
#define FTC__TRACE_ARG_BOOL(k, v)                                              \
    ((ftc__trace_arg){(k), FTC__TRACE_BOOL, NULL, (v) ? 1u : 0u})
#define FTC__TRACE_ARG_STR(k, v) ((ftc__trace_arg){(k), FTC__TRACE_STR, (v), 0})

/* Records one complete span ("X") of this thread: category, name and
 * t0..t1 (ns, monotonic), with the n args (args may be NULL when n is 0)
 * after the current step. */
void ftc__trace_span(const char *cat, const char *name, int64_t t0_ns,
                     int64_t t1_ns, const ftc__trace_arg *args, size_t n);

/* Records an operation that may overlap others of this thread (an
 * asynchronous collective) as an async begin/end pair ("b"/"e") with a
 * fresh id, so that viewers draw overlapping ones side by side. step is
 * the step when it started (-1: none). */
void ftc__trace_async(const char *cat, const char *name, int64_t t0_ns,
                      int64_t t1_ns, int64_t step, const ftc__trace_arg *args,
                      size_t n);

/* The step set by ftc_trace_set_step (-1: none). */
int64_t ftc__trace_step(void);

/* Opens the tracer on path (no "%p" expansion) with a cap of max_bytes
 * (0: the default): checks that path.tmp can be created, and on failure
 * logs "trace.open", leaves tracing off and returns FTC_ESYS. Replaces
 * FTC_TRACE: the tests and ftc__trace_start use it. */
int ftc__trace_open(const char *path, size_t max_bytes);

/* Flushes, then frees everything and turns tracing off. Only when no
 * other thread traces (tests). */
int ftc__trace_close(void);

/* Events dropped at the cap since the tracer was opened. */
uint64_t ftc__trace_dropped(void);

#endif
