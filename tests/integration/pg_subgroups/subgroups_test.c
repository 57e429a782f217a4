/* Subgroups between 8 real processes: the HYBRID_SHARD layouts 2x4, 4x2
 * and 8x1 (devices per node given, or taken from the device layer),
 * new_subgroups, and split with keys and an undefined color: membership
 * (parent ranks, in order) and results of collectives in each group, with
 * parent and subgroups running operations at the same time. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "pg_kit.h"

#define N 8

/* Checks that pg holds exactly `want` (parent ranks, in group order) and
 * that an allreduce of parent ranks sums them. */
static int check_group(ftc_pg *pg, const int *want, int n, const char *what)
{
    int got[N];
    if (pg == NULL || ftc_pg_size(pg) != n) {
        return ftc__seterr(FTC_EPROTO, "%s: size %d, want %d", what,
                           pg ? ftc_pg_size(pg) : -1, n);
    }
    ftc_pg_parent_ranks(pg, got);
    int sum = 0;
    for (int i = 0; i < n; i++) {
        sum += want[i];
        if (got[i] != want[i]) {
            return ftc__seterr(FTC_EPROTO, "%s: member %d is rank %d, want %d",
                               what, i, got[i], want[i]);
        }
    }
    int me = got[ftc_pg_rank(pg)];
    ftc_tensor t = ftc_tensor_cpu(&me, 1, FTC_DTYPE_I32);
    ftc_work *w;
    int rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
    rc = rc ? rc : pgt_wait(w);
    if (rc == 0 && me != sum) {
        rc = ftc__seterr(FTC_EPROTO, "%s: sum %d, want %d", what, me, sum);
    }
    return rc;
}

/* HYBRID_SHARD with d devices per node: shard = this node's ranks,
 * replicate = same local rank on every node. */
static int check_mesh(ftc_pg *world, int d, int asked)
{
    int r = ftc_pg_rank(world);
    ftc_pg *shard = NULL, *rep = NULL;
    int rc = ftc_pg_mesh_2d(world, asked, FTC_DEVICE_CPU, NULL, &shard, &rep);
    int want_shard[N], want_rep[N];
    for (int i = 0; i < d; i++) {
        want_shard[i] = (r / d) * d + i;
    }
    for (int i = 0; i < N / d; i++) {
        want_rep[i] = r % d + i * d;
    }
    char what[64];
    snprintf(what, sizeof(what), "%dx%d shard", N / d, d);
    rc = rc ? rc : check_group(shard, want_shard, d, what);
    snprintf(what, sizeof(what), "%dx%d replicate", N / d, d);
    rc = rc ? rc : check_group(rep, want_rep, N / d, what);
    /* All three groups at once: two async ops, then the waits. */
    if (rc == 0) {
        double a = 1, b = 1;
        ftc_tensor ta = ftc_tensor_cpu(&a, 1, FTC_DTYPE_F64);
        ftc_tensor tb = ftc_tensor_cpu(&b, 1, FTC_DTYPE_F64);
        ftc_work *wa, *wb;
        rc = ftc_pg_allreduce(world, &ta, &ta, FTC_OP_SUM, NULL, &wa);
        rc = rc ? rc : ftc_pg_allreduce(shard, &tb, &tb, FTC_OP_SUM, NULL, &wb);
        rc = rc ? rc : pgt_wait(wb);
        rc = rc ? rc : pgt_wait(wa);
        if (rc == 0 && (a != N || b != d)) {
            rc = ftc__seterr(FTC_EPROTO, "concurrent: %g %g", a, b);
        }
    }
    ftc_pg_destroy(shard);
    ftc_pg_destroy(rep);
    return rc;
}

static int member(int argc, char **argv)
{
    if (argc < 3) {
        return 2;
    }
    int r = (int)strtol(argv[2], NULL, 10);
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.timeout_ms = tk_ms(30000);
    o.connect_timeout_ms = tk_ms(30000);
    ftc_pg *world = NULL;
    int rc = pgt_create(argv[1], "world", r, N, &o, &world);
    /* Layouts 2x4, 4x2, 8x1 with devices per node given... */
    rc = rc ? rc : check_mesh(world, 4, 4);
    rc = rc ? rc : check_mesh(world, 2, 2);
    rc = rc ? rc : check_mesh(world, 1, 1);
    /* ... and from the device layer (FTC_CPU_DEVICE_COUNT=4 here). */
    rc = rc ? rc : check_mesh(world, 4, 0);
    /* new_subgroups(2): [0,1] [2,3] [4,5] [6,7]. */
    ftc_pg *sub = NULL;
    rc = rc ? rc : ftc_pg_new_subgroups(world, 2, NULL, &sub);
    int pair[2] = {r / 2 * 2, r / 2 * 2 + 1};
    rc = rc ? rc : check_group(sub, pair, 2, "new_subgroups(2)");
    ftc_pg_destroy(sub);
    sub = NULL;
    /* split: color r % 3, rank 2/5 undefined, keys reverse the order. */
    int color = r % 3 == 2 ? FTC_PG_UNDEFINED : r % 3;
    rc = rc ? rc : ftc_pg_split(world, color, -r, NULL, &sub);
    if (rc == 0 && color == FTC_PG_UNDEFINED) {
        rc = sub == NULL ? 0 : ftc__seterr(FTC_EPROTO, "undefined got one");
    } else if (rc == 0) {
        int want[N], k = 0;
        for (int i = N - 1; i >= 0; i--) {
            if (i % 3 == color) {
                want[k++] = i;
            }
        }
        rc = check_group(sub, want, k, "split");
    }
    ftc_pg_destroy(sub);
    /* Refused layouts: 3 devices do not divide 8 ranks; no cuda here. */
    ftc_pg *s2 = NULL, *r2 = NULL;
    if (rc == 0 && (ftc_pg_mesh_2d(world, 3, FTC_DEVICE_CPU, NULL, &s2, &r2) !=
                        FTC_EINVAL ||
                    ftc_pg_mesh_2d(world, 0, FTC_DEVICE_CUDA, NULL, &s2, &r2) !=
                        FTC_ENOTSUP ||
                    s2 != NULL || r2 != NULL)) {
        rc = ftc__seterr(FTC_EPROTO, "bad layouts were not refused");
    }
    if (rc != 0) {
        fprintf(stderr, "rank %d: %s\n", r, ftc_last_error());
    }
    ftc_pg_destroy(world);
    return rc == 0 ? 0 : 1;
}

static void layouts_of_eight(void **state)
{
    (void)state;
    tk_child kids[N];
    char rank[N][16];
    char *env[] = {"FTC_CPU_DEVICE_COUNT=4", NULL};
    for (int r = 0; r < N; r++) {
        snprintf(rank[r], sizeof(rank[r]), "%d", r);
        char *args[] = {(char *)pgt_store(), rank[r], NULL};
        tk_spawn(&kids[r], "member", args, env);
    }
    assert_int_equal(tk_reap(kids, N, 120000), 0);
    for (int r = 0; r < N; r++) {
        assert_int_equal(tk_exit_code(&kids[r]), 0);
    }
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layouts_of_eight),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
