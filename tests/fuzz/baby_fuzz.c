/* libFuzzer target for what a Baby group's child reads from its parent
 * (src/pg/baby/check.c, ring.c): the set-up config, and a request ring
 * whose indices and records are arbitrary bytes, every record popped
 * checked as the child checks it. Nothing may crash, read outside the
 * ring, or accept a request whose buffers leave the arena.
 * The first byte picks the case and the group size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "pg/baby/baby_shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_config(const uint8_t *p, size_t n)
{
    ftc__baby_config c;
    memset(&c, 0, sizeof(c));
    memcpy(&c, p, n < sizeof(c) ? n : sizeof(c));
    if (ftc__baby_config_check(&c) == 0) {
        /* Accepted: every string the child uses is terminated. */
        if (strlen(c.prefix) >= sizeof(c.prefix) ||
            strlen(c.store_host) >= sizeof(c.store_host) ||
            strlen(c.token) >= sizeof(c.token) || c.rank >= c.size) {
            abort();
        }
    }
}

/* An accepted request's buffers lie in the arena (what the child then
 * dereferences). */
static void check_accepted(const ftc__baby_req *r, int group_size)
{
    size_t elem = ftc__baby_elem(r->dtype);
    if (elem == 0 || r->send_off + r->send_count * elem < r->send_off ||
        r->send_off + r->send_count * elem > FTC__BABY_SPACE_BYTES ||
        r->recv_off + r->recv_count * elem > FTC__BABY_SPACE_BYTES ||
        (r->counts_off != FTC__BABY_NONE &&
         r->counts_off + (uint64_t)group_size * 8 > FTC__BABY_SPACE_BYTES)) {
        abort();
    }
}

static void fuzz_ring(const uint8_t *p, size_t n, int group_size)
{
    /* The ring's indices come first: the producer's head (shared, hostile)
     * and the consumer's own tail. */
    static ftc__baby_req slots[FTC__BABY_SLOTS];
    ftc__baby_ring ring;
    memset(&ring, 0, sizeof(ring));
    uint64_t head = 0, mine = 0;
    if (n >= 16) {
        memcpy(&head, p, 8);
        memcpy(&mine, p + 8, 8);
        p += 16;
        n -= 16;
    }
    atomic_store(&ring.head, head);
    memset(slots, 0, sizeof(slots));
    memcpy(slots, p, n < sizeof(slots) ? n : sizeof(slots));
    ftc__baby_end end = {.ring = &ring,
                         .slots = slots,
                         .record = sizeof(ftc__baby_req),
                         .mine = mine,
                         .efd = -1};
    for (unsigned i = 0; i <= FTC__BABY_SLOTS; i++) {
        ftc__baby_req r;
        int got = ftc__baby_pop(&end, &r);
        if (got != 1) {
            if (got != 0 && got != FTC_EPROTO) {
                abort();
            }
            break;
        }
        if (ftc__baby_req_check(&r, group_size) == 0) {
            check_accepted(&r, group_size);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        ftc_log_set_level(FTC_LOG_OFF);
        quiet = 1;
    }
    if (size == 0) {
        return 0;
    }
    int group_size = 1 + (data[0] >> 1);
    if ((data[0] & 1) == 0) {
        fuzz_config(data + 1, size - 1);
    } else {
        fuzz_ring(data + 1, size - 1, group_size);
    }
    return 0;
}
