/* The tracer: FTC_TRACE=PATH turns it on. Events are appended as JSON text
 * to fixed-size chunks under a mutex and written out whole at exit and on
 * ftc_trace_flush, through PATH.tmp and a rename (docs/decisions.md,
 * "Traces"). */
#include "base/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json_quote.h"
#include "base/log.h"
#include "ftc/base.h"

/* Buffer chunks: an event never spans two, so a chunk's bytes before its
 * length are final once written. */
#define CHUNK_BYTES ((size_t)1 << 20)
/* The longest event text; an event that does not fit is dropped. */
#define EVENT_MAX 2048
/* The smallest cap (one chunk holds at least two events). */
#define MIN_BYTES ((size_t)2 * EVENT_MAX)
/* Open spans per thread (ftc_trace_begin) and their names' bytes. */
#define DEPTH 32
#define SPAN_NAME 128
#define PATH_BYTES 4096

enum { UNREAD = 0, OFF = 1, ON = 2 };

atomic_int ftc__trace_state;

/* Locks: mu guards chunks, lens, n_chunks, dropped (appends and a flush's
 * snapshot). flush_mu serialises writers of the file and guards path,
 * tmp, pid and process; taken before mu, never after. A flush writes the
 * bytes before its snapshot without mu while threads keep appending:
 * appends never change bytes a snapshot covers. */
typedef struct tracer {
    pthread_mutex_t mu;
    pthread_mutex_t flush_mu;
    char **chunks; /* max_chunks slots, filled in order */
    size_t *lens;  /* bytes used in each chunk */
    size_t chunk_bytes, max_chunks, n_chunks;
    uint64_t dropped;
    int pid;
    char path[PATH_BYTES];
    char tmp[PATH_BYTES + 8];
    char process[300]; /* the process_name, a JSON literal */
} tracer;

static tracer T = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .flush_mu = PTHREAD_MUTEX_INITIALIZER,
};
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static _Atomic int64_t cur_step = -1;
static atomic_int next_tid;
static atomic_uint_fast64_t next_id;

/* This thread's small id (0: none yet) and open spans. */
static _Thread_local int my_tid;
typedef struct open_span {
    char name[SPAN_NAME];
    int64_t t0;
} open_span;
static _Thread_local open_span spans[DEPTH];
static _Thread_local int depth;

static bool is_on(void)
{
    return atomic_load_explicit(&ftc__trace_state, memory_order_acquire) == ON;
}

/* Appends n bytes (n <= EVENT_MAX) of event text, or counts a drop. */
static void append(const char *text, size_t n)
{
    pthread_mutex_lock(&T.mu);
    if (!is_on()) {
        pthread_mutex_unlock(&T.mu);
        return;
    }
    size_t last = T.n_chunks;
    if (last == 0 || T.lens[last - 1] + n > T.chunk_bytes) {
        char *c = last < T.max_chunks ? ftc__malloc(T.chunk_bytes) : NULL;
        if (c == NULL) {
            T.dropped++;
            pthread_mutex_unlock(&T.mu);
            return;
        }
        T.chunks[last] = c;
        T.lens[last] = 0;
        T.n_chunks = ++last;
    }
    memcpy(T.chunks[last - 1] + T.lens[last - 1], text, n);
    T.lens[last - 1] += n;
    pthread_mutex_unlock(&T.mu);
}

static void count_drop(void)
{
    pthread_mutex_lock(&T.mu);
    T.dropped++;
    pthread_mutex_unlock(&T.mu);
}

/* An event's text under construction, without printf (which was two
 * thirds of an event's cost): appends stop at the end of buf and set
 * over, and the event is then dropped. */
typedef struct event_text {
    size_t n;
    bool over;
    char buf[EVENT_MAX];
} event_text;

static void put_n(event_text *t, const char *s, size_t len)
{
    if (t->over || len > sizeof(t->buf) - t->n) {
        t->over = true;
        return;
    }
    memcpy(t->buf + t->n, s, len);
    t->n += len;
}

static void put(event_text *t, const char *s)
{
    put_n(t, s, strlen(s));
}

static void put_u64(event_text *t, uint64_t v)
{
    char d[24];
    size_t i = sizeof(d);
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    put_n(t, d + i, sizeof(d) - i);
}

static void put_i64(event_text *t, int64_t v)
{
    if (v < 0) {
        put(t, "-");
        put_u64(t, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(t, (uint64_t)v);
    }
}

/* A time in microseconds with three decimals, from ns (>= 0). */
static void put_us(event_text *t, int64_t ns)
{
    int frac = (int)(ns % 1000);
    char d[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                 (char)('0' + frac % 10)};
    put_u64(t, (uint64_t)(ns / 1000));
    put_n(t, d, sizeof(d));
}

static void put_hex(event_text *t, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char d[16];
    size_t i = sizeof(d);
    do {
        d[--i] = digits[v & 15];
        v >>= 4;
    } while (v != 0);
    put_n(t, d + i, sizeof(d) - i);
}

/* A string as a JSON literal (cut at 255 bytes of quoted text). */
static void put_quoted(event_text *t, const char *s)
{
    char quoted[256];
    size_t n = ftc__json_quote(quoted, sizeof(quoted), s != NULL ? s : "");
    put_n(t, quoted, n);
}

/* ,\n{"ph":ph,"cat":cat,"name":name,"pid":P,"tid":tid */
static void put_head(event_text *t, const char *ph, const char *cat,
                     const char *name, int tid)
{
    put(t, ",\n{\"ph\":\"");
    put(t, ph);
    put(t, "\",\"cat\":\"");
    put(t, cat);
    put(t, "\",\"name\":");
    put_quoted(t, name);
    put(t, ",\"pid\":");
    put_i64(t, T.pid);
    put(t, ",\"tid\":");
    put_i64(t, tid);
}

/* ,"id":"0x<id>" */
static void put_id(event_text *t, uint64_t id)
{
    put(t, ",\"id\":\"0x");
    put_hex(t, id);
    put(t, "\"");
}

/* key, then ns as microseconds */
static void put_time(event_text *t, const char *key, int64_t ns)
{
    put(t, key);
    put_us(t, ns);
}

/* ,"args":{"step":N,...} (the step if >= 0, then the n args) */
static void put_args(event_text *t, int64_t step, const ftc__trace_arg *args,
                     size_t n)
{
    put(t, ",\"args\":{");
    bool first = true;
    if (step >= 0) {
        put(t, "\"step\":");
        put_i64(t, step);
        first = false;
    }
    for (size_t i = 0; i < n; i++) {
        put(t, first ? "\"" : ",\"");
        first = false;
        put(t, args[i].key);
        put(t, "\":");
        switch (args[i].kind) {
        case FTC__TRACE_INT:
            put_i64(t, (int64_t)args[i].num);
            break;
        case FTC__TRACE_UINT:
            put_u64(t, args[i].num);
            break;
        case FTC__TRACE_BOOL:
            put(t, args[i].num != 0 ? "true" : "false");
            break;
        case FTC__TRACE_STR:
            put_quoted(t, args[i].str);
            break;
        }
    }
    put(t, "}");
}

/* Appends a finished event, or counts it dropped when it did not fit. */
static void emit(const event_text *t)
{
    if (t->over) {
        count_drop();
    } else {
        append(t->buf, t->n);
    }
}

/* This thread's id; its first call records the thread's name. */
static int thread_id(void)
{
    if (my_tid != 0) {
        return my_tid;
    }
    my_tid = atomic_fetch_add(&next_tid, 1) + 1;
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    char label[64], quoted[160], text[256];
    snprintf(label, sizeof(label), "%s (%d)", name[0] ? name : "thread",
             my_tid);
    ftc__json_quote(quoted, sizeof(quoted), label);
    int n = snprintf(text, sizeof(text),
                     ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
                     "\"tid\":%d,\"args\":{\"name\":%s}}",
                     T.pid, my_tid, quoted);
    if (n > 0 && (size_t)n < sizeof(text)) {
        append(text, (size_t)n);
    }
    return my_tid;
}

void ftc__trace_span(const char *cat, const char *name, int64_t t0_ns,
                     int64_t t1_ns, const ftc__trace_arg *args, size_t n)
{
    if (!ftc__trace_on() || t0_ns <= 0) {
        return;
    }
    event_text t;
    t.n = 0;
    t.over = false;
    put_head(&t, "X", cat, name, thread_id());
    put_time(&t, ",\"ts\":", t0_ns);
    put_time(&t, ",\"dur\":", t1_ns > t0_ns ? t1_ns - t0_ns : 0);
    put_args(&t, ftc__trace_step(), args, n);
    put(&t, "}");
    emit(&t);
}

void ftc__trace_async(const char *cat, const char *name, int64_t t0_ns,
                      int64_t t1_ns, int64_t step, const ftc__trace_arg *args,
                      size_t n)
{
    if (!ftc__trace_on() || t0_ns <= 0) {
        return;
    }
    int tid = thread_id();
    uint64_t id = atomic_fetch_add(&next_id, 1);
    event_text t;
    t.n = 0;
    t.over = false;
    put_head(&t, "b", cat, name, tid);
    put_id(&t, id);
    put_time(&t, ",\"ts\":", t0_ns);
    put_args(&t, step, args, n);
    put(&t, "}");
    put_head(&t, "e", cat, name, tid);
    put_id(&t, id);
    put_time(&t, ",\"ts\":", t1_ns > t0_ns ? t1_ns : t0_ns);
    put(&t, "}");
    emit(&t);
}

int64_t ftc__trace_clock(void)
{
    return ftc__trace_on() ? ftc__now_ns() : 0;
}

int64_t ftc__trace_step(void)
{
    return atomic_load_explicit(&cur_step, memory_order_relaxed);
}

uint64_t ftc__trace_dropped(void)
{
    pthread_mutex_lock(&T.mu);
    uint64_t d = T.dropped;
    pthread_mutex_unlock(&T.mu);
    return d;
}

/* ------------------------------------------------------------- the file */

/* Writes all n bytes; false with errno set on failure. */
static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            if (w == 0) {
                errno = EIO;
            }
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Tracing stops after a failure to write: one error in the log. */
static int fail(const char *what, int err)
{
    atomic_store(&ftc__trace_state, OFF);
    FTC_LOG_ERROR("trace.write", "cannot %s the trace %s: %s; tracing stops",
                  what, T.path, strerror(err));
    return ftc__seterr(FTC_ESYS, "%s the trace %s: %s", what, T.path,
                       strerror(err));
}

/* Writes the events recorded so far. Called with flush_mu held. */
static int write_file(void)
{
    pthread_mutex_lock(&T.mu);
    bool on = is_on();
    size_t n = T.n_chunks;
    size_t last = n > 0 ? T.lens[n - 1] : 0;
    uint64_t dropped = T.dropped;
    pthread_mutex_unlock(&T.mu);
    if (!on) {
        return 0;
    }
    int fd = open(T.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return fail("create", errno);
    }
    char head[512], tail[512];
    int hn = snprintf(head, sizeof(head),
                      "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":"
                      "\"process_name\",\"pid\":%d,\"tid\":0,\"args\":"
                      "{\"name\":%s}}",
                      T.pid, T.process);
    int tn = snprintf(tail, sizeof(tail),
                      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{"
                      "\"clock\":\"CLOCK_MONOTONIC\",\"ftc_version\":\"%s\","
                      "\"dropped_events\":%llu,\"max_bytes\":%zu}}\n",
                      ftc_version(), (unsigned long long)dropped,
                      T.chunk_bytes * T.max_chunks);
    bool ok = write_all(fd, head, (size_t)hn);
    for (size_t i = 0; ok && i < n; i++) {
        ok = write_all(fd, T.chunks[i], i + 1 < n ? T.lens[i] : last);
    }
    ok = ok && write_all(fd, tail, (size_t)tn);
    int err = ok ? 0 : errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlink(T.tmp);
        return fail("write", err);
    }
    if (rename(T.tmp, T.path) != 0) {
        err = errno;
        unlink(T.tmp);
        return fail("rename into", err);
    }
    return 0;
}

int ftc_trace_flush(void)
{
    ftc__clearerr();
    if (!ftc__trace_on()) {
        return 0;
    }
    pthread_mutex_lock(&T.flush_mu);
    int rc = write_file();
    pthread_mutex_unlock(&T.flush_mu);
    return rc;
}

/* Not in a child forked from the traced process (its buffer is a copy of
 * the parent's, and the file is the parent's). */
static void at_exit(void)
{
    if (is_on() && (int)getpid() == T.pid) {
        ftc_trace_flush();
    }
}

/* "replica_0 rank 1" under `ftc run`, else "ftc"; and the pid. */
static void name_process(void)
{
    const char *replica = getenv("FTC_REPLICA_ID");
    const char *rank = getenv("FTC_GROUP_RANK");
    char label[200];
    if (replica != NULL && replica[0] != '\0') {
        snprintf(label, sizeof(label), "%s rank %s (pid %d)", replica,
                 rank != NULL ? rank : "?", T.pid);
    } else {
        snprintf(label, sizeof(label), "ftc (pid %d)", T.pid);
    }
    ftc__json_quote(T.process, sizeof(T.process), label);
}

int ftc__trace_open(const char *path, size_t max_bytes)
{
    pthread_mutex_lock(&T.flush_mu);
    int rc = 0;
    if (is_on()) {
        rc = ftc__seterr(FTC_EMISUSE, "the tracer is open already");
        goto out;
    }
    atomic_store(&ftc__trace_state, OFF);
    if (path == NULL || path[0] == '\0' || strlen(path) >= PATH_BYTES) {
        FTC_LOG_ERROR("trace.open", "FTC_TRACE: the path is empty or too "
                                    "long: no trace");
        rc = ftc__seterr(FTC_EINVAL, "trace path empty or too long");
        goto out;
    }
    snprintf(T.path, sizeof(T.path), "%s", path);
    snprintf(T.tmp, sizeof(T.tmp), "%s.tmp", path);
    /* Fail now, not at exit, when the file cannot be written. */
    int fd = open(T.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        FTC_LOG_ERROR("trace.open",
                      "FTC_TRACE=%s: cannot create %s: %s: no "
                      "trace",
                      path, T.tmp, strerror(err));
        rc = ftc__seterr(FTC_ESYS, "trace %s: %s", T.tmp, strerror(err));
        goto out;
    }
    close(fd);
    unlink(T.tmp);
    if (max_bytes == 0) {
        max_bytes = FTC__TRACE_DEFAULT_MAX_BYTES;
    }
    max_bytes = max_bytes < MIN_BYTES ? MIN_BYTES : max_bytes;
    size_t chunk = max_bytes < CHUNK_BYTES ? max_bytes : CHUNK_BYTES;
    pthread_mutex_lock(&T.mu);
    T.chunk_bytes = chunk;
    T.max_chunks = max_bytes / chunk;
    T.n_chunks = 0;
    T.dropped = 0;
    T.chunks = ftc__calloc(T.max_chunks, sizeof(*T.chunks));
    T.lens = ftc__calloc(T.max_chunks, sizeof(*T.lens));
    bool ok = T.chunks != NULL && T.lens != NULL;
    if (!ok) {
        ftc__free(T.chunks);
        ftc__free(T.lens);
        T.chunks = NULL;
        T.lens = NULL;
    }
    T.pid = (int)getpid();
    pthread_mutex_unlock(&T.mu);
    if (!ok) {
        FTC_LOG_ERROR("trace.open", "FTC_TRACE=%s: out of memory: no trace",
                      path);
        rc = ftc__seterr(FTC_ENOMEM, "trace buffers");
        goto out;
    }
    name_process();
    atomic_store(&ftc__trace_state, ON);
out:
    pthread_mutex_unlock(&T.flush_mu);
    return rc;
}

int ftc__trace_close(void)
{
    int rc = ftc_trace_flush();
    pthread_mutex_lock(&T.flush_mu);
    pthread_mutex_lock(&T.mu);
    atomic_store(&ftc__trace_state, OFF);
    for (size_t i = 0; i < T.n_chunks; i++) {
        ftc__free(T.chunks[i]);
    }
    ftc__free(T.chunks);
    ftc__free(T.lens);
    T.chunks = NULL;
    T.lens = NULL;
    T.n_chunks = 0;
    T.max_chunks = 0;
    pthread_mutex_unlock(&T.mu);
    pthread_mutex_unlock(&T.flush_mu);
    my_tid = 0; /* the next open names this thread again */
    depth = 0;
    return rc;
}

/* PATH with each "%p" replaced by the process id. */
static bool expand(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = in; *p != '\0'; p++) {
        int w = p[0] == '%' && p[1] == 'p'
                    ? snprintf(out + n, cap - n, "%d", (int)getpid())
                    : snprintf(out + n, cap - n, "%c", *p);
        if (w < 0 || (size_t)w >= cap - n) {
            return false;
        }
        n += (size_t)w;
        p += p[0] == '%' && p[1] == 'p';
    }
    out[n] = '\0';
    return true;
}

/* FTC_TRACE_MAX_MB: the cap in MiB (1..65536), else the default. */
static size_t max_bytes_from_env(void)
{
    const char *mb = getenv("FTC_TRACE_MAX_MB");
    if (mb == NULL || mb[0] == '\0') {
        return FTC__TRACE_DEFAULT_MAX_BYTES;
    }
    char *end = NULL;
    long long v = strtoll(mb, &end, 10);
    if (*end != '\0' || v < 1 || v > 65536) {
        FTC_LOG_WARN("trace.open",
                     "FTC_TRACE_MAX_MB=%s is not 1..65536: %zu MiB", mb,
                     FTC__TRACE_DEFAULT_MAX_BYTES >> 20);
        return FTC__TRACE_DEFAULT_MAX_BYTES;
    }
    return (size_t)v << 20;
}

static void start(void)
{
    const char *path = getenv("FTC_TRACE");
    if (path == NULL || path[0] == '\0') {
        atomic_store(&ftc__trace_state, OFF);
        return;
    }
    char expanded[PATH_BYTES];
    if (!expand(path, expanded, sizeof(expanded))) {
        atomic_store(&ftc__trace_state, OFF);
        FTC_LOG_ERROR("trace.open", "FTC_TRACE is too long: no trace");
        return;
    }
    int saved = errno;
    if (ftc__trace_open(expanded, max_bytes_from_env()) == 0) {
        atexit(at_exit);
    }
    ftc__clearerr(); /* not the failure of the call that traced */
    errno = saved;
}

bool ftc__trace_start(void)
{
    pthread_once(&start_once, start);
    return is_on();
}

/* ---------------------------------------------------------- public spans */

int ftc_trace_enabled(void)
{
    return ftc__trace_on() ? 1 : 0;
}

void ftc_trace_set_step(int64_t step)
{
    atomic_store_explicit(&cur_step, step < 0 ? -1 : step,
                          memory_order_relaxed);
}

/* name cut to SPAN_NAME - 1 bytes into dst (SPAN_NAME bytes). */
static void copy_name(char *dst, const char *name)
{
    size_t n = strnlen(name, SPAN_NAME - 1);
    memcpy(dst, name, n);
    dst[n] = '\0';
}

int ftc_trace_begin(const char *name)
{
    ftc__clearerr();
    if (!ftc__trace_on()) {
        return 0;
    }
    if (name == NULL) {
        return ftc__seterr(FTC_EINVAL, "ftc_trace_begin: name is NULL");
    }
    if (depth == DEPTH) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_trace_begin(%s): %d spans are open on this "
                           "thread already",
                           name, DEPTH);
    }
    open_span *s = &spans[depth++];
    copy_name(s->name, name);
    s->t0 = ftc__now_ns();
    return 0;
}

int ftc_trace_end(const char *name)
{
    ftc__clearerr();
    if (!ftc__trace_on()) {
        return 0;
    }
    int64_t t1 = ftc__now_ns();
    if (name == NULL) {
        return ftc__seterr(FTC_EINVAL, "ftc_trace_end: name is NULL");
    }
    char cut[SPAN_NAME];
    copy_name(cut, name); /* as ftc_trace_begin kept it */
    int i = depth - 1;
    while (i >= 0 && strcmp(spans[i].name, cut) != 0) {
        i--;
    }
    if (i < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_trace_end(%s): no span of that name is open "
                           "on this thread",
                           name);
    }
    while (depth > i) {
        depth--;
        ftc__trace_span("compute", spans[depth].name, spans[depth].t0, t1, NULL,
                        0);
    }
    return 0;
}
