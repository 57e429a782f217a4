/* The data-plane header and handshake body: exact byte layout (what
 * docs/protocol.md promises), round trips, and rejection of bad magic,
 * version and kind; an ABORT's list of blamed ranks, its limits and the
 * refusal of malformed lists. */
#include <stdlib.h>
#include <string.h>

#include "pg/tcp/wire.h"
#include "testkit.h"

static void header_layout_is_as_documented(void **state)
{
    (void)state;
    ftc__pgw_hdr h = {.kind = FTC__PGW_ABORT,
                      .op = 6,
                      .flags = 3,
                      .src = 0x01020304,
                      .tag = 0x0a0b0c0d,
                      .group = 0x1112131415161718ull,
                      .epoch = 0x2122232425262728ull,
                      .seq = 0x3132333435363738ull,
                      .len = 0x4142434445464748ull};
    uint8_t b[FTC__PGW_HDR];
    ftc__pgw_encode(b, &h);
    static const uint8_t want[FTC__PGW_HDR] = {
        'F',  'T',  'C',  '1',  3,    5,    6,    3,    /* magic..flags */
        0x04, 0x03, 0x02, 0x01, 0x0d, 0x0c, 0x0b, 0x0a, /* src, tag */
        0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, /* group */
        0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, /* epoch */
        0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31, /* seq */
        0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41, /* len */
    };
    assert_memory_equal(b, want, sizeof(want));
    ftc__pgw_hdr back;
    TK_OK(ftc__pgw_decode(b, &back));
    assert_int_equal(back.kind, h.kind);
    assert_int_equal(back.op, h.op);
    assert_int_equal(back.flags, h.flags);
    assert_int_equal(back.src, h.src);
    assert_int_equal(back.tag, h.tag);
    assert_true(back.group == h.group && back.epoch == h.epoch);
    assert_true(back.seq == h.seq && back.len == h.len);
}

static void bad_headers_are_rejected(void **state)
{
    (void)state;
    ftc__pgw_hdr h = {.kind = FTC__PGW_COLL}, out;
    uint8_t b[FTC__PGW_HDR];
    ftc__pgw_encode(b, &h);
    b[0] = 'X';
    TK_EXPECT(ftc__pgw_decode(b, &out), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "magic"));
    ftc__pgw_encode(b, &h);
    b[4] = 1; /* before shared-memory lanes */
    TK_EXPECT(ftc__pgw_decode(b, &out), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "version 1"));
    for (int kind = 0; kind < 256; kind++) {
        ftc__pgw_encode(b, &h);
        b[5] = (uint8_t)kind;
        int rc = ftc__pgw_decode(b, &out);
        assert_int_equal(
            rc, kind >= 1 && kind < FTC__PGW_KIND_END ? 0 : FTC_EPROTO);
    }
}

static void hello_body_round_trips(void **state)
{
    (void)state;
    ftc__pgw_hello h = {.dst = 3,
                        .size = 8,
                        .channel = FTC__PGW_SIDE,
                        .streams = 2},
                   back;
    uint8_t b[FTC__PGW_HELLO_BODY];
    ftc__pgw_hello_encode(b, &h);
    /* dst, size, channel, streams: u32 little-endian each. */
    static const uint8_t want[16] = {3,    0,    0, 0, 8, 0, 0, 0,
                                     0xff, 0xff, 0, 0, 2, 0, 0, 0};
    assert_memory_equal(b, want, sizeof(want));
    ftc__pgw_hello_decode(b, &back);
    assert_memory_equal(&back, &h, sizeof(h));
}

static void abort_blame_layout_is_as_documented(void **state)
{
    (void)state;
    bool blamed[9] = {false};
    blamed[2] = blamed[7] = blamed[8] = true;
    uint8_t b[4 * FTC__PGW_BLAME_MAX];
    assert_int_equal(ftc__pgw_blame_encode(b, blamed, 9), 3);
    /* u32 little-endian ranks, ascending. */
    static const uint8_t want[12] = {2, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0};
    assert_memory_equal(b, want, sizeof(want));
    bool back[9] = {false};
    TK_OK(ftc__pgw_blame_decode(b, 3, 9, 0, back));
    assert_memory_equal(back, blamed, sizeof(blamed));
    /* Decoding adds to what is marked already. */
    back[4] = true;
    TK_OK(ftc__pgw_blame_decode(b, 1, 9, 0, back));
    assert_true(back[2] && back[4] && back[7] && back[8]);
    /* Nobody: an empty list. */
    bool none[9] = {false};
    assert_int_equal(ftc__pgw_blame_encode(b, none, 9), 0);
    TK_OK(ftc__pgw_blame_decode(b, 0, 9, 0, none));
}

static void abort_blame_carries_a_bounded_prefix(void **state)
{
    (void)state;
    uint32_t size = 3 * FTC__PGW_BLAME_MAX;
    bool *all = calloc(size, sizeof(bool));
    bool *back = calloc(size, sizeof(bool));
    uint8_t *b = malloc(4 * FTC__PGW_BLAME_MAX);
    assert_true(all != NULL && back != NULL && b != NULL);
    for (uint32_t r = 1; r < size; r++) {
        all[r] = true;
    }
    /* Rank 0 is not blamed: the lowest FTC__PGW_BLAME_MAX of the others
     * are 1 .. FTC__PGW_BLAME_MAX. */
    assert_int_equal(ftc__pgw_blame_encode(b, all, size), FTC__PGW_BLAME_MAX);
    TK_OK(ftc__pgw_blame_decode(b, FTC__PGW_BLAME_MAX, size, 0, back));
    for (uint32_t r = 0; r < size; r++) {
        assert_int_equal(back[r], r >= 1 && r <= FTC__PGW_BLAME_MAX);
    }
    free(all);
    free(back);
    free(b);
}

static void abort_header_limits(void **state)
{
    (void)state;
    ftc__pgw_hdr h = {.kind = FTC__PGW_ABORT, .tag = 2, .len = 8 + 5};
    TK_OK(ftc__pgw_abort_check(&h));
    h.op = FTC__PGW_ABORT_ON_PURPOSE;
    TK_OK(ftc__pgw_abort_check(&h));
    /* The largest frame: every rank slot and the longest text. */
    h.tag = FTC__PGW_BLAME_MAX;
    h.len = FTC__PGW_ABORT_MAX;
    TK_OK(ftc__pgw_abort_check(&h));
    /* Oversized: more ranks than a frame carries. */
    h.tag = FTC__PGW_BLAME_MAX + 1;
    h.len = 4 * (uint64_t)h.tag;
    TK_EXPECT(ftc__pgw_abort_check(&h), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "more than the 1024"));
    h.tag = 0xffffffffu; /* 4 * tag must not wrap */
    h.len = 16;
    TK_EXPECT(ftc__pgw_abort_check(&h), FTC_EPROTO);
    /* The payload is shorter than its ranks, or its text too long. */
    h.tag = 3;
    h.len = 11;
    TK_EXPECT(ftc__pgw_abort_check(&h), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "12 bytes of ranks"));
    h.len = 12 + FTC__PGW_TEXT_MAX + 1;
    TK_EXPECT(ftc__pgw_abort_check(&h), FTC_EPROTO);
    /* Unknown flags. */
    h.len = 12;
    h.op = 2;
    TK_EXPECT(ftc__pgw_abort_check(&h), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "unknown flags"));
}

/* Encodes ranks as they would arrive, however wrong. */
static void put_ranks(uint8_t *b, const uint32_t *r, int n)
{
    for (int i = 0; i < n; i++) {
        b[4 * i] = (uint8_t)r[i];
        b[4 * i + 1] = (uint8_t)(r[i] >> 8);
        b[4 * i + 2] = (uint8_t)(r[i] >> 16);
        b[4 * i + 3] = (uint8_t)(r[i] >> 24);
    }
}

static void malformed_blame_lists_are_refused(void **state)
{
    (void)state;
    static const struct {
        uint32_t ranks[3];
        const char *why;
    } bad[] = {
        {{1, 3, 2}, "not above the one before"}, /* descending */
        {{1, 3, 3}, "not above the one before"}, /* repeated */
        {{1, 2, 5}, "not in the group"},         /* size is 5 */
        {{1, 2, 0xffffffffu}, "not in the group"},
        {{0, 2, 4}, "the sender itself"}, /* src is 0 */
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        uint8_t b[12];
        put_ranks(b, bad[k].ranks, 3);
        bool blamed[5] = {false, false, false, false, true};
        TK_EXPECT(ftc__pgw_blame_decode(b, 3, 5, 0, blamed), FTC_EPROTO);
        assert_non_null(strstr(ftc_last_error(), bad[k].why));
        /* Nothing else changes: no rank of the refused list is marked. */
        for (int r = 0; r < 4; r++) {
            assert_false(blamed[r]);
        }
        assert_true(blamed[4]);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_layout_is_as_documented),
        cmocka_unit_test(bad_headers_are_rejected),
        cmocka_unit_test(hello_body_round_trips),
        cmocka_unit_test(abort_blame_layout_is_as_documented),
        cmocka_unit_test(abort_blame_carries_a_bounded_prefix),
        cmocka_unit_test(abort_header_limits),
        cmocka_unit_test(malformed_blame_lists_are_refused),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
