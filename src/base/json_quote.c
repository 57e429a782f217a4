/* JSON string literals without allocation (base/json_quote.h). */
#include "base/json_quote.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Bytes of the valid UTF-8 sequence at s (1..4), or 0 if it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are not). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    /* The second byte's range rules out the overlong and out-of-range
     * forms the first byte alone cannot. */
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) ||
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F)) {
        return 0;
    }
    return n;
}

size_t ftc__json_quote(char *out, size_t cap, const char *s)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    size_t len = 0;
    out[len++] = '"';
    const unsigned char *p = (const unsigned char *)s;
    /* Room is kept for the closing quote and the NUL. */
    while (*p != '\0') {
        char esc[8];
        const char *piece = esc;
        size_t n = 0, used = 1;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            n = 2;
        } else if (*p == '\n' || *p == '\t' || *p == '\r') {
            esc[0] = '\\';
            esc[1] = *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r';
            n = 2;
        } else if (*p < 0x20) {
            n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", *p);
        } else if ((used = utf8_len(p)) == 0) {
            piece = replacement;
            n = sizeof(replacement) - 1;
            used = 1;
        } else {
            piece = (const char *)p;
            n = used;
        }
        if (len + n + 2 > cap) {
            break;
        }
        memcpy(out + len, piece, n);
        len += n;
        p += used;
    }
    out[len++] = '"';
    out[len] = '\0';
    return len;
}
