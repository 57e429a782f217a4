/* ftc/base.h: error codes, error messages, logging, timeouts and version.
 * Every other public header includes this one. */
#ifndef FTC_BASE_H
#define FTC_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FTC_BUILDING_LIBRARY)
#define FTC_API __attribute__((visibility("default")))
#else
#define FTC_API
#endif

/* Every ftc call returns int: FTC_OK (0) or one of these negative codes.
 * The code says what kind of failure it was; ftc_last_error() says which. */
typedef enum ftc_err {
    FTC_OK = 0,
    FTC_EINVAL = -1,     /* an argument is out of range or malformed */
    FTC_ENOMEM = -2,     /* an allocation failed */
    FTC_ETIMEDOUT = -3,  /* the deadline passed before the call completed */
    FTC_ECANCELED = -4,  /* cancelled or aborted by another thread */
    FTC_ECLOSED = -5,    /* the connection or handle is closed */
    FTC_EPROTO = -6,     /* the peer broke the wire protocol */
    FTC_EMSGSIZE = -7,   /* a length exceeds a configured limit */
    FTC_EAUTH = -8,      /* authentication failed */
    FTC_ESTALE = -9,     /* a message or handle from an older epoch */
    FTC_EPEER = -10,     /* a peer failed (died, reset, stopped answering) */
    FTC_EMISUSE = -11,   /* the API was used wrongly (NULL or bad handle) */
    FTC_ESYS = -12,      /* an operating-system call failed */
    FTC_ENOTSUP = -13,   /* a capability is missing */
    FTC_EEXIST = -14,    /* the name is already in use */
    FTC_ENOENT = -15,    /* no such key, item or member */
    FTC_EFINISHED = -16, /* the job finished: nothing is left to do */
} ftc_err;

/* A static, never-NULL description of a code; unknown codes included. */
FTC_API const char *ftc_strerror(int code);

/* The short symbolic name of a code ("FTC_ETIMEDOUT"), or "FTC_E?". */
FTC_API const char *ftc_err_name(int code);

/* This thread's detail message for the last failing ftc call ("" when none).
 * The text is owned by the library and valid until this thread's next ftc
 * call. Thread-local because handles are shared between threads. */
FTC_API const char *ftc_last_error(void);

/* The timeout rule. Every timeout of the API, a timeout_ms argument or a
 * timeout field of an options struct, is in milliseconds and is exactly one
 * of: a value >= 0 (0: do not wait, try once), FTC_TIMEOUT_INFINITE, or
 * FTC_TIMEOUT_DEFAULT (an argument: the handle's configured default; an
 * options field: the default documented for that field). Any other value
 * is FTC_EINVAL, with a message naming the call and the value, and the
 * call then has done nothing. */
#define FTC_TIMEOUT_INFINITE ((int64_t)-1)
#define FTC_TIMEOUT_DEFAULT ((int64_t)-2)

/* Options structs (ftc_*_opts). Each has an _init that fills every field
 * with its default (or a documented "unset" sentinel; 0 is never "unset":
 * where 0 is accepted it means 0) and sets the first member, struct_size,
 * to sizeof the struct as the caller's header declares it. Always call the
 * _init, then change fields. The library reads only the fields that fit in
 * struct_size and takes the defaults of the rest, so a program built
 * against an older header keeps working when fields are appended (as
 * NCCL's ncclConfig_t). struct_size 0 (a struct the _init never saw) or
 * smaller than the first version is FTC_EINVAL ("call ..._init() first").
 * A NULL opts pointer means all defaults. size_t fields that can be set to
 * FTC_SIZE_DEFAULT say so. */
#define FTC_SIZE_DEFAULT ((size_t)-1)

/* Logging. Lines go to stderr unless a handler is set. The initial level
 * comes from the environment variable FTC_LOG=debug|info|warn|error|off
 * (default warn). */
typedef enum ftc_log_level {
    FTC_LOG_DEBUG = 10,
    FTC_LOG_INFO = 20,
    FTC_LOG_WARN = 30,
    FTC_LOG_ERROR = 40,
    FTC_LOG_OFF = 100,
} ftc_log_level;

/* A log handler receives one event: its level, a stable tag such as
 * "store.oversize", and the formatted message (borrowed for the call). It may
 * be called from any ftc thread, concurrently, and must not call into ftc. */
typedef void (*ftc_log_fn)(void *arg, int level, const char *tag,
                           const char *msg);

/* Sets the handler (NULL restores stderr). Set it once, before other ftc
 * calls; it is not synchronised with threads that are logging. */
FTC_API void ftc_log_set_handler(ftc_log_fn fn, void *arg);
FTC_API void ftc_log_set_level(int level);
FTC_API int ftc_log_get_level(void);
/* Parses "debug", "info", "warn", "error" or "off"; -1 if unknown. */
FTC_API int ftc_log_level_parse(const char *name);

/* Tracing. With FTC_TRACE=PATH in the environment (read once, at the
 * first traced event), the library records every process-group
 * collective (submission to completion, bytes, backend), every quorum
 * round, heal and commit vote, and the trainer's own phases marked with
 * ftc_trace_begin/ftc_trace_end, and writes them to PATH as a
 * Chrome/Perfetto trace-event JSON file at exit and at each
 * ftc_trace_flush. "%p" in PATH is replaced by the process id. `ftc run
 * --trace DIR` sets it for every rank (docs/operations.md, "Traces").
 * Without FTC_TRACE every call below returns 0 at once. All are
 * thread-safe. */

/* 1 when this process is tracing, else 0. */
FTC_API int ftc_trace_enabled(void);

/* Opens a span named name (copied; cut at 127 bytes) on this thread, in
 * the "compute" category, e.g. "forward", "backward", "optimizer".
 * Spans nest; at most 32 are open per thread (FTC_EINVAL beyond). Never
 * blocks. */
FTC_API int ftc_trace_begin(const char *name);

/* Closes this thread's innermost open span named name, and any opened
 * inside it that are still open, and records them. FTC_EINVAL when no
 * span of that name is open on this thread. */
FTC_API int ftc_trace_end(const char *name);

/* The training step recorded with the events that follow ("step" in
 * their args), or -1 (the default) for none. */
FTC_API void ftc_trace_set_step(int64_t step);

/* Writes every event recorded so far to PATH (through PATH.tmp and a
 * rename, so a reader never sees half a file). Blocks for the file's
 * write. FTC_ESYS when it cannot be written: the error is logged once
 * and tracing stops. */
FTC_API int ftc_trace_flush(void);

/* Releases a buffer that an ftc call returned to the caller. NULL is a
 * no-op. */
FTC_API void ftc_free(void *p);

/* "0.1.0" */
FTC_API const char *ftc_version(void);

#ifdef __cplusplus
}
#endif
#endif
