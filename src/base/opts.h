/* Options structs that can evolve (include/ftc/base.h, "Options"): the
 * caller's struct is read only up to its struct_size and laid over the
 * defaults, so a caller built against an older header, whose struct ends
 * earlier, gets the defaults of the fields it does not know. */
#ifndef FTC_BASE_OPTS_H
#define FTC_BASE_OPTS_H

#include <stddef.h>

/* The size of the first published version of type: the end of its last
 * field then (never sizeof, which grows as fields are appended). */
#define FTC__OPTS_V1(type, last_v1_field)                                      \
    (offsetof(type, last_v1_field) + sizeof(((type *)0)->last_v1_field))

/* Lays *in over *out, which holds the defaults (its _init): the bytes of
 * *in up to in->struct_size (at most sizeof(*out)), then sets
 * out->struct_size. in NULL keeps the defaults. FTC_EINVAL names the type
 * when struct_size is 0 (an uninitialised struct) or below v1_size. */
int ftc__opts_merge(void *out, size_t out_size, const void *in, size_t v1_size,
                    const char *type);

#define FTC__OPTS_MERGE(out, in, type, last_v1_field)                          \
    ftc__opts_merge((out), sizeof(type), (in),                                 \
                    FTC__OPTS_V1(type, last_v1_field), #type)

/* The one "unset means default" rule: a field holding its unset sentinel
 * takes the default's value. */
#define FTC__OPT_DEFAULT(o, d, field, unset)                                   \
    do {                                                                       \
        if ((o)->field == (unset)) {                                           \
            (o)->field = (d)->field;                                           \
        }                                                                      \
    } while (0)

#endif
