/* Cross-thread wake-up built on eventfd. */
#include "base/event.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/err.h"

int ftc__event_open(ftc__event *e)
{
    e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (e->fd < 0) {
        return ftc__seterr_errno(errno, "eventfd");
    }
    return 0;
}

void ftc__event_close(ftc__event *e)
{
    if (e->fd >= 0) {
        close(e->fd);
        e->fd = -1;
    }
}

void ftc__event_signal(ftc__event *e)
{
    uint64_t one = 1;
    /* EAGAIN means the counter is already huge: the event is set anyway. */
    ssize_t n = write(e->fd, &one, sizeof(one));
    (void)n;
}

void ftc__event_clear(ftc__event *e)
{
    uint64_t v;
    ssize_t n = read(e->fd, &v, sizeof(v));
    (void)n;
}

bool ftc__event_is_set(const ftc__event *e)
{
    struct pollfd p = {.fd = e->fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}
