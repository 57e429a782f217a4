/* Checks of what crosses between a Baby group's parent and child: the
 * set-up config (child side) and requests (child side; the parent checks
 * completions against its own records in baby.c). Every field is
 * checked before use, so garbage fails with FTC_EPROTO and a message. */
#include <string.h>

#include "base/base_int.h"
#include "ftc/plugin/backend.h"
#include "pg/baby/baby_shm.h"

size_t ftc__baby_elem(int dtype)
{
    return ftc_dtype_size(dtype);
}

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

#define STR_OK(c, field) terminated((c)->field, sizeof((c)->field))

int ftc__baby_config_check(const ftc__baby_config *c)
{
    if (c->magic != FTC__BABY_MAGIC || c->version != FTC__BABY_VERSION) {
        return ftc__seterr(FTC_EPROTO,
                           "baby config: magic %016llx version %u (expected "
                           "%016llx version %u)",
                           (unsigned long long)c->magic, c->version,
                           (unsigned long long)FTC__BABY_MAGIC,
                           FTC__BABY_VERSION);
    }
    const char *bad = NULL;
    if (!STR_OK(c, store_host) || !STR_OK(c, store_view) ||
        !STR_OK(c, prefix) || !STR_OK(c, backend) || !STR_OK(c, host) ||
        !STR_OK(c, congestion) || !STR_OK(c, token)) {
        bad = "a string without its NUL";
    } else if (c->size < 1 || c->rank < 0 || c->rank >= c->size) {
        bad = "rank or size";
    } else if (c->store_port < 1 || c->store_port > 65535) {
        bad = "store port";
    } else if (c->prefix[0] == '\0' || c->backend[0] == '\0' ||
               c->store_host[0] == '\0') {
        bad = "an empty prefix, backend or store host";
    } else if (c->parent_pid <= 1) {
        bad = "parent pid";
    }
    if (bad != NULL) {
        return ftc__seterr(FTC_EPROTO, "baby config: bad %s", bad);
    }
    return 0;
}

/* off .. off + n * elem lies in the arena and heap, and off is aligned for
 * elements of elem bytes (the parent places every buffer on 64 bytes). */
static int in_arena(uint64_t off, uint64_t n, size_t elem)
{
    if (elem == 0 || off % elem != 0 || n > FTC__BABY_SPACE_BYTES / elem) {
        return 0;
    }
    return off <= FTC__BABY_SPACE_BYTES &&
           n * elem <= FTC__BABY_SPACE_BYTES - off;
}

int ftc__baby_req_check(const ftc__baby_req *r, int size)
{
    size_t elem = ftc__baby_elem(r->dtype);
    const char *bad = NULL;
    if (r->coll < FTC_PG_COLL_ALLREDUCE || r->coll >= FTC_PG_COLL_COUNT) {
        bad = "collective";
    } else if (elem == 0) {
        bad = "dtype";
    } else if (r->op < 0 || r->op >= FTC_OP_COUNT) {
        bad = "op";
    } else if (!in_arena(r->send_off, r->send_count, elem)) {
        bad = "send buffer";
    } else if (!in_arena(r->recv_off, r->recv_count, elem)) {
        bad = "receive buffer";
    } else if (r->counts_off != FTC__BABY_NONE &&
               !in_arena(r->counts_off, (uint64_t)size, sizeof(uint64_t))) {
        bad = "count array";
    } else if (r->rcounts_off != FTC__BABY_NONE &&
               !in_arena(r->rcounts_off, (uint64_t)size, sizeof(uint64_t))) {
        bad = "receive count array";
    }
    if (bad != NULL) {
        return ftc__seterr(FTC_EPROTO, "baby request %llu: bad %s",
                           (unsigned long long)r->id, bad);
    }
    return 0;
}
