/* The request decoder: every op of both dialects whole, split at every
 * byte, moved between calls and pipelined; malformed and oversize input. */
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "store/wire.h"
#include "store_kit.h"
#include "testkit.h"

static const ftc__wire_limits limits = {
    .max_key_bytes = 64,
    .max_value_bytes = 1000,
    .max_keys = 8,
    .max_request_bytes = 4000,
    .max_world = 100,
};

/* One request of each shape with the fields the decoder must report. */
typedef struct sample {
    ftc__store_op op;
    const char *key, *val, *val2;
    int64_t num, num2;
    uint32_t u32;
    size_t nitems;
    const char *items[4]; /* keys, or key/value pairs for MULTI_SET */
} sample;

static const sample samples[] = {
    {.op = FTC__OP_VALIDATE, .u32 = 0x3C85F7CEu},
    {.op = FTC__OP_SET, .key = "/k", .val = "value", .val2 = NULL},
    {.op = FTC__OP_SET, .key = "", .val = "", .val2 = NULL},
    {.op = FTC__OP_COMPARE_SET, .key = "/cs", .val = "old", .val2 = "new"},
    {.op = FTC__OP_COMPARE_SET, .key = "/cs", .val = "", .val2 = ""},
    {.op = FTC__OP_GET, .key = "/key"},
    {.op = FTC__OP_ADD, .key = "init/", .num = -2},
    {.op = FTC__OP_ADD, .key = "/c", .num = INT64_MAX},
    {.op = FTC__OP_CHECK, .nitems = 2, .items = {"/a", "/bb"}},
    {.op = FTC__OP_CHECK, .nitems = 0},
    {.op = FTC__OP_WAIT, .nitems = 3, .items = {"/a", "", "/ccc"}},
    {.op = FTC__OP_GETNUMKEYS},
    {.op = FTC__OP_WATCH_KEY, .key = "/w"},
    {.op = FTC__OP_DELETE_KEY, .key = "/d"},
    {.op = FTC__OP_APPEND, .key = "/ap", .val = "tail"},
    {.op = FTC__OP_MULTI_GET, .nitems = 2, .items = {"/x", "/y"}},
    {.op = FTC__OP_MULTI_SET, .nitems = 2, .items = {"/x", "1", "/y", "22"}},
    {.op = FTC__OP_MULTI_SET, .nitems = 0},
    {.op = FTC__OP_CANCEL_WAIT},
    {.op = FTC__OP_PING, .u32 = 0xF7C12345u},
    {.op = FTC__OP_QUEUE_PUSH, .key = "/q", .val = "item"},
    {.op = FTC__OP_QUEUE_POP, .key = "/q"},
    {.op = FTC__OP_QUEUE_LEN, .key = "/q"},
    {.op = FTC__OP_LIST_KEYS},
    {.op = FTC__OP_BARRIER, .key = "/bar", .num = 64},
    {.op = FTC__OP_CONTROL_BARRIER, .key = "/cb", .num = 64, .num2 = 63},
    {.op = FTC__OP_CONTROL_BARRIER, .key = "", .num = 1, .num2 = 0},
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

static int in_dialect(int dialect, const sample *s)
{
    return sr_opbyte(dialect, s->op) >= 0;
}

static void encode(ftc__buf *b, int dialect, const sample *s)
{
    switch (s->op) {
    case FTC__OP_VALIDATE:
        sr_validate(b);
        break;
    case FTC__OP_SET:
    case FTC__OP_APPEND:
    case FTC__OP_QUEUE_PUSH:
        sr_kv(b, dialect, s->op, s->key, s->val, strlen(s->val));
        break;
    case FTC__OP_COMPARE_SET:
        sr_cas(b, dialect, s->key, s->val, s->val2);
        break;
    case FTC__OP_ADD:
        sr_add(b, dialect, s->key, s->num);
        break;
    case FTC__OP_BARRIER:
        sr_barrier(b, s->key, s->num);
        break;
    case FTC__OP_CONTROL_BARRIER:
        sr_control_barrier(b, s->key, s->num, s->num2);
        break;
    case FTC__OP_CHECK:
    case FTC__OP_WAIT:
    case FTC__OP_MULTI_GET:
        sr_keys(b, dialect, s->op, s->items, s->nitems);
        break;
    case FTC__OP_MULTI_SET: {
        const char *k[2] = {s->items[0], s->items[2]};
        const char *v[2] = {s->items[1], s->items[3]};
        sr_multi_set(b, k, v, s->nitems);
        break;
    }
    case FTC__OP_PING:
        sr_ping(b, s->u32);
        break;
    case FTC__OP_GETNUMKEYS:
    case FTC__OP_CANCEL_WAIT:
    case FTC__OP_LIST_KEYS:
        sr_bare(b, dialect, s->op);
        break;
    default:
        sr_key(b, dialect, s->op, s->key);
        break;
    }
}

static void expect_str(ftc__wire_str got, const char *want)
{
    const char *w = want != NULL ? want : "";
    assert_int_equal(got.len, strlen(w));
    assert_memory_equal(got.p, w, got.len);
}

static void check_req(const ftc__wire_req *r, const sample *s, size_t size)
{
    assert_int_equal(r->op, s->op);
    assert_int_equal(r->size, size);
    expect_str(r->key, s->key);
    expect_str(r->val, s->val);
    expect_str(r->val2, s->val2);
    assert_true(r->num == s->num);
    assert_true(r->num2 == s->num2);
    assert_int_equal(r->u32, s->u32);
    assert_int_equal(r->count, s->nitems);
    const uint8_t *cur = r->items;
    size_t per = s->op == FTC__OP_MULTI_SET ? 2 : 1;
    for (size_t i = 0; i < s->nitems * per; i++) {
        ftc__wire_str str;
        ftc__wire_next_str(&cur, &str);
        expect_str(str, s->items[i]);
    }
}

/* Feeds the request one more byte per call, each time from a fresh copy so
 * the decoder cannot keep pointers into an old buffer. */
static void decode_split(int dialect, const sample *s)
{
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    encode(&b, dialect, s);
    size_t n = ftc__buf_size(&b);
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, dialect);
    ftc__wire_req req;
    for (size_t have = 0; have <= n; have++) {
        uint8_t *copy = malloc(n + 1);
        memcpy(copy, ftc__buf_begin(&b), have);
        size_t need = 0;
        int rc = ftc__wire_decode(&d, copy, have, &limits, &req, &need);
        if (have < n) {
            assert_int_equal(rc, FTC__WIRE_MORE);
            assert_true(need > have && need <= n);
        } else {
            assert_int_equal(rc, FTC__WIRE_DONE);
            check_req(&req, s, n);
        }
        free(copy);
    }
    ftc__buf_free(&b);
}

static void every_op_split_at_every_byte(void **state)
{
    (void)state;
    for (int dialect = 0; dialect < 2; dialect++) {
        for (size_t i = 0; i < NSAMPLES; i++) {
            if (in_dialect(dialect, &samples[i])) {
                decode_split(dialect, &samples[i]);
            }
        }
    }
}

/* Jumping straight to the need hint reaches the end in few calls. */
/* Appends op (SET or APPEND) of key "/big" with a VAL_900-byte value. */
#define VAL_900 900
static void put_900(ftc__buf *b, int dialect, ftc__store_op op)
{
    char val[VAL_900];
    memset(val, 'v', sizeof(val));
    sr_kv(b, dialect, op, "/big", val, sizeof(val));
}

static void need_hint_is_exact_for_values(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    put_900(&b, SR_V2, FTC__OP_SET);
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, SR_V2);
    ftc__wire_req req;
    size_t need = 0, have = 0, calls = 0;
    int rc;
    while ((rc = ftc__wire_decode(&d, ftc__buf_begin(&b), have, &limits, &req,
                                  &need)) == FTC__WIRE_MORE) {
        have = need;
        calls++;
    }
    assert_int_equal(rc, FTC__WIRE_DONE);
    /* query byte, key length, key, value length, value */
    assert_int_equal(calls, 5);
    assert_int_equal(req.val.len, VAL_900);
    ftc__buf_free(&b);
}

/* A SET stopped inside its value reports the key, where the value starts
 * and its length (so the server can receive it in place); every other
 * stop does not. */
static void pending_set_is_reported(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    for (int dialect = 0; dialect < 2; dialect++) {
        put_900(&b, dialect, FTC__OP_SET);
        const uint8_t *p = ftc__buf_begin(&b);
        size_t head = 1 + 8 + 4 + 8;
        for (size_t have = 0; have < ftc__buf_size(&b); have++) {
            ftc__wire_decoder d;
            ftc__wire_decoder_init(&d, dialect);
            ftc__wire_req req;
            size_t need, off = 0;
            uint64_t len = 0;
            ftc__wire_str key;
            assert_int_equal(
                ftc__wire_decode(&d, p, have, &limits, &req, &need),
                FTC__WIRE_MORE);
            int got = ftc__wire_pending_set(&d, p, &key, &off, &len);
            assert_int_equal(got, have >= head);
            if (got) {
                expect_str(key, "/big");
                assert_int_equal(off, head);
                assert_int_equal(len, VAL_900);
            }
        }
        ftc__buf_reset(&b);
    }
    /* APPEND (2.x only) has the same shape but is not a SET */
    put_900(&b, SR_V2, FTC__OP_APPEND);
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, SR_V2);
    ftc__wire_req req;
    size_t need, off;
    uint64_t len;
    ftc__wire_str key;
    assert_int_equal(
        ftc__wire_decode(&d, ftc__buf_begin(&b), 30, &limits, &req, &need),
        FTC__WIRE_MORE);
    assert_int_equal(
        ftc__wire_pending_set(&d, ftc__buf_begin(&b), &key, &off, &len), 0);
    ftc__buf_free(&b);
}

static void pipelined_requests(void **state)
{
    (void)state;
    for (int dialect = 0; dialect < 2; dialect++) {
        ftc__buf b;
        ftc__buf_init(&b, 1 << 20);
        size_t ends[NSAMPLES];
        size_t idx[NSAMPLES], n = 0;
        for (size_t i = 0; i < NSAMPLES; i++) {
            if (in_dialect(dialect, &samples[i])) {
                encode(&b, dialect, &samples[i]);
                ends[n] = ftc__buf_size(&b);
                idx[n++] = i;
            }
        }
        const uint8_t *p = ftc__buf_begin(&b);
        size_t off = 0;
        ftc__wire_decoder d;
        ftc__wire_decoder_init(&d, dialect);
        for (size_t k = 0; k < n; k++) {
            ftc__wire_req req;
            size_t need;
            assert_int_equal(ftc__wire_decode(&d, p + off,
                                              ftc__buf_size(&b) - off, &limits,
                                              &req, &need),
                             FTC__WIRE_DONE);
            check_req(&req, &samples[idx[k]], ends[k] - off);
            off = ends[k];
        }
        assert_int_equal(off, ftc__buf_size(&b));
        ftc__buf_free(&b);
    }
}

/* Decodes bytes that must fail; returns the code and checks the tag. */
static int decode_bad(int dialect, const ftc__buf *b, const char *tag)
{
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, dialect);
    ftc__wire_req req;
    size_t need;
    int rc = ftc__wire_decode(&d, ftc__buf_begin(b), ftc__buf_size(b), &limits,
                              &req, &need);
    assert_true(rc < 0);
    assert_string_equal(d.tag, tag);
    assert_true(strlen(ftc_last_error()) > 0);
    return rc;
}

static void unknown_query_types(void **state)
{
    (void)state;
    /* 1.13 stops at DELETE_KEY (8); 2.x at BARRIER (18), then ftc's
     * CONTROL_BARRIER, AUTH_HELLO and AUTH_PROOF (0xF0..0xF2) alone. */
    const uint8_t v1_bad[] = {9, 12, 13, 0x7f, 0xF0, 0xF1, 0xff};
    const uint8_t v2_bad[] = {19, 20, 0x80, 0xEF, 0xF3, 0xff};
    for (size_t i = 0; i < sizeof(v1_bad); i++) {
        ftc__buf b;
        ftc__buf_init(&b, 64);
        sr_u8(&b, v1_bad[i]);
        assert_int_equal(decode_bad(SR_V1, &b, "store.badop"), FTC_EPROTO);
        ftc__buf_free(&b);
    }
    for (size_t i = 0; i < sizeof(v2_bad); i++) {
        ftc__buf b;
        ftc__buf_init(&b, 64);
        sr_u8(&b, v2_bad[i]);
        assert_int_equal(decode_bad(SR_V2, &b, "store.badop"), FTC_EPROTO);
        ftc__buf_free(&b);
    }
}

/* Limits are enforced on the announced length, before the bytes arrive. */
static void oversize_rejected_from_the_header(void **state)
{
    (void)state;
    for (int dialect = 0; dialect < 2; dialect++) {
        ftc__buf b;
        ftc__buf_init(&b, 1 << 20);
        /* key one byte over: only the length is sent */
        sr_op(&b, dialect, FTC__OP_GET);
        sr_u64(&b, limits.max_key_bytes + 1);
        assert_int_equal(decode_bad(dialect, &b, "store.oversize"),
                         FTC_EMSGSIZE);
        assert_non_null(strstr(ftc_last_error(), "key bytes 65"));
        ftc__buf_reset(&b);
        /* value one byte over */
        sr_key(&b, dialect, FTC__OP_SET, "/k");
        sr_u64(&b, limits.max_value_bytes + 1);
        assert_int_equal(decode_bad(dialect, &b, "store.oversize"),
                         FTC_EMSGSIZE);
        ftc__buf_reset(&b);
        /* count one over, and a count whose u64 is negative as i64 */
        sr_op(&b, dialect, FTC__OP_WAIT);
        sr_u64(&b, limits.max_keys + 1);
        assert_int_equal(decode_bad(dialect, &b, "store.oversize"),
                         FTC_EMSGSIZE);
        ftc__buf_reset(&b);
        sr_op(&b, dialect, FTC__OP_CHECK);
        sr_u64(&b, UINT64_MAX);
        assert_int_equal(decode_bad(dialect, &b, "store.oversize"),
                         FTC_EMSGSIZE);
        ftc__buf_reset(&b);
        /* a length near 2^64 must not wrap the size arithmetic */
        sr_key(&b, dialect, FTC__OP_SET, "/k");
        sr_u64(&b, UINT64_MAX - 3);
        assert_int_equal(decode_bad(dialect, &b, "store.oversize"),
                         FTC_EMSGSIZE);
        ftc__buf_free(&b);
    }
}

/* CONTROL_BARRIER: its key leaves room for the derived keys' suffixes
 * (checked from the header), the world size is within max_world, and the
 * rank is a seat of that world. */
static void control_barrier_limits(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    char key[64];
    memset(key, 'k', sizeof(key));
    /* 64 - 13 = 51 bytes fit; 52 do not, before the bytes come */
    key[51] = '\0';
    sr_control_barrier(&b, key, 4, 0);
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, SR_V2);
    ftc__wire_req req;
    size_t need;
    assert_int_equal(ftc__wire_decode(&d, ftc__buf_begin(&b), ftc__buf_size(&b),
                                      &limits, &req, &need),
                     FTC__WIRE_DONE);
    assert_int_equal(req.key.len, 51);
    ftc__buf_reset(&b);
    sr_op(&b, SR_V2, FTC__OP_CONTROL_BARRIER);
    sr_u64(&b, 52);
    assert_int_equal(decode_bad(SR_V2, &b, "store.oversize"), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "key bytes 52 > limit 51"));
    /* world sizes: the limit is inclusive */
    const struct {
        int64_t world, rank;
        int rc;
        const char *tag;
    } seats[] = {
        {100, 99, 0, NULL},
        {101, 0, FTC_EMSGSIZE, "store.oversize"},
        {INT64_MAX, 0, FTC_EMSGSIZE, "store.oversize"},
        {0, 0, FTC_EPROTO, "store.badvalue"},
        {-4, 0, FTC_EPROTO, "store.badvalue"},
        {4, 4, FTC_EPROTO, "store.badvalue"},
        {4, -1, FTC_EPROTO, "store.badvalue"},
    };
    for (size_t i = 0; i < sizeof(seats) / sizeof(seats[0]); i++) {
        ftc__buf_reset(&b);
        sr_control_barrier(&b, "/k", seats[i].world, seats[i].rank);
        if (seats[i].rc == 0) {
            ftc__wire_decoder_init(&d, SR_V2);
            assert_int_equal(ftc__wire_decode(&d, ftc__buf_begin(&b),
                                              ftc__buf_size(&b), &limits, &req,
                                              &need),
                             FTC__WIRE_DONE);
            assert_true(req.num == seats[i].world);
            assert_true(req.num2 == seats[i].rank);
        } else {
            assert_int_equal(decode_bad(SR_V2, &b, seats[i].tag), seats[i].rc);
        }
    }
    ftc__buf_free(&b);
}

/* Each field within its limit, but the whole request over max_request. */
static void oversize_request_total(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    char val[1000];
    memset(val, 'x', sizeof(val));
    sr_op(&b, SR_V2, FTC__OP_MULTI_SET);
    sr_u64(&b, 5);
    for (int i = 0; i < 5; i++) {
        sr_str(&b, "/k", 2);
        sr_str(&b, val, sizeof(val));
    }
    assert_int_equal(decode_bad(SR_V2, &b, "store.oversize"), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "request bytes"));
    ftc__buf_free(&b);
}

static void limits_are_inclusive(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    char key[64], val[1000];
    memset(key, 'k', sizeof(key));
    memset(val, 'v', sizeof(val));
    sr_op(&b, SR_V2, FTC__OP_SET);
    sr_str(&b, key, sizeof(key));
    sr_str(&b, val, sizeof(val));
    sr_op(&b, SR_V2, FTC__OP_WAIT);
    sr_u64(&b, 8);
    for (int i = 0; i < 8; i++) {
        sr_str(&b, "/k", 2);
    }
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, SR_V2);
    ftc__wire_req req;
    size_t need, off = 0;
    assert_int_equal(ftc__wire_decode(&d, ftc__buf_begin(&b), ftc__buf_size(&b),
                                      &limits, &req, &need),
                     FTC__WIRE_DONE);
    assert_int_equal(req.key.len, 64);
    assert_int_equal(req.val.len, 1000);
    off = req.size;
    assert_int_equal(ftc__wire_decode(&d, ftc__buf_begin(&b) + off,
                                      ftc__buf_size(&b) - off, &limits, &req,
                                      &need),
                     FTC__WIRE_DONE);
    assert_int_equal(req.count, 8);
    ftc__buf_free(&b);
}

/* A truncated request never completes, whatever the cut. */
static void truncated_never_completes(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    const char *keys[3] = {"/a", "/b", "/c"};
    sr_keys(&b, SR_V2, FTC__OP_MULTI_GET, keys, 3);
    for (size_t cut = 0; cut < ftc__buf_size(&b); cut++) {
        ftc__wire_decoder d;
        ftc__wire_decoder_init(&d, SR_V2);
        ftc__wire_req req;
        size_t need;
        assert_int_equal(
            ftc__wire_decode(&d, ftc__buf_begin(&b), cut, &limits, &req, &need),
            FTC__WIRE_MORE);
    }
    ftc__buf_free(&b);
}

/* The decoder never allocates: with every allocation failing, it works. */
static void decoder_never_allocates(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    size_t want = 0;
    for (size_t i = 0; i < NSAMPLES; i++) {
        if (in_dialect(SR_V2, &samples[i])) {
            encode(&b, SR_V2, &samples[i]);
            want++;
        }
    }
    ftc__wire_decoder d;
    ftc__wire_decoder_init(&d, SR_V2);
    ftc__alloc_fail_after(0);
    size_t off = 0, n = 0;
    ftc__wire_req req;
    size_t need;
    while (off < ftc__buf_size(&b) &&
           ftc__wire_decode(&d, ftc__buf_begin(&b) + off,
                            ftc__buf_size(&b) - off, &limits, &req,
                            &need) == FTC__WIRE_DONE) {
        off += req.size;
        n++;
    }
    ftc__alloc_fail_after(-1);
    assert_int_equal(ftc__alloc_injected_failures(), 0);
    assert_int_equal(n, want);
    ftc__buf_free(&b);
}

static void dialect_detection(void **state)
{
    (void)state;
    const uint8_t v2[] = {0x00, 0xCE, 0xF7, 0x85, 0x3C, 0x0D};
    for (size_t n = 0; n < 5; n++) {
        assert_int_equal(ftc__wire_detect(v2, n), -1);
    }
    assert_int_equal(ftc__wire_detect(v2, 5), FTC__WIRE_V2);
    assert_int_equal(ftc__wire_detect(v2, 6), FTC__WIRE_V2);
    /* 1.13's first requests: ADD init/, WAIT, and SET with a short key */
    const uint8_t add[] = {0x03, 0x05};
    assert_int_equal(ftc__wire_detect(add, 1), FTC__WIRE_V1);
    const uint8_t wait[] = {0x05};
    assert_int_equal(ftc__wire_detect(wait, 1), FTC__WIRE_V1);
    const uint8_t set[] = {0x00, 0x02, 0x00};
    assert_int_equal(ftc__wire_detect(set, 1), -1);
    assert_int_equal(ftc__wire_detect(set, 2), FTC__WIRE_V1);
    const uint8_t late[] = {0x00, 0xCE, 0xF7, 0x85, 0x00};
    assert_int_equal(ftc__wire_detect(late, 4), -1);
    assert_int_equal(ftc__wire_detect(late, 5), FTC__WIRE_V1);
}

/* The op table agrees with the reference bytes in both directions. */
static void opcode_tables(void **state)
{
    (void)state;
    for (int dialect = 0; dialect < 2; dialect++) {
        for (int op = FTC__OP_VALIDATE; op < FTC__OP_COUNT; op++) {
            int byte = sr_opbyte(dialect, (ftc__store_op)op);
            assert_int_equal(ftc__store_op_encode(dialect, (ftc__store_op)op),
                             byte);
            if (byte >= 0) {
                assert_int_equal(ftc__store_op_decode(dialect, (uint8_t)byte),
                                 op);
            }
        }
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_split_at_every_byte),
        cmocka_unit_test(need_hint_is_exact_for_values),
        cmocka_unit_test(pending_set_is_reported),
        cmocka_unit_test(pipelined_requests),
        cmocka_unit_test(unknown_query_types),
        cmocka_unit_test(oversize_rejected_from_the_header),
        cmocka_unit_test(oversize_request_total),
        cmocka_unit_test(control_barrier_limits),
        cmocka_unit_test(limits_are_inclusive),
        cmocka_unit_test(truncated_never_completes),
        cmocka_unit_test(decoder_never_allocates),
        cmocka_unit_test(dialect_detection),
        cmocka_unit_test(opcode_tables),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
