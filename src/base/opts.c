/* Merging a caller's options struct over the defaults, up to its size. */
#include "base/opts.h"

#include <string.h>

#include "base/err.h"

int ftc__opts_merge(void *out, size_t out_size, const void *in, size_t v1_size,
                    const char *type)
{
    if (in == NULL) {
        return 0;
    }
    size_t size;
    memcpy(&size, in, sizeof(size));
    if (size == 0 || size < v1_size) {
        return ftc__seterr(FTC_EINVAL,
                           "%s: struct_size %zu is not a size of the struct "
                           "(at least %zu): call %s_init() first",
                           type, size, v1_size, type);
    }
    memcpy(out, in, size < out_size ? size : out_size);
    memcpy(out, &out_size, sizeof(out_size));
    return 0;
}
