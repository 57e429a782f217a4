/* Line splitting for rank output: one fixed buffer per pipe, no growth, so
 * a rank that prints without newlines cannot make the launcher allocate. */
#include "run/run_lines.h"

#include <string.h>

static void deliver(run_lines *l, run_line_fn fn, void *arg)
{
    size_t n = l->len;
    if (n > 0 && l->buf[n - 1] == '\r') {
        n--; /* CRLF from a program that writes DOS line ends */
    }
    l->buf[n] = '\0';
    l->len = 0;
    fn(arg, l->buf, n);
}

void run_lines_feed(run_lines *l, const char *p, size_t n, run_line_fn fn,
                    void *arg)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl != NULL ? (size_t)(nl - p) : n;
        size_t room = RUN_LINE_MAX - l->len;
        if (take > room) {
            take = room;
            nl = NULL; /* the piece fills the buffer: deliver it as is */
        }
        memcpy(l->buf + l->len, p, take);
        l->len += take;
        p += take;
        n -= take;
        if (nl != NULL) {
            p++; /* the '\n' itself */
            n--;
            deliver(l, fn, arg);
        } else if (l->len == RUN_LINE_MAX) {
            deliver(l, fn, arg);
        }
    }
}

void run_lines_flush(run_lines *l, run_line_fn fn, void *arg)
{
    if (l->len > 0) {
        deliver(l, fn, arg);
    }
}
