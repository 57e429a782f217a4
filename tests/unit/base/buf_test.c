/* The bounded growable buffer, including allocation failure. */
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/bytes.h"
#include "testkit.h"

static void append_grow_and_consume(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    for (int i = 0; i < 1000; i++) {
        TK_OK(ftc__buf_append_u32le(&b, (uint32_t)i));
    }
    assert_int_equal(ftc__buf_size(&b), 4000);
    ftc__buf_consume(&b, 4 * 10);
    assert_int_equal(ftc__get_u32le(ftc__buf_begin(&b)), 10);
    TK_OK(ftc__buf_append_u64le(&b, 0x0102030405060708ULL));
    assert_int_equal(ftc__buf_size(&b), 4000 - 40 + 8);
    const uint8_t *end = ftc__buf_begin(&b) + ftc__buf_size(&b) - 8;
    assert_int_equal(end[0], 0x08);
    assert_int_equal(end[7], 0x01);
    ftc__buf_free(&b);
}

/* An exact reservation grows to the room asked for, not double. */
static void reserve_exact_does_not_double(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    TK_OK(ftc__buf_append(&b, "abc", 3));
    TK_OK(ftc__buf_reserve_exact(&b, 1000));
    assert_int_equal(b.cap, 1003);
    TK_OK(ftc__buf_reserve_exact(&b, 500));
    assert_int_equal(b.cap, 1003);
    assert_memory_equal(ftc__buf_begin(&b), "abc", 3);
    TK_EXPECT(ftc__buf_reserve_exact(&b, 1 << 20), FTC_EMSGSIZE);
    ftc__buf_free(&b);
}

static void max_is_enforced_before_allocating(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 100);
    char data[101] = {0};
    TK_EXPECT(ftc__buf_append(&b, data, 101), FTC_EMSGSIZE);
    assert_null(b.data);
    TK_OK(ftc__buf_append(&b, data, 60));
    TK_EXPECT(ftc__buf_append(&b, data, 41), FTC_EMSGSIZE);
    TK_OK(ftc__buf_append(&b, data, 40));
    /* Consuming frees room under the maximum again. */
    ftc__buf_consume(&b, 50);
    TK_OK(ftc__buf_append(&b, data, 50));
    assert_int_equal(ftc__buf_size(&b), 100);
    TK_EXPECT(ftc__buf_reserve(&b, SIZE_MAX), FTC_EMSGSIZE);
    ftc__buf_free(&b);
}

static void string_encoding_is_u64_length_then_bytes(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 64);
    TK_OK(ftc__buf_append_str(&b, "/k", 2));
    const uint8_t want[] = {2, 0, 0, 0, 0, 0, 0, 0, '/', 'k'};
    assert_int_equal(ftc__buf_size(&b), sizeof(want));
    assert_memory_equal(ftc__buf_begin(&b), want, sizeof(want));
    size_t len;
    uint8_t *p = ftc__buf_detach(&b, &len);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(p, want, len);
    assert_int_equal(ftc__buf_size(&b), 0);
    ftc__free(p);
}

static void allocation_failure_leaves_buffer_intact(void **state)
{
    (void)state;
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    TK_OK(ftc__buf_append(&b, "abc", 3));
    ftc__alloc_fail_after(0);
    char big[4096] = {0};
    TK_EXPECT(ftc__buf_append(&b, big, sizeof(big)), FTC_ENOMEM);
    ftc__alloc_fail_after(-1);
    assert_int_equal(ftc__buf_size(&b), 3);
    assert_memory_equal(ftc__buf_begin(&b), "abc", 3);
    ftc__buf_free(&b);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(append_grow_and_consume),
        cmocka_unit_test(reserve_exact_does_not_double),
        cmocka_unit_test(max_is_enforced_before_allocating),
        cmocka_unit_test(string_encoding_is_u64_length_then_bytes),
        cmocka_unit_test(allocation_failure_leaves_buffer_intact),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
