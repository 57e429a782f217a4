/* A cross-thread wake-up that poll(2) can wait on next to sockets (an
 * eventfd). Blocking calls poll their socket and their handle's event, so
 * cancel/abort from another thread unblocks them at once. */
#ifndef FTC_BASE_EVENT_H
#define FTC_BASE_EVENT_H

#include <stdbool.h>

typedef struct ftc__event {
    int fd;
} ftc__event;

int ftc__event_open(ftc__event *e);
void ftc__event_close(ftc__event *e);
/* Makes the event readable until cleared; safe from any thread. */
void ftc__event_signal(ftc__event *e);
void ftc__event_clear(ftc__event *e);
bool ftc__event_is_set(const ftc__event *e);

#endif
