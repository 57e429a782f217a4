/* Terminal output of `ftc run`. On a terminal the status line is erased
 * before any other line is printed and redrawn after, so rank output
 * scrolls above it. */
#include "run/run_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Redraw the status line at most this often (it changes every step). */
#define RUN_STATUS_REDRAW_MS 100

void run_out_init(run_out *o, int quiet)
{
    memset(o, 0, sizeof(*o));
    o->quiet = quiet;
    o->tty = isatty(STDOUT_FILENO);
    const char *term = getenv("TERM");
    o->color = o->tty && getenv("NO_COLOR") == NULL &&
               (term == NULL || strcmp(term, "dumb") != 0);
}

static void erase(run_out *o)
{
    if (o->status_shown) {
        fputs("\r\033[K", stdout);
        o->status_shown = 0;
    }
}

void run_out_line(run_out *o, int replica, int rank, int stream,
                  const char *line, size_t len, bool asked)
{
    /* Bold red, green, yellow, blue, magenta, cyan: one per replica. */
    static const int colors[] = {31, 32, 33, 34, 35, 36};
    if (o->quiet && !asked) {
        return;
    }
    erase(o);
    FILE *f = stdout;
    if (stream == 1) {
        fflush(stdout); /* keep the order the lines arrived in */
        f = stderr;
    }
    if (o->color) {
        fprintf(f, "\033[%dm[r%d.%d]\033[0m ", colors[replica % 6], replica,
                rank);
    } else {
        fprintf(f, "[r%d.%d] ", replica, rank);
    }
    fwrite(line, 1, len, f);
    fputc('\n', f);
}

void run_out_note(run_out *o, const char *fmt, ...)
{
    erase(o);
    fputs("ftc run: ", stdout);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static int columns(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) {
        return ws.ws_col;
    }
    return 80;
}

void run_out_status(run_out *o, const char *text, int64_t now_ms)
{
    int changed = strcmp(text, o->status) != 0;
    if (o->tty && !o->quiet &&
        (!o->status_shown ||
         (changed && now_ms - o->status_drawn_ms >= RUN_STATUS_REDRAW_MS))) {
        snprintf(o->status, sizeof(o->status), "%s", text);
        /* A line wider than the terminal would wrap, and "\r" would then
         * erase only its last row. */
        int width = columns() - 1;
        fprintf(stdout, "\r\033[K%.*s", width, o->status);
        o->status_shown = 1;
        o->status_drawn_ms = now_ms;
    }
    fflush(stdout);
}

void run_out_progress(run_out *o, const char *text)
{
    if (!o->quiet) {
        run_out_note(o, "%s", text);
    }
}

void run_out_end(run_out *o)
{
    erase(o);
    fflush(stdout);
}
