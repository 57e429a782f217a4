/* Splits the bytes of one pipe into lines with a bounded buffer: a line
 * longer than the limit is delivered in pieces of at most the limit. */
#ifndef FTC_TOOLS_RUN_LINES_H
#define FTC_TOOLS_RUN_LINES_H

#include <stddef.h>

/* Lines longer than this reach the callback in pieces. */
#define RUN_LINE_MAX 16384

/* Called with one line (no '\n', NUL-terminated at line[len]). */
typedef void (*run_line_fn)(void *arg, char *line, size_t len);

typedef struct run_lines {
    char buf[RUN_LINE_MAX + 1];
    size_t len; /* bytes of the unfinished line */
} run_lines;

static inline void run_lines_init(run_lines *l)
{
    l->len = 0;
}

/* Takes n more bytes; calls fn for each line they complete. */
void run_lines_feed(run_lines *l, const char *p, size_t n, run_line_fn fn,
                    void *arg);

/* At end of input: delivers an unfinished last line, if any. */
void run_lines_flush(run_lines *l, run_line_fn fn, void *arg);

#endif
