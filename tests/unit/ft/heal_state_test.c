/* Snapshots of a state registered through save/load callbacks, borrowed
 * memory or both: the same metadata and bytes whichever way, the saves
 * run once per snapshot (none for a copy of a snapshot, none for an empty
 * buffer), a failed save fails the snapshot cleanly, and an empty state
 * (no buffer, or zero-byte ones) snapshots, copies and round-trips its
 * metadata without touching any memory. */
#include <string.h>

#include "ft/heal/heal.h"
#include "testkit.h"

#define NA 3000 /* floats */
#define NB 1001 /* doubles */

typedef struct src {
    void *p;
    int saves, fail;
} src;

static int save(void *user, void *dst, size_t bytes)
{
    src *s = user;
    s->saves++;
    if (s->fail != 0) {
        return s->fail;
    }
    memcpy(dst, s->p, bytes);
    return 0;
}

static int load(void *user, const void *from, size_t bytes)
{
    memcpy(((src *)user)->p, from, bytes);
    return 0;
}

typedef struct fixture {
    float a[NA];
    double b[NB];
    src sa, sb, empty;
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof(*f));
    for (int i = 0; i < NA; i++) {
        f->a[i] = (float)i * 0.25f;
    }
    for (int i = 0; i < NB; i++) {
        f->b[i] = -(double)i / 3;
    }
    f->sa.p = f->a;
    f->sb.p = f->b;
}

/* "a", "b" and an empty "e": each borrowed or behind callbacks. */
static void state(fixture *f, ftc__heal_state *st, bool cb_a, bool cb_b)
{
    ftc__heal_state_init(st);
    ftc__heal_buf buf;
    int64_t da[] = {NA}, db[] = {NB}, de[] = {0};
    ftc_manager_state_cb ca = {save, load, &f->sa}, cb = {save, load, &f->sb};
    ftc_manager_state_cb ce = {save, load, &f->empty};
    TK_OK(ftc__heal_buf_set(&buf, "a", FTC_DTYPE_F32, da, 1, 4));
    TK_OK(cb_a ? ftc__heal_state_add_cb(st, &buf, &ca)
               : ftc__heal_state_add(st, &buf, f->a));
    TK_OK(ftc__heal_buf_set(&buf, "e", FTC_DTYPE_F32, de, 1, 4));
    TK_OK(ftc__heal_state_add_cb(st, &buf, &ce));
    TK_OK(ftc__heal_buf_set(&buf, "b", FTC_DTYPE_F64, db, 1, 8));
    TK_OK(cb_b ? ftc__heal_state_add_cb(st, &buf, &cb)
               : ftc__heal_state_add(st, &buf, f->b));
}

/* The snapshot's bytes, read piece by piece. */
static void assert_bytes(const ftc__heal_snapshot *snap, const fixture *f)
{
    uint8_t *all = ftc__malloc(snap->meta.total_bytes);
    for (uint64_t off = 0; off < snap->meta.total_bytes;) {
        ftc__heal_seg p =
            ftc__heal_snapshot_piece(snap, off, snap->meta.total_bytes - off);
        memcpy(all + off, p.p, p.len);
        off += p.len;
    }
    assert_memory_equal(all, f->a, sizeof(f->a));
    assert_memory_equal(all + sizeof(f->a), f->b, sizeof(f->b));
    ftc__free(all);
}

static void every_registration_serves_the_same(void **state_)
{
    (void)state_;
    static fixture f;
    fixture_init(&f);
    ftc__heal_state borrowed, mixed, cbs;
    state(&f, &borrowed, false, false);
    state(&f, &mixed, false, true);
    state(&f, &cbs, true, true);
    ftc__heal_snapshot *ref, *lm, *lc, *tc, *copy;
    TK_OK(ftc__heal_snapshot_lend(&borrowed, 7, 9, 1000, 1, &ref));
    TK_OK(ftc__heal_snapshot_lend(&mixed, 7, 9, 1000, 1, &lm));
    assert_int_equal(f.sa.saves, 0);
    assert_int_equal(f.sb.saves, 1);
    TK_OK(ftc__heal_snapshot_lend(&cbs, 7, 9, 1000, 2, &lc));
    TK_OK(ftc__heal_snapshot_take(&cbs, 7, 9, 1000, 1, &tc));
    assert_int_equal(f.sa.saves, 2);
    assert_int_equal(f.sb.saves, 3);
    assert_int_equal(f.empty.saves, 0); /* nothing to save */
    /* Serving a lent snapshot past its bound copies it: no save. */
    TK_OK(ftc__heal_snapshot_copy(lm, 2, &copy));
    assert_int_equal(f.sb.saves, 3);
    assert_true(ref->borrows);
    assert_true(lm->borrows);
    assert_false(lc->borrows); /* nothing borrowed: a copy to publish */
    assert_false(tc->borrows);
    assert_non_null(copy->copy);
    ftc__heal_snapshot *all[] = {lm, lc, tc, copy};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(all[i]->meta_len, ref->meta_len);
        assert_memory_equal(all[i]->meta_bytes, ref->meta_bytes, ref->meta_len);
        assert_bytes(all[i], &f);
    }
    /* A saved state no longer follows its owner's memory. */
    f.b[0] = 42.0;
    assert_true(
        ((const double *)ftc__heal_snapshot_piece(lc, sizeof(f.a), 8).p)[0] ==
        0.0);
    for (size_t i = 0; i < 4; i++) {
        ftc__heal_snapshot_unref(all[i]);
    }
    ftc__heal_snapshot_unref(ref);
    ftc__heal_state_fini(&borrowed);
    ftc__heal_state_fini(&mixed);
    ftc__heal_state_fini(&cbs);
}

static void failed_save_fails_the_snapshot(void **state_)
{
    (void)state_;
    static fixture f;
    fixture_init(&f);
    f.sb.fail = -3;
    ftc__heal_state st;
    state(&f, &st, true, true);
    ftc__heal_snapshot *snap = (ftc__heal_snapshot *)&f; /* overwritten */
    TK_EXPECT(ftc__heal_snapshot_lend(&st, 1, 1, 1000, 1, &snap),
              FTC_ECANCELED);
    assert_null(snap);
    assert_non_null(strstr(ftc_last_error(), "buffer b returned -3"));
    TK_EXPECT(ftc__heal_snapshot_take(&st, 1, 1, 1000, 1, &snap),
              FTC_ECANCELED);
    assert_null(snap);
    /* Saves stop at the first failure. */
    assert_int_equal(f.sa.saves, 2);
    assert_int_equal(f.sb.saves, 2);
    ftc__heal_state_fini(&st);
}

static void callbacks_are_required(void **state_)
{
    (void)state_;
    ftc__heal_state st;
    ftc__heal_state_init(&st);
    ftc__heal_buf buf;
    int64_t d[] = {4};
    TK_OK(ftc__heal_buf_set(&buf, "x", FTC_DTYPE_F32, d, 1, 4));
    ftc_manager_state_cb no_load = {save, NULL, NULL};
    ftc_manager_state_cb no_save = {NULL, load, NULL};
    TK_EXPECT(ftc__heal_state_add_cb(&st, &buf, &no_load), FTC_EINVAL);
    TK_EXPECT(ftc__heal_state_add_cb(&st, &buf, &no_save), FTC_EINVAL);
    TK_EXPECT(ftc__heal_state_add_cb(&st, &buf, NULL), FTC_EINVAL);
    assert_int_equal(st.n, 0);
    ftc_manager_state_cb ok = {save, load, NULL};
    TK_OK(ftc__heal_state_add_cb(&st, &buf, &ok));
    TK_EXPECT(ftc__heal_state_add_cb(&st, &buf, &ok), FTC_EEXIST);
    TK_EXPECT(ftc__heal_state_add(&st, &buf, d), FTC_EEXIST);
    assert_int_equal(st.n, 1);
    assert_int_equal(st.cb_bytes, 16);
    ftc__heal_state_fini(&st);
}

/* An empty state: 0 bytes, no chunk, its metadata decodes to the
 * same. */
static void assert_empty(const ftc__heal_snapshot *snap, uint32_t n_buffers)
{
    assert_int_equal(snap->meta.total_bytes, 0);
    assert_int_equal(snap->meta.n_chunks, 0);
    assert_int_equal(snap->meta.n_buffers, n_buffers);
    assert_int_equal(snap->meta.step, 4);
    assert_int_equal(snap->meta.batches_committed, 6);
    assert_int_equal(snap->n_segs, 0);
    assert_false(snap->borrows);
    ftc__heal_meta m;
    const ftc__heal_limits lim = {8, 8, 1 << 20};
    TK_OK(ftc__heal_meta_decode(snap->meta_bytes, snap->meta_len, &lim, &m));
    assert_int_equal(m.n_buffers, n_buffers);
    assert_int_equal(m.total_bytes, 0);
    assert_int_equal(m.n_chunks, 0);
    ftc__heal_meta_fini(&m);
}

/* Every kind of snapshot of st, each checked empty. */
static void snapshot_every_way(const ftc__heal_state *st, uint32_t n_buffers)
{
    ftc__heal_snapshot *taken, *lent, *copy;
    TK_OK(ftc__heal_snapshot_take(st, 4, 6, 1000, 2, &taken));
    TK_OK(ftc__heal_snapshot_lend(st, 4, 6, 1000, 2, &lent));
    TK_OK(ftc__heal_snapshot_copy(lent, 2, &copy));
    assert_empty(taken, n_buffers);
    assert_empty(lent, n_buffers);
    assert_empty(copy, n_buffers);
    assert_int_equal(taken->meta_len, lent->meta_len);
    assert_memory_equal(taken->meta_bytes, lent->meta_bytes, lent->meta_len);
    assert_memory_equal(copy->meta_bytes, lent->meta_bytes, lent->meta_len);
    ftc__heal_snapshot_unref(taken);
    ftc__heal_snapshot_unref(lent);
    ftc__heal_snapshot_unref(copy);
}

/* Nothing registered, then only zero-byte buffers (one borrowed with no
 * memory at all, one behind callbacks that must not run). */
static void empty_state_snapshots(void **state_)
{
    (void)state_;
    ftc__heal_state st;
    ftc__heal_state_init(&st);
    snapshot_every_way(&st, 0);
    src none = {0};
    ftc_manager_state_cb cb = {save, load, &none};
    ftc__heal_buf buf;
    int64_t d0[] = {0}, d2[] = {3, 0};
    TK_OK(ftc__heal_buf_set(&buf, "nothing", FTC_DTYPE_F32, d0, 1, 4));
    TK_OK(ftc__heal_state_add(&st, &buf, NULL));
    TK_OK(ftc__heal_buf_set(&buf, "flat", FTC_DTYPE_F64, d2, 2, 8));
    TK_OK(ftc__heal_state_add_cb(&st, &buf, &cb));
    snapshot_every_way(&st, 2);
    assert_int_equal(none.saves, 0);
    ftc__heal_state_fini(&st);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_registration_serves_the_same),
        cmocka_unit_test(failed_save_fails_the_snapshot),
        cmocka_unit_test(callbacks_are_required),
        cmocka_unit_test(empty_state_snapshots),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
