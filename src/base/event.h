/* A cross-thread wake-up that poll(2) can wait on next to sockets (an
 * eventfd). Blocking calls poll their socket and their handle's event, so
 * cancel/abort from another thread unblocks them at once. */
#ifndef FTC_BASE_EVENT_H
#define FTC_BASE_EVENT_H

#include <stdbool.h>

typedef struct ftc_event {
    int fd;
} ftc_event;

int ftc__event_open(ftc_event *e);
void ftc__event_close(ftc_event *e);
/* Makes the event readable until cleared; safe from any thread. */
void ftc__event_signal(ftc_event *e);
void ftc__event_clear(ftc_event *e);
bool ftc__event_is_set(const ftc_event *e);

#endif
