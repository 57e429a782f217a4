/* Incremental TCPStore request decoder: each op is a short field program;
 * the decoder remembers how far it got, so split frames are never re-read. */
#include "store/wire.h"

#include <string.h>

#include "base/base_int.h"

/* Field kinds: 'k' key string, 'v' value string, 'h' 32 raw bytes (an
 * authentication nonce or MAC, no length), 'q' i64, 'w' u32, 'n' the item
 * count (always last in the fixed part; items follow). */
typedef struct op_shape {
    const char *fixed;
    const char *item; /* fields of one item; NULL when the op has none */
} op_shape;

static const op_shape shapes[FTC__OP_COUNT] = {
    [FTC__OP_VALIDATE] = {"w", NULL},
    [FTC__OP_SET] = {"kv", NULL},
    [FTC__OP_COMPARE_SET] = {"kvv", NULL},
    [FTC__OP_GET] = {"k", NULL},
    [FTC__OP_ADD] = {"kq", NULL},
    [FTC__OP_CHECK] = {"n", "k"},
    [FTC__OP_WAIT] = {"n", "k"},
    [FTC__OP_GETNUMKEYS] = {"", NULL},
    [FTC__OP_WATCH_KEY] = {"k", NULL},
    [FTC__OP_DELETE_KEY] = {"k", NULL},
    [FTC__OP_APPEND] = {"kv", NULL},
    [FTC__OP_MULTI_GET] = {"n", "k"},
    [FTC__OP_MULTI_SET] = {"n", "kv"},
    [FTC__OP_CANCEL_WAIT] = {"", NULL},
    [FTC__OP_PING] = {"w", NULL},
    [FTC__OP_QUEUE_PUSH] = {"kv", NULL},
    [FTC__OP_QUEUE_POP] = {"k", NULL},
    [FTC__OP_QUEUE_LEN] = {"k", NULL},
    [FTC__OP_LIST_KEYS] = {"", NULL},
    [FTC__OP_BARRIER] = {"kq", NULL},
    [FTC__OP_CONTROL_BARRIER] = {"kqq", NULL},
    [FTC__OP_AUTH_HELLO] = {"h", NULL},
    [FTC__OP_AUTH_PROOF] = {"h", NULL},
};

static const uint8_t validate_frame[5] = {0x00, 0xCE, 0xF7, 0x85, 0x3C};

void ftc__wire_decoder_init(ftc__wire_decoder *d, int dialect)
{
    memset(d, 0, sizeof(*d));
    d->dialect = dialect;
    d->op = FTC__OP_INVALID;
    d->str_len = UINT64_MAX;
}

static int oversize(ftc__wire_decoder *d, const char *what, uint64_t n,
                    uint64_t max)
{
    d->tag = "store.oversize";
    return ftc__seterr(FTC_EMSGSIZE, "%s %llu > limit %llu", what,
                       (unsigned long long)n, (unsigned long long)max);
}

/* Checks that n more bytes after pos keep the request within its limit. */
static int fits(ftc__wire_decoder *d, uint64_t n, const ftc__wire_limits *lim)
{
    if (n > lim->max_request_bytes || d->pos > lim->max_request_bytes - n) {
        return oversize(d, "request bytes", (uint64_t)d->pos + n,
                        lim->max_request_bytes);
    }
    return 0;
}

/* The longest key the current op may carry: CONTROL_BARRIER's derived
 * keys must fit max_key_bytes too. */
static uint64_t key_max(const ftc__wire_decoder *d, const ftc__wire_limits *lim)
{
    if (d->op != FTC__OP_CONTROL_BARRIER) {
        return lim->max_key_bytes;
    }
    return lim->max_key_bytes > FTC__WIRE_DERIVED_SUFFIX_MAX
               ? lim->max_key_bytes - FTC__WIRE_DERIVED_SUFFIX_MAX
               : 0;
}

/* Parses one field at d->pos. Returns 1 when parsed (pos advanced, a string
 * field's range in *soff and *slen), FTC__WIRE_MORE with *need, or an error. */
static int take(ftc__wire_decoder *d, char kind, const uint8_t *buf, size_t len,
                const ftc__wire_limits *lim, size_t *need, size_t *soff,
                size_t *slen)
{
    size_t width = kind == 'w' ? 4 : kind == 'h' ? FTC__WIRE_RAW_BYTES : 8;
    int rc = fits(d, width, lim);
    if (rc != 0) {
        return rc;
    }
    if (len < d->pos + width) {
        *need = d->pos + width;
        return FTC__WIRE_MORE;
    }
    const uint8_t *p = buf + d->pos;
    if (kind == 'w') {
        d->u32 = ftc__get_u32le(p);
    } else if (kind == 'q') {
        int64_t v = (int64_t)ftc__get_u64le(p);
        *(d->nnum++ == 0 ? &d->num : &d->num2) = v;
    } else if (kind == 'n') {
        d->count = ftc__get_u64le(p);
        if (d->count > lim->max_keys) {
            return oversize(d, "keys in one request", d->count, lim->max_keys);
        }
        d->items_pos = d->pos + 8;
    } else if (kind == 'h') {
        *soff = d->pos;
        *slen = width;
    } else {
        uint64_t n = ftc__get_u64le(p);
        uint64_t max = kind == 'k' ? key_max(d, lim) : lim->max_value_bytes;
        if (n > max) {
            return oversize(d, kind == 'k' ? "key bytes" : "value bytes", n,
                            max);
        }
        rc = fits(d, 8 + n, lim);
        if (rc != 0) {
            return rc;
        }
        if (len < d->pos + 8 + n) {
            *need = d->pos + 8 + (size_t)n;
            d->str_len = n;
            return FTC__WIRE_MORE;
        }
        d->str_len = UINT64_MAX;
        *soff = d->pos + 8;
        *slen = (size_t)n;
        width = 8 + (size_t)n;
    }
    d->pos += width;
    return 1;
}

/* The index of the string field at position field of a program. */
static int string_index(const char *prog, size_t field)
{
    int j = 0;
    for (size_t i = 0; i < field; i++) {
        j += prog[i] == 'k' || prog[i] == 'v' || prog[i] == 'h';
    }
    return j;
}

/* A CONTROL_BARRIER's world size and rank, checked once both arrived. */
static int check_barrier_seat(ftc__wire_decoder *d, const ftc__wire_limits *lim)
{
    uint64_t max = lim->max_world < FTC__WIRE_WORLD_CEILING
                       ? lim->max_world
                       : FTC__WIRE_WORLD_CEILING;
    if (d->num > 0 && (uint64_t)d->num > max) {
        return oversize(d, "barrier world size", (uint64_t)d->num, max);
    }
    if (d->num < 1 || d->num2 < 0 || d->num2 >= d->num) {
        d->tag = "store.badvalue";
        return ftc__seterr(FTC_EPROTO,
                           "barrier rank %lld of world size %lld is not a "
                           "seat (0 <= rank < world size)",
                           (long long)d->num2, (long long)d->num);
    }
    return 0;
}

static void finish(ftc__wire_decoder *d, const uint8_t *buf, ftc__wire_req *req)
{
    ftc__wire_str *strs[3] = {&req->key, &req->val, &req->val2};
    memset(req, 0, sizeof(*req));
    req->op = d->op;
    req->size = d->pos;
    for (int j = 0; j < 3; j++) {
        strs[j]->p = d->len[j] > 0 ? buf + d->off[j] : buf;
        strs[j]->len = d->len[j];
    }
    req->num = d->num;
    req->num2 = d->num2;
    req->u32 = d->u32;
    req->count = d->count;
    req->items = shapes[d->op].item != NULL ? buf + d->items_pos : NULL;
    ftc__wire_decoder_init(d, d->dialect);
}

int ftc__wire_decode(ftc__wire_decoder *d, const uint8_t *buf, size_t len,
                     const ftc__wire_limits *lim, ftc__wire_req *req,
                     size_t *need)
{
    if (d->op == FTC__OP_INVALID) {
        if (len < 1) {
            *need = 1;
            return FTC__WIRE_MORE;
        }
        d->op = ftc__store_op_decode(d->dialect, buf[0]);
        if (d->op == FTC__OP_INVALID) {
            d->tag = "store.badop";
            return ftc__seterr(FTC_EPROTO, "unknown query type 0x%02x (%s)",
                               buf[0],
                               d->dialect == FTC__WIRE_V2 ? "2.x" : "1.13");
        }
        d->pos = 1;
    }
    const op_shape *s = &shapes[d->op];
    size_t soff = 0, slen = 0;
    while (s->fixed[d->field] != '\0') {
        int rc = take(d, s->fixed[d->field], buf, len, lim, need, &soff, &slen);
        if (rc != 1) {
            return rc;
        }
        char kind = s->fixed[d->field];
        if (kind == 'k' || kind == 'v' || kind == 'h') {
            int j = string_index(s->fixed, d->field);
            d->off[j] = soff;
            d->len[j] = slen;
        }
        d->field++;
    }
    if (d->op == FTC__OP_CONTROL_BARRIER) {
        int rc = check_barrier_seat(d, lim);
        if (rc != 0) {
            return rc;
        }
    }
    while (d->done < d->count) {
        int rc = take(d, s->item[d->ifield], buf, len, lim, need, &soff, &slen);
        if (rc != 1) {
            return rc;
        }
        d->ifield++;
        if (s->item[d->ifield] == '\0') {
            d->ifield = 0;
            d->done++;
        }
    }
    finish(d, buf, req);
    return FTC__WIRE_DONE;
}

int ftc__wire_pending_set(const ftc__wire_decoder *d, const uint8_t *buf,
                          ftc__wire_str *key, size_t *value_off,
                          uint64_t *value_len)
{
    if (d->op != FTC__OP_SET || d->field != 1 || d->str_len == UINT64_MAX) {
        return 0;
    }
    key->p = buf + d->off[0];
    key->len = d->len[0];
    *value_off = d->pos + 8;
    *value_len = d->str_len;
    return 1;
}

int ftc__wire_pending_key(const ftc__wire_decoder *d, const uint8_t *buf,
                          ftc__wire_str *key)
{
    if (d->op == FTC__OP_INVALID || d->field < 1 ||
        shapes[d->op].fixed[0] != 'k') {
        return 0;
    }
    key->p = buf + d->off[0];
    key->len = d->len[0];
    return 1;
}

int ftc__wire_has_items(ftc__store_op op)
{
    return op > FTC__OP_INVALID && op < FTC__OP_COUNT &&
           shapes[op].item != NULL;
}

void ftc__wire_next_str(const uint8_t **cursor, ftc__wire_str *out)
{
    out->len = (size_t)ftc__get_u64le(*cursor);
    out->p = *cursor + 8;
    *cursor += 8 + out->len;
}

int ftc__wire_detect(const uint8_t *buf, size_t len)
{
    size_t n = len < sizeof(validate_frame) ? len : sizeof(validate_frame);
    if (n == 0) {
        return -1;
    }
    if (memcmp(buf, validate_frame, n) != 0) {
        return FTC__WIRE_V1;
    }
    return n == sizeof(validate_frame) ? FTC__WIRE_V2 : -1;
}
