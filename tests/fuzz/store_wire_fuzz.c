/* libFuzzer target for the store's request decoder: any bytes, in either
 * dialect, under small or default limits. Decoding the stream whole and
 * decoding it fed in random pieces (each from a fresh copy, so a pointer
 * kept into an old buffer shows under ASan) must give the same requests;
 * every view must lie inside its request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQS 256

typedef struct outcome {
    int n;
    ftc__store_op op[MAX_REQS];
    size_t size[MAX_REQS];
    int end; /* FTC__WIRE_MORE or the error code that stopped decoding */
} outcome;

static void check_views(const ftc__wire_req *r, const uint8_t *start)
{
    const uint8_t *end = start + r->size;
    const ftc__wire_str *views[3] = {&r->key, &r->val, &r->val2};
    for (int i = 0; i < 3; i++) {
        if (views[i]->len > 0 &&
            (views[i]->p < start || views[i]->p + views[i]->len > end)) {
            __builtin_trap();
        }
    }
    if (r->items == NULL) {
        return;
    }
    const uint8_t *cur = r->items;
    uint64_t strings = r->op == FTC__OP_MULTI_SET ? 2 * r->count : r->count;
    for (uint64_t i = 0; i < strings; i++) {
        if (cur + 8 > end) {
            __builtin_trap();
        }
        ftc__wire_str s;
        ftc__wire_next_str(&cur, &s);
        if (cur > end) {
            __builtin_trap();
        }
    }
    if (cur != end) {
        __builtin_trap();
    }
}

static void decode_whole(const uint8_t *p, size_t n, int dialect,
                         const ftc__wire_limits *lim, outcome *o)
{
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, dialect);
    size_t off = 0;
    o->n = 0;
    for (;;) {
        ftc__wire_req req;
        size_t need;
        int rc = ftc__wire_decode(&d, p + off, n - off, lim, &req, &need);
        if (rc != FTC__WIRE_DONE) {
            if (rc == FTC__WIRE_MORE && need <= n - off) {
                __builtin_trap();
            }
            o->end = rc;
            return;
        }
        check_views(&req, p + off);
        if (o->n < MAX_REQS) {
            o->op[o->n] = req.op;
            o->size[o->n] = req.size;
        }
        o->n++;
        off += req.size;
    }
}

/* Feeds growing prefixes of each request, in steps picked by seed. */
static void decode_pieces(const uint8_t *p, size_t n, int dialect,
                          const ftc__wire_limits *lim, uint32_t seed,
                          outcome *o)
{
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, dialect);
    size_t off = 0, have = 0;
    o->n = 0;
    for (;;) {
        seed = seed * 1103515245u + 12345u;
        size_t step = 1 + (seed >> 16) % 64;
        have = have + step > n - off ? n - off : have + step;
        uint8_t *copy = malloc(have + 1);
        memcpy(copy, p + off, have);
        ftc__wire_req req;
        size_t need;
        int rc = ftc__wire_decode(&d, copy, have, lim, &req, &need);
        if (rc == FTC__WIRE_DONE) {
            check_views(&req, copy);
            if (o->n < MAX_REQS) {
                o->op[o->n] = req.op;
                o->size[o->n] = req.size;
            }
            o->n++;
            off += req.size;
            have = 0;
        }
        free(copy);
        if (rc < 0 || (rc == FTC__WIRE_MORE && have == n - off)) {
            o->end = rc;
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    int dialect = data[0] & 1;
    static const ftc__wire_limits small = {64, 4096, 16, 16384, 64};
    static const ftc__wire_limits large = {65536, 256u << 20, 131072,
                                           512u << 20, 100000};
    const ftc__wire_limits *lim = data[0] & 2 ? &large : &small;
    uint32_t seed = data[1] | (uint32_t)data[0] << 8;
    outcome whole, pieces;
    decode_whole(data + 2, size - 2, dialect, lim, &whole);
    decode_pieces(data + 2, size - 2, dialect, lim, seed, &pieces);
    if (whole.n != pieces.n || whole.end != pieces.end) {
        __builtin_trap();
    }
    for (int i = 0; i < whole.n && i < MAX_REQS; i++) {
        if (whole.op[i] != pieces.op[i] || whole.size[i] != pieces.size[i]) {
            __builtin_trap();
        }
    }
    (void)ftc__wire_detect(data, size);
    return 0;
}
