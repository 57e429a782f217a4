/* Logging: a level read once from FTC_LOG, and one line per event to stderr
 * (text, or one JSON object with FTC_LOG_FORMAT=json) or to the handler
 * the embedding program installed. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/json_quote.h"

static atomic_int log_level = -1; /* -1: not yet read from the environment */

/* How lines are written to stderr, read from FTC_LOG_FORMAT at the first
 * line, with what the launcher contract says this process is (JSON
 * lines carry it). */
typedef struct log_style {
    int json;
    char replica[256]; /* FTC_REPLICA_ID as a JSON literal, or null */
    char rank[24];     /* FTC_GROUP_RANK as a JSON integer, or null */
} log_style;
static log_style style;
static pthread_once_t style_once = PTHREAD_ONCE_INIT;

static void read_style(void)
{
    const char *format = getenv("FTC_LOG_FORMAT");
    style.json = format != NULL && strcasecmp(format, "json") == 0;
    const char *replica = getenv("FTC_REPLICA_ID");
    snprintf(style.replica, sizeof(style.replica), "null");
    if (replica != NULL && replica[0] != '\0') {
        ftc__json_quote(style.replica, sizeof(style.replica), replica);
    }
    const char *rank = getenv("FTC_GROUP_RANK");
    char *end = NULL;
    long r = rank != NULL ? strtol(rank, &end, 10) : -1;
    if (rank != NULL && rank[0] != '\0' && *end == '\0' && r >= 0) {
        snprintf(style.rank, sizeof(style.rank), "%ld", r);
    } else {
        snprintf(style.rank, sizeof(style.rank), "null");
    }
}
static ftc_log_fn log_fn;
static void *log_arg;

int ftc_log_level_parse(const char *name)
{
    static const struct {
        const char *name;
        int level;
    } names[] = {{"debug", FTC_LOG_DEBUG}, {"info", FTC_LOG_INFO},
                 {"warn", FTC_LOG_WARN},   {"warning", FTC_LOG_WARN},
                 {"error", FTC_LOG_ERROR}, {"off", FTC_LOG_OFF}};
    if (name == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(name, names[i].name) == 0) {
            return names[i].level;
        }
    }
    return -1;
}

int ftc_log_get_level(void)
{
    int level = atomic_load_explicit(&log_level, memory_order_relaxed);
    if (level < 0) {
        level = ftc_log_level_parse(getenv("FTC_LOG"));
        if (level < 0) {
            level = FTC_LOG_WARN;
        }
        atomic_store(&log_level, level);
    }
    return level;
}

void ftc_log_set_level(int level)
{
    atomic_store(&log_level, level);
}

void ftc_log_set_handler(ftc_log_fn fn, void *arg)
{
    log_fn = fn;
    log_arg = arg;
}

int ftc__log_enabled(int level)
{
    return level >= ftc_log_get_level();
}

/* The level's name: upper case in text lines, lower case in JSON. */
static const char *level_name(int level, bool lower)
{
    static const char *const names[2][4] = {{"DEBUG", "INFO", "WARN", "ERROR"},
                                            {"debug", "info", "warn", "error"}};
    int i = level >= FTC_LOG_ERROR  ? 3
            : level >= FTC_LOG_WARN ? 2
            : level >= FTC_LOG_INFO ? 1
                                    : 0;
    return names[lower][i];
}

/* One JSON object: time (RFC 3339, UTC, milliseconds), level, tag, the
 * component (the tag up to its first '.'), pid, replica and rank (null
 * outside `ftc run`), message. */
static void write_json(const struct timeval *tv, int level, const char *tag,
                       const char *msg)
{
    struct tm tm;
    gmtime_r(&tv->tv_sec, &tm);
    char stamp[32], quoted_tag[160], component[160], message[6144];
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    ftc__json_quote(quoted_tag, sizeof(quoted_tag), tag);
    char head[128];
    snprintf(head, sizeof(head), "%.*s", (int)strcspn(tag, "."), tag);
    ftc__json_quote(component, sizeof(component), head);
    ftc__json_quote(message, sizeof(message), msg);
    fprintf(stderr,
            "{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"tag\":%s,"
            "\"component\":%s,\"pid\":%d,\"replica\":%s,\"rank\":%s,"
            "\"message\":%s}\n",
            stamp, (long)(tv->tv_usec / 1000), level_name(level, true),
            quoted_tag, component, (int)getpid(), style.replica, style.rank,
            message);
}

void ftc__log(int level, const char *tag, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (log_fn != NULL) {
        log_fn(log_arg, level, tag, msg);
        return;
    }
    pthread_once(&style_once, read_style);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    /* One fprintf per line keeps lines whole when threads log at once. */
    if (style.json) {
        write_json(&tv, level, tag, msg);
        return;
    }
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ld ftc[%d] %s %s: %s\n", stamp,
            (long)(tv.tv_usec / 1000), (int)getpid(), level_name(level, false),
            tag, msg);
}
