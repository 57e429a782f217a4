/* String set with linear probing; grows at 50% load so probes stay short. */
#include "base/strset.h"

#include <string.h>
#include <xxhash.h>

#include "base/alloc.h"
#include "base/err.h"

void ftc__strset_init(ftc__strset *s)
{
    memset(s, 0, sizeof(*s));
}

void ftc__strset_free(ftc__strset *s)
{
    for (size_t i = 0; i < s->cap; i++) {
        ftc__free(s->slots[i]);
    }
    ftc__free(s->slots);
    memset(s, 0, sizeof(*s));
}

static size_t slot_of(char *const *slots, size_t cap, const char *key)
{
    size_t i = (size_t)XXH3_64bits(key, strlen(key)) & (cap - 1);
    while (slots[i] != NULL && strcmp(slots[i], key) != 0) {
        i = (i + 1) & (cap - 1);
    }
    return i;
}

int ftc__strset_contains(const ftc__strset *s, const char *key)
{
    return s->cap > 0 && s->slots[slot_of(s->slots, s->cap, key)] != NULL;
}

static int grow(ftc__strset *s)
{
    size_t cap = s->cap == 0 ? 16 : s->cap * 2;
    char **slots = ftc__calloc(cap, sizeof(*slots));
    if (slots == NULL) {
        return ftc__seterr(FTC_ENOMEM, "string set of %zu slots", cap);
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i] != NULL) {
            slots[slot_of(slots, cap, s->slots[i])] = s->slots[i];
        }
    }
    ftc__free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

int ftc__strset_add(ftc__strset *s, const char *key)
{
    if (ftc__strset_contains(s, key)) {
        return FTC_EEXIST;
    }
    if ((s->count + 1) * 2 > s->cap) {
        int rc = grow(s);
        if (rc != 0) {
            return rc;
        }
    }
    char *copy = ftc__strdup(key);
    if (copy == NULL) {
        return ftc__seterr(FTC_ENOMEM, "string set key");
    }
    s->slots[slot_of(s->slots, s->cap, key)] = copy;
    s->count++;
    return 0;
}
