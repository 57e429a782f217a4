/* One text as a JSON string literal, for writers that must not allocate
 * (log lines): quotes, backslashes and control characters escaped, valid
 * UTF-8 kept, every byte of invalid UTF-8 replaced by U+FFFD, so that any
 * input gives valid JSON. */
#ifndef FTC_BASE_JSON_QUOTE_H
#define FTC_BASE_JSON_QUOTE_H

#include <stddef.h>

/* Writes the quoted literal of s into out (cap >= 3) and NUL-terminates
 * it; an input too long for cap is cut at a whole character, and the
 * literal still closes. Returns the literal's length. */
size_t ftc__json_quote(char *out, size_t cap, const char *s);

#endif
