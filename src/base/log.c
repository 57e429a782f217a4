/* Logging: a level read once from FTC_LOG, and one line per event to stderr
 * or to the handler the embedding program installed. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = -1; /* -1: not yet read from the environment */
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

static const char *level_name(int level)
{
    if (level >= FTC_LOG_ERROR) {
        return "ERROR";
    }
    if (level >= FTC_LOG_WARN) {
        return "WARN";
    }
    if (level >= FTC_LOG_INFO) {
        return "INFO";
    }
    return "DEBUG";
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
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
    /* One fprintf per line keeps lines whole when threads log at once. */
    fprintf(stderr, "%s.%03ld ftc[%d] %s %s: %s\n", stamp,
            (long)(tv.tv_usec / 1000), (int)getpid(), level_name(level), tag,
            msg);
}
