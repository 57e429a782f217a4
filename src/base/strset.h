/* A set of byte strings (open addressing, xxhash), for "has this name been
 * used" checks. Keys are copied; the set owns them. */
#ifndef FTC_BASE_STRSET_H
#define FTC_BASE_STRSET_H

#include <stddef.h>

typedef struct ftc__strset {
    char **slots; /* NULL = empty; each key NUL-terminated */
    size_t cap;   /* power of two, or 0 */
    size_t count;
} ftc__strset;

void ftc__strset_init(ftc__strset *s);
void ftc__strset_free(ftc__strset *s);
int ftc__strset_contains(const ftc__strset *s, const char *key);
/* Adds key: 0 if added, FTC_EEXIST if present, FTC_ENOMEM. */
int ftc__strset_add(ftc__strset *s, const char *key);

#endif
