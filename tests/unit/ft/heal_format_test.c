/* The healing metadata: round trips, every truncation and corruption
 * refused with FTC_EPROTO, limits checked before allocation, layouts
 * compared field by field, and snapshots that checksum what they copy. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "testkit.h"

static const ftc__heal_limits big = {64, 1u << 20, 1u << 30};

/* A state of three buffers: 10 floats "w", 3x4 doubles "m", 1 int64 "n". */
typedef struct sample {
    ftc__heal_state st;
    float w[10];
    double m[12];
    int64_t n;
} sample;

static void sample_init(sample *s)
{
    ftc__heal_state_init(&s->st);
    for (int i = 0; i < 10; i++) {
        s->w[i] = (float)i * 0.25f;
    }
    for (int i = 0; i < 12; i++) {
        s->m[i] = -(double)i / 3.0;
    }
    s->n = 1234567;
    ftc__heal_buf b;
    int64_t d1[] = {10}, d2[] = {3, 4};
    TK_OK(ftc__heal_buf_set(&b, "w", 0, d1, 1, 4));
    TK_OK(ftc__heal_state_add(&s->st, &b, s->w));
    TK_OK(ftc__heal_buf_set(&b, "opt.m", 1, d2, 2, 8));
    TK_OK(ftc__heal_state_add(&s->st, &b, s->m));
    TK_OK(ftc__heal_buf_set(&b, "n", 7, NULL, 0, 8));
    TK_OK(ftc__heal_state_add(&s->st, &b, &s->n));
}

/* The sample's metadata, encoded, with chunks of chunk_bytes. */
static ftc__heal_snapshot *sample_snapshot(sample *s, uint64_t chunk_bytes)
{
    ftc__heal_snapshot *snap;
    TK_OK(ftc__heal_snapshot_take(&s->st, 42, 99, chunk_bytes, 1, &snap));
    return snap;
}

static void round_trip(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    assert_int_equal(s.st.total, 40 + 96 + 8);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 64);
    assert_int_equal(snap->meta.n_chunks, 3);
    ftc__heal_meta m;
    TK_OK(ftc__heal_meta_decode(snap->meta_bytes, snap->meta_len, &big, &m));
    assert_int_equal(m.step, 42);
    assert_int_equal(m.batches_committed, 99);
    assert_int_equal(m.total_bytes, 144);
    assert_int_equal(m.chunk_bytes, 64);
    assert_int_equal(m.n_buffers, 3);
    assert_string_equal(m.buffers[1].name, "opt.m");
    assert_int_equal(m.buffers[1].dtype, 1);
    assert_int_equal(m.buffers[1].ndim, 2);
    assert_int_equal(m.buffers[1].dims[0], 3);
    assert_int_equal(m.buffers[1].dims[1], 4);
    assert_int_equal(m.buffers[2].ndim, 0);
    assert_int_equal(m.buffers[2].nbytes, 8);
    TK_OK(ftc__heal_layout_check(&m, s.st.bufs, s.st.n));
    /* The snapshot holds the bytes in order, and each checksum is the
     * XXH3 of its chunk; the last chunk is the short one. */
    uint8_t flat[144];
    memcpy(flat, s.w, 40);
    memcpy(flat + 40, s.m, 96);
    memcpy(flat + 136, &s.n, 8);
    assert_memory_equal(snap->copy, flat, 144);
    for (uint32_t i = 0; i < 3; i++) {
        uint64_t off, len;
        ftc__heal_chunk_range(&m, i, &off, &len);
        assert_int_equal(off, 64 * i);
        assert_int_equal(len, i < 2 ? 64 : 16);
        assert_int_equal(m.chunk_hash[i], XXH3_64bits(flat + off, len));
    }
    ftc__heal_meta_fini(&m);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

/* A snapshot is a copy: later writes to the buffers do not reach it. */
static void snapshot_is_a_copy(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 1 << 20);
    float before = s.w[3];
    s.w[3] = 1e9f;
    float in_snap;
    memcpy(&in_snap, snap->copy + 12, 4);
    assert_true(in_snap == before);
    assert_int_equal(snap->meta.n_chunks, 1);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

/* A lent snapshot has the copy's metadata (checksums included) but reads
 * the registered buffers themselves: a chunk is the pieces of the buffers
 * it spans, and a later write shows through. */
static void lent_snapshot_reads_the_buffers(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *copy = sample_snapshot(&s, 64), *lent;
    TK_OK(ftc__heal_snapshot_lend(&s.st, 42, 99, 64, 1, &lent));
    assert_null(lent->copy);
    assert_int_equal(lent->meta_len, copy->meta_len);
    assert_memory_equal(lent->meta_bytes, copy->meta_bytes, copy->meta_len);
    /* Chunk 0 is "w" (40 B) and the first 24 B of "opt.m". */
    ftc__heal_seg p = ftc__heal_snapshot_piece(lent, 0, 64);
    assert_ptr_equal(p.p, (const uint8_t *)s.w);
    assert_int_equal(p.len, 40);
    p = ftc__heal_snapshot_piece(lent, 40, 24);
    assert_ptr_equal(p.p, (const uint8_t *)s.m);
    assert_int_equal(p.len, 24);
    /* Chunk 2 (16 B) is the last 8 B of "opt.m" and "n". */
    p = ftc__heal_snapshot_piece(lent, 128, 16);
    assert_ptr_equal(p.p, (const uint8_t *)s.m + 88);
    assert_int_equal(p.len, 8);
    p = ftc__heal_snapshot_piece(lent, 136, 8);
    assert_ptr_equal(p.p, (const uint8_t *)&s.n);
    /* A copy is one piece. */
    p = ftc__heal_snapshot_piece(copy, 40, 104);
    assert_ptr_equal(p.p, copy->copy + 40);
    assert_int_equal(p.len, 104);
    s.w[3] = 1e9f;
    float seen;
    memcpy(&seen, ftc__heal_snapshot_piece(lent, 12, 4).p, 4);
    assert_true(seen == 1e9f);
    ftc__heal_snapshot_unref(lent);
    ftc__heal_snapshot_unref(copy);
    ftc__heal_state_fini(&s.st);
}

/* A big state is copied and checksummed on several threads: the same
 * metadata and bytes as on one, lent or copied. */
static void parallel_snapshot_is_the_same(void **state)
{
    (void)state;
    size_t na = (size_t)5 << 20, nb = 777777; /* 20 MiB and 5.9 MiB */
    float *a = ftc__malloc(na * sizeof(float));
    double *b = ftc__malloc(nb * sizeof(double));
    for (size_t i = 0; i < na; i++) {
        a[i] = (float)i * 0.5f;
    }
    for (size_t i = 0; i < nb; i++) {
        b[i] = -(double)i;
    }
    ftc__heal_state st;
    ftc__heal_state_init(&st);
    ftc__heal_buf buf;
    int64_t da[] = {(int64_t)na}, db[] = {(int64_t)nb};
    TK_OK(ftc__heal_buf_set(&buf, "a", 0, da, 1, 4));
    TK_OK(ftc__heal_state_add(&st, &buf, a));
    TK_OK(ftc__heal_buf_set(&buf, "b", 1, db, 1, 8));
    TK_OK(ftc__heal_state_add(&st, &buf, b));
    assert_true(st.total >= FTC__HEAL_PARALLEL_BYTES);
    ftc__heal_snapshot *one, *three, *lent;
    TK_OK(ftc__heal_snapshot_take(&st, 3, 4, 1 << 20, 1, &one));
    TK_OK(ftc__heal_snapshot_take(&st, 3, 4, 1 << 20, 3, &three));
    TK_OK(ftc__heal_snapshot_lend(&st, 3, 4, 1 << 20, 4, &lent));
    assert_int_equal(one->meta.n_chunks, 26);
    assert_int_equal(three->meta_len, one->meta_len);
    assert_memory_equal(three->meta_bytes, one->meta_bytes, one->meta_len);
    assert_memory_equal(lent->meta_bytes, one->meta_bytes, one->meta_len);
    assert_memory_equal(three->copy, one->copy, st.total);
    assert_memory_equal(one->copy, a, na * sizeof(float));
    ftc__heal_snapshot_unref(one);
    ftc__heal_snapshot_unref(three);
    ftc__heal_snapshot_unref(lent);
    ftc__heal_state_fini(&st);
    ftc__free(a);
    ftc__free(b);
}

static void every_truncation_is_refused(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 16);
    for (size_t n = 0; n < snap->meta_len; n++) {
        ftc__heal_meta m;
        TK_EXPECT(ftc__heal_meta_decode(snap->meta_bytes, n, &big, &m),
                  FTC_EPROTO);
        assert_null(m.buffers);
    }
    /* A byte too many is refused as well. */
    uint8_t *longer = ftc__malloc(snap->meta_len + 1);
    memcpy(longer, snap->meta_bytes, snap->meta_len);
    longer[snap->meta_len] = 0;
    ftc__heal_meta m;
    TK_EXPECT(ftc__heal_meta_decode(longer, snap->meta_len + 1, &big, &m),
              FTC_EPROTO);
    ftc__free(longer);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

/* Rewrites the trailer so a mutated body is parsed, not just refused for
 * its checksum. */
static void reseal(uint8_t *p, size_t n)
{
    ftc__put_u64le(p + n - 8, XXH3_64bits(p, n - 8));
}

static void every_flipped_byte_is_refused(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 16);
    size_t n = snap->meta_len;
    uint8_t *p = ftc__malloc(n);
    for (size_t i = 0; i < n; i++) {
        memcpy(p, snap->meta_bytes, n);
        p[i] ^= 0x01;
        ftc__heal_meta m;
        /* Without the trailer fixed: always the checksum. */
        TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
        /* Resealed: parsed; whatever it decodes to is consistent. */
        if (i < n - 8) {
            reseal(p, n);
            int rc = ftc__heal_meta_decode(p, n, &big, &m);
            if (rc != 0 && rc != FTC_EPROTO && rc != FTC_EMSGSIZE) {
                fail_msg("byte %zu: %s: %s", i, ftc_err_name(rc),
                         ftc_last_error());
            }
            if (rc == 0) {
                uint64_t sum = 0;
                for (uint32_t b = 0; b < m.n_buffers; b++) {
                    sum += m.buffers[b].nbytes;
                }
                assert_int_equal(sum, m.total_bytes);
                assert_int_equal(m.n_chunks, ftc__heal_chunk_count(
                                                 m.total_bytes, m.chunk_bytes));
                ftc__heal_meta_fini(&m);
            }
        }
    }
    ftc__free(p);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

/* Builds a header by hand: counts that the bytes cannot hold, or that
 * exceed the limits, are refused before anything is allocated. */
static size_t header(uint8_t *p, uint64_t total, uint64_t chunk, uint32_t nbuf,
                     uint32_t nchunk)
{
    memcpy(p, FTC__HEAL_MAGIC, 8);
    ftc__put_u64le(p + 8, 1);
    ftc__put_u64le(p + 16, 0);
    ftc__put_u64le(p + 24, total);
    ftc__put_u64le(p + 32, chunk);
    ftc__put_u32le(p + 40, nbuf);
    ftc__put_u32le(p + 44, nchunk);
    return 48;
}

static void limits_before_allocation(void **state)
{
    (void)state;
    uint8_t p[64];
    memset(p, 0, sizeof(p));
    ftc__heal_meta m;
    size_t n = header(p, 1024, 16, 65, 64) + 8;
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EMSGSIZE);
    n = header(p, (uint64_t)1 << 40, 1 << 20, 1, 1 << 20) + 8;
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EMSGSIZE);
    /* Within the limits but far more than 56 bytes can describe. */
    n = header(p, 1 << 20, 1, 60, 1 << 20) + 8;
    reseal(p, n);
    ftc__alloc_fail_after(0);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    assert_int_equal(ftc__alloc_injected_failures(), 0);
    ftc__alloc_fail_after(-1);
    /* Bad magic, step beyond int64, zero chunk size. */
    n = header(p, 0, 16, 0, 0) + 8;
    p[0] = 'X';
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    n = header(p, 0, 16, 0, 0) + 8;
    ftc__put_u64le(p + 8, (uint64_t)INT64_MAX + 1);
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    n = header(p, 0, 0, 0, 0) + 8;
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    /* The empty state is valid. */
    n = header(p, 0, 16, 0, 0) + 8;
    reseal(p, n);
    TK_OK(ftc__heal_meta_decode(p, n, &big, &m));
    assert_int_equal(m.n_chunks, 0);
    ftc__heal_meta_fini(&m);
}

/* A name with a control character or a NUL, inconsistent totals and a
 * wrong chunk count: each refused although the checksum is right. */
static void inconsistent_fields(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 16);
    size_t n = snap->meta_len;
    uint8_t *p = ftc__malloc(n);
    ftc__heal_meta m;
    /* The first name "w" is at offset 50 (after its 2-byte length). */
    memcpy(p, snap->meta_bytes, n);
    p[50] = '\n';
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    memcpy(p, snap->meta_bytes, n);
    p[48] = 0; /* name length 0 */
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    memcpy(p, snap->meta_bytes, n);
    ftc__put_u64le(p + 24, 145); /* total one more than the buffers */
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "chunks"));
    memcpy(p, snap->meta_bytes, n);
    ftc__put_u64le(p + 32, 8); /* 144 B in 16 chunks of 8: needs 18 */
    reseal(p, n);
    TK_EXPECT(ftc__heal_meta_decode(p, n, &big, &m), FTC_EPROTO);
    ftc__free(p);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

static void layout_differences_are_named(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    ftc__heal_snapshot *snap = sample_snapshot(&s, 64);
    ftc__heal_buf local[3];
    memcpy(local, s.st.bufs, sizeof(local));
    TK_OK(ftc__heal_layout_check(&snap->meta, local, 3));
    TK_EXPECT(ftc__heal_layout_check(&snap->meta, local, 2), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "3 buffers"));
    local[1].dims[1] = 5;
    TK_EXPECT(ftc__heal_layout_check(&snap->meta, local, 3), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "buffer 1"));
    memcpy(local, s.st.bufs, sizeof(local));
    local[2].dtype = 6;
    TK_EXPECT(ftc__heal_layout_check(&snap->meta, local, 3), FTC_EPROTO);
    memcpy(local, s.st.bufs, sizeof(local));
    snprintf(local[0].name, sizeof(local[0].name), "v");
    TK_EXPECT(ftc__heal_layout_check(&snap->meta, local, 3), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "the source has w"));
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s.st);
}

static void registration_errors(void **state)
{
    (void)state;
    ftc__heal_buf b;
    int64_t dims[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    TK_EXPECT(ftc__heal_buf_set(&b, "", 0, dims, 1, 4), FTC_EINVAL);
    TK_EXPECT(ftc__heal_buf_set(&b, NULL, 0, dims, 1, 4), FTC_EINVAL);
    TK_EXPECT(ftc__heal_buf_set(&b, "tab\there", 0, dims, 1, 4), FTC_EINVAL);
    TK_EXPECT(ftc__heal_buf_set(&b, "x", 0, dims, 9, 4), FTC_EINVAL);
    TK_EXPECT(ftc__heal_buf_set(&b, "x", 0, NULL, 1, 4), FTC_EINVAL);
    int64_t neg[] = {2, -1};
    TK_EXPECT(ftc__heal_buf_set(&b, "x", 0, neg, 2, 4), FTC_EINVAL);
    int64_t huge[] = {INT64_MAX, 4};
    TK_EXPECT(ftc__heal_buf_set(&b, "x", 0, huge, 2, 4), FTC_EMSGSIZE);
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[299] = '\0';
    TK_EXPECT(ftc__heal_buf_set(&b, longname, 0, dims, 1, 4), FTC_EINVAL);
    longname[255] = '\0';
    TK_OK(ftc__heal_buf_set(&b, longname, 0, dims, 8, 4));
    assert_int_equal(b.nbytes, 40320 * 4);

    ftc__heal_state st;
    ftc__heal_state_init(&st);
    float x[2];
    TK_OK(ftc__heal_buf_set(&b, "x", 0, dims + 1, 1, 4));
    TK_OK(ftc__heal_state_add(&st, &b, x));
    TK_EXPECT(ftc__heal_state_add(&st, &b, x), FTC_EEXIST);
    TK_OK(ftc__heal_buf_set(&b, "y", 0, dims + 1, 1, 4));
    TK_EXPECT(ftc__heal_state_add(&st, &b, NULL), FTC_EINVAL);
    assert_int_equal(st.n, 1);
    assert_int_equal(st.total, 8);
    ftc__heal_state_fini(&st);
}

static void snapshot_allocation_failures(void **state)
{
    (void)state;
    sample s;
    sample_init(&s);
    for (long k = 0; k < 8; k++) {
        ftc__alloc_fail_after(k);
        ftc__heal_snapshot *snap = NULL;
        int rc = ftc__heal_snapshot_take(&s.st, 1, 1, 32, 1, &snap);
        ftc__alloc_fail_after(-1);
        if (rc == 0) {
            ftc__heal_snapshot_unref(snap);
            break;
        }
        assert_int_equal(rc, FTC_ENOMEM);
        assert_null(snap);
    }
    ftc__heal_state_fini(&s.st);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(snapshot_is_a_copy),
        cmocka_unit_test(lent_snapshot_reads_the_buffers),
        cmocka_unit_test(parallel_snapshot_is_the_same),
        cmocka_unit_test(every_truncation_is_refused),
        cmocka_unit_test(every_flipped_byte_is_refused),
        cmocka_unit_test(limits_before_allocation),
        cmocka_unit_test(inconsistent_fields),
        cmocka_unit_test(layout_differences_are_named),
        cmocka_unit_test(registration_errors),
        cmocka_unit_test(snapshot_allocation_failures),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
