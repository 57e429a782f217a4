/* libFuzzer target: the healing metadata decoder on arbitrary bytes, as
 * sent and with the trailer checksum made right (so mutations reach the
 * fields instead of stopping at the checksum), and an exact re-encoding
 * of whatever decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/base_int.h"
#include "ft/heal/heal_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ftc__heal_limits lim = {1024, 1u << 16, 1u << 30};

static void check(const uint8_t *p, size_t n)
{
    ftc__heal_meta m;
    if (ftc__heal_meta_decode(p, n, &lim, &m) != 0) {
        if (m.buffers != NULL || m.chunk_hash != NULL) {
            abort(); /* a failed decode owns nothing */
        }
        return;
    }
    ftc__buf out;
    ftc__buf_init(&out, n);
    if (ftc__heal_meta_encode(&m, &out) != 0 || ftc__buf_size(&out) != n ||
        memcmp(ftc__buf_begin(&out), p, n) != 0) {
        abort();
    }
    ftc__buf_free(&out);
    ftc__heal_meta_fini(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size);
    uint8_t *sealed = ftc__malloc(size + 8);
    if (sealed == NULL) {
        return 0;
    }
    memcpy(sealed, data, size);
    ftc__put_u64le(sealed + size, XXH3_64bits(data, size));
    check(sealed, size + 8);
    ftc__free(sealed);
    return 0;
}
