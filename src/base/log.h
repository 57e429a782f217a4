/* Internal logging: FTC_LOG_<LEVEL>(tag, fmt, ...) formats only when the
 * level is enabled. Tags are stable identifiers ("store.oversize"). */
#ifndef FTC_BASE_LOG_H
#define FTC_BASE_LOG_H

#include "ftc/base.h"

int ftc__log_enabled(int level);
void ftc__log(int level, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define FTC_LOG_AT(level, tag, ...)                                            \
    do {                                                                       \
        if (ftc__log_enabled(level)) {                                         \
            ftc__log(level, tag, __VA_ARGS__);                                 \
        }                                                                      \
    } while (0)
#define FTC_LOG_DEBUG(tag, ...) FTC_LOG_AT(FTC_LOG_DEBUG, tag, __VA_ARGS__)
#define FTC_LOG_INFO(tag, ...) FTC_LOG_AT(FTC_LOG_INFO, tag, __VA_ARGS__)
#define FTC_LOG_WARN(tag, ...) FTC_LOG_AT(FTC_LOG_WARN, tag, __VA_ARGS__)
#define FTC_LOG_ERROR(tag, ...) FTC_LOG_AT(FTC_LOG_ERROR, tag, __VA_ARGS__)

#endif
