/* Store client request encoding: exact bytes of every query in both
 * dialects (1.13 bytes as captured from a real client), prefixes, limits. */
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "store/client/client_codec.h"
#include "store_fake_server_kit.h"
#include "testkit.h"

static void expect_req(ftc__store_req *r, const char *want_hex)
{
    static uint8_t got[1 << 16], want[1 << 16];
    size_t n = fs_flatten(r, got, sizeof(got));
    assert_int_equal(n, ftc__store_req_size(r));
    size_t m = fs_hex(want_hex, want, sizeof(want));
    if (n != m || memcmp(got, want, n) != 0) {
        char dump[512] = "";
        for (size_t i = 0; i < n && i < 150; i++) {
            snprintf(dump + strlen(dump), sizeof(dump) - strlen(dump), "%02x ",
                     got[i]);
        }
        fail_msg("request is %zu B [%s], expected %zu B [%s]", n, dump, m,
                 want_hex);
    }
    ftc__store_req_reset(r);
}

#define V1 FTC_STORE_DIALECT_V1
#define V2 FTC_STORE_DIALECT_V2
#define L1 "01 00 00 00 00 00 00 00"
#define L2 "02 00 00 00 00 00 00 00"
#define L3 "03 00 00 00 00 00 00 00"

/* The captures of pytorch-c10d.md section 1.4, byte for byte. */
static void v1_matches_pytorch_1_13_captures(void **state)
{
    (void)state;
    ftc__store_req r;
    ftc__store_req_init(&r, FTC_STORE_DIALECT_V1);
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_SET, NULL, "k", "v", 1));
    expect_req(&r, "00 | " L2 " | 2f 6b | " L1 " | 76");
    const char *k = "k";
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, &k, 1));
    expect_req(&r, "05 | " L1 " | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, "k"));
    expect_req(&r, "02 | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 5));
    expect_req(&r, "03 | " L2 " | 2f 63 | 05 00 00 00 00 00 00 00");
    TK_OK(ftc__store_enc_add(&r, NULL, "c", -2));
    expect_req(&r, "03 | " L2 " | 2f 63 | fe ff ff ff ff ff ff ff");
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    expect_req(&r, "06");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_DELETE_KEY, NULL, "k"));
    expect_req(&r, "08 | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_CHECK, NULL, &k, 1));
    expect_req(&r, "04 | " L1 " | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_compare_set(&r, NULL, "k", "", 0, "x", 1));
    expect_req(&r,
               "01 | " L2 " | 2f 6b | 00 00 00 00 00 00 00 00 | " L1 " | 78");
    ftc__store_req_free(&r);
}

static void v1_lacks_2x_queries(void **state)
{
    (void)state;
    ftc__store_req r;
    ftc__store_req_init(&r, FTC_STORE_DIALECT_V1);
    const char *k = "k";
    ftc_store_value v = {"v", 1};
    TK_EXPECT(ftc__store_enc_key_value(&r, FTC__OP_APPEND, NULL, "k", "v", 1),
              FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_keys(&r, FTC__OP_MULTI_GET, NULL, &k, 1),
              FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_multi_set(&r, NULL, &k, &v, 1), FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_bare(&r, FTC__OP_CANCEL_WAIT), FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_ping(&r, 1), FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_key(&r, FTC__OP_QUEUE_LEN, NULL, "k"),
              FTC_ENOTSUP);
    TK_EXPECT(ftc__store_enc_control_barrier(&r, NULL, "b", 2, 1), FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "1.13"));
    /* A failed encoder leaves nothing behind. */
    assert_int_equal(ftc__store_req_size(&r), 0);
    ftc__store_req_free(&r);
}

static void v2_numbering_and_handshake(void **state)
{
    (void)state;
    ftc__store_req r;
    ftc__store_req_init(&r, FTC_STORE_DIALECT_V2);
    TK_OK(ftc__store_enc_handshake(&r, 0xF7C12345u));
    expect_req(&r, "00 ce f7 85 3c | 0d 45 23 c1 f7");
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_SET, NULL, "k", "v", 1));
    expect_req(&r, "01 | " L2 " | 2f 6b | " L1 " | 76");
    TK_OK(ftc__store_enc_compare_set(&r, NULL, "k", "a", 1, "b", 1));
    expect_req(&r, "02 | " L2 " 2f 6b | " L1 " 61 | " L1 " 62");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, "k"));
    expect_req(&r, "03 | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_add(&r, NULL, "c", 1));
    expect_req(&r, "04 | " L2 " | 2f 63 | " L1);
    const char *ks[] = {"a", "b"};
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_CHECK, NULL, ks, 2));
    expect_req(&r, "05 | " L2 " | " L2 " 2f 61 | " L2 " 2f 62");
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_WAIT, NULL, ks, 2));
    expect_req(&r, "06 | " L2 " | " L2 " 2f 61 | " L2 " 2f 62");
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_GETNUMKEYS));
    expect_req(&r, "07");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_DELETE_KEY, NULL, "k"));
    expect_req(&r, "08 | " L2 " | 2f 6b");
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_APPEND, NULL, "k", "", 0));
    expect_req(&r, "09 | " L2 " | 2f 6b | 00 00 00 00 00 00 00 00");
    TK_OK(ftc__store_enc_keys(&r, FTC__OP_MULTI_GET, NULL, ks, 2));
    expect_req(&r, "0a | " L2 " | " L2 " 2f 61 | " L2 " 2f 62");
    ftc_store_value vs[] = {{"x", 1}, {"yz", 2}};
    TK_OK(ftc__store_enc_multi_set(&r, NULL, ks, vs, 2));
    expect_req(&r, "0b | " L2 " | " L2 " 2f 61 | " L1 " 78 | " L2 " 2f 62 | " L2
                   " 79 7a");
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_CANCEL_WAIT));
    expect_req(&r, "0c");
    TK_OK(ftc__store_enc_ping(&r, 0x01020304u));
    expect_req(&r, "0d 04 03 02 01");
    TK_OK(ftc__store_enc_key_value(&r, FTC__OP_QUEUE_PUSH, NULL, "q", "i", 1));
    expect_req(&r, "0e | " L2 " 2f 71 | " L1 " 69");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_POP, NULL, "q"));
    expect_req(&r, "0f | " L2 " 2f 71");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_QUEUE_LEN, NULL, "q"));
    expect_req(&r, "10 | " L2 " 2f 71");
    TK_OK(ftc__store_enc_bare(&r, FTC__OP_LIST_KEYS)); /* torch 2.15 */
    expect_req(&r, "11");
    assert_int_equal(ftc__store_op_encode(V2, FTC__OP_BARRIER), 0x12);
    assert_int_equal(ftc__store_op_encode(V1, FTC__OP_BARRIER), -1);
    /* ftc's own: CONTROL_BARRIER "b", world 3, rank 1 (docs/protocol.md) */
    TK_OK(ftc__store_enc_control_barrier(&r, "p", "b", 3, 1));
    expect_req(&r, "f0 | 04 00 00 00 00 00 00 00 2f 70 2f 62 | 03 00 00 00 00 "
                   "00 00 00 | " L1);
    ftc__store_req_free(&r);
}

/* PrefixStore joins with "/" and the TCPStore client adds a leading "/":
 * PrefixStore("a/b", s).get("k") sends "/a/b/k". */
static void prefixes_join_like_prefixstore(void **state)
{
    (void)state;
    ftc__store_req r;
    ftc__store_req_init(&r, FTC_STORE_DIALECT_V2);
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, "a/b", "k"));
    expect_req(&r, "03 | 06 00 00 00 00 00 00 00 | 2f 61 2f 62 2f 6b");
    /* A trailing "/" in a prefix gives "//", as in PyTorch 2.x. */
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, "g/", "k"));
    expect_req(&r, "03 | 05 00 00 00 00 00 00 00 | 2f 67 2f 2f 6b");
    TK_OK(ftc__store_enc_key(&r, FTC__OP_GET, NULL, ""));
    expect_req(&r, "03 | " L1 " | 2f");
    ftc__store_req_free(&r);
}

/* Long values are borrowed, not copied, yet the bytes on the wire are
 * the same; segments come out in order across several iov batches. */
static void long_values_are_spliced_in_order(void **state)
{
    (void)state;
    enum { N = 3 * FTC__STORE_COPY_MAX };
    static uint8_t a[N], b[N], got[4 * N];
    memset(a, 'a', N);
    memset(b, 'b', N);
    ftc__store_req r;
    ftc__store_req_init(&r, FTC_STORE_DIALECT_V2);
    const char *ks[] = {"x", "y", "z"};
    ftc_store_value vs[] = {{a, N}, {"s", 1}, {b, N}};
    TK_OK(ftc__store_enc_multi_set(&r, NULL, ks, vs, 3));
    assert_int_equal(r.next, 2); /* a and b borrowed, "s" copied */
    size_t n = fs_flatten(&r, got, sizeof(got));
    size_t head = 1 + 8;
    assert_int_equal(n, head + 3 * (8 + 2 + 8) + N + 1 + N);
    const uint8_t *p = got + head + 8 + 2;
    assert_int_equal(ftc__get_u64le(p), N);
    assert_memory_equal(p + 8, a, N);
    p += 8 + N + 8 + 2;
    assert_int_equal(ftc__get_u64le(p), 1);
    assert_int_equal(p[8], 's');
    p += 9 + 8 + 2;
    assert_int_equal(ftc__get_u64le(p), N);
    assert_memory_equal(p + 8, b, N);
    /* One iovec at a time also walks every segment. */
    size_t seg = 0, total = 0;
    struct iovec one;
    while (ftc__store_req_iov(&r, &seg, &one, 1) == 1) {
        total += one.iov_len;
    }
    assert_int_equal(total, n);
    ftc__store_req_free(&r);
}

/* Every allocation of an encoder can fail: the caller gets FTC_ENOMEM,
 * and after a reset the request encodes normally (ASan checks leaks). */
static void failed_encode_reports_enomem(void **state)
{
    (void)state;
    static uint8_t big[FTC__STORE_COPY_MAX];
    const char *ks[] = {"a", "b"};
    ftc_store_value vs[] = {{big, sizeof(big)}, {big, sizeof(big)}};
    int failed = 0;
    for (long n = 0; n < 16; n++) {
        ftc__store_req r;
        ftc__store_req_init(&r, FTC_STORE_DIALECT_V2);
        ftc__alloc_fail_after(n);
        int rc = ftc__store_enc_multi_set(&r, NULL, ks, vs, 2);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            ftc__store_req_free(&r);
            break;
        }
        assert_int_equal(rc, FTC_ENOMEM);
        failed++;
        ftc__store_req_reset(&r);
        assert_int_equal(ftc__store_req_size(&r), 0);
        TK_OK(ftc__store_enc_multi_set(&r, NULL, ks, vs, 2));
        assert_int_equal(r.next, 2);
        ftc__store_req_free(&r);
    }
    assert_true(failed >= 2); /* the buffer and the borrowed-span list */
}

static void probe_tells_servers_apart(void **state)
{
    (void)state;
    for (int i = 0; i < 1000; i++) {
        uint32_t n = ftc__store_probe_nonce(ftc__rand_u64());
        assert_int_equal(n & FTC__STORE_NONCE_TAG_MASK, 0xF7C00000u);
        assert_int_equal(ftc__store_probe_kind(n, n), FTC__STORE_SERVER_TORCH);
        assert_int_equal(ftc__store_probe_kind(n, ~n), FTC__STORE_SERVER_FTC);
        assert_int_equal(ftc__store_probe_kind(n, n ^ 1), -1);
    }
    /* PyTorch's own clients send their pid; ours never look like one. */
    assert_int_equal(ftc__store_probe_nonce(0), 0xF7C00000u);
    assert_int_equal(ftc__store_probe_nonce(UINT64_MAX), 0xF7CFFFFFu);
}

static void reply_lengths_are_checked(void **state)
{
    (void)state;
    TK_OK(ftc__store_check_len(100, 100, "reply value"));
    TK_EXPECT(ftc__store_check_len(101, 100, "reply value"), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "101 B"));
    TK_EXPECT(ftc__store_check_len(UINT64_MAX, SIZE_MAX / 2, "x"),
              FTC_EMSGSIZE);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1_matches_pytorch_1_13_captures),
        cmocka_unit_test(v1_lacks_2x_queries),
        cmocka_unit_test(v2_numbering_and_handshake),
        cmocka_unit_test(prefixes_join_like_prefixstore),
        cmocka_unit_test(long_values_are_spliced_in_order),
        cmocka_unit_test(failed_encode_reports_enomem),
        cmocka_unit_test(probe_tells_servers_apart),
        cmocka_unit_test(reply_lengths_are_checked),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
