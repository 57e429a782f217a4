/* The launcher's terminal output: rank lines with an [r<i>.<rank>] prefix
 * (coloured per replica on a terminal), its own notes, and one live status
 * line kept at the bottom of a terminal. */
#ifndef FTC_TOOLS_RUN_OUT_H
#define FTC_TOOLS_RUN_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct run_out {
    int tty;          /* stdout is a terminal: live status line */
    int color;        /* prefixes coloured (terminal, NO_COLOR unset) */
    int quiet;        /* no rank output, no status */
    int status_shown; /* the status line is on screen now */
    int64_t status_drawn_ms;
    char status[256];
} run_out;

void run_out_init(run_out *o, int quiet);

/* One line of rank `rank` of replica group `replica`, to stdout (stream 0)
 * or stderr (stream 1); under --quiet only when asked for by name (an
 * event line with --show-events). */
void run_out_line(run_out *o, int replica, int rank, int stream,
                  const char *line, size_t len, bool asked);

/* "ftc run: ..." on stdout, whatever --quiet says. */
void run_out_note(run_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Shows text as the status: on a terminal redrawn in place (at most every
 * 100 ms unless it was erased), else nothing (see run_out_progress). */
void run_out_status(run_out *o, const char *text, int64_t now_ms);
/* The same text as a plain progress line (no terminal). */
void run_out_progress(run_out *o, const char *text);
/* Erases the status line for good (before the summary). */
void run_out_end(run_out *o);

#endif
