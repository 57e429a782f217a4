/* The data-plane header and handshake body: exact byte layout (what
 * docs/protocol.md promises), round trips, and rejection of bad magic,
 * version and kind. */
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
        'F',  'T',  'C',  '1',  2,    5,    6,    3,    /* magic..flags */
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_layout_is_as_documented),
        cmocka_unit_test(bad_headers_are_rejected),
        cmocka_unit_test(hello_body_round_trips),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
