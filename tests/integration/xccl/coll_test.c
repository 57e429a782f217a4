/* The real oneCCL (FTC_CCL_LIBRARY, set by CMake to the prefix that
 * scripts/ccl_deps.sh unpacks) between XCCL_SIZE processes on CPU
 * buffers, through ftc's loader, environment and store rendezvous
 * (src/pg/xccl/ccl_api.c): allreduce sum/max/min/prod in and out of place,
 * reduce, broadcast, allgather, reduce_scatter and alltoall on every ftc
 * dtype, each output element compared exactly with values computed here
 * from every rank's input; AVG refused as FTC_ENOTSUP with oneCCL's
 * reason, the communicator still usable after it; a peer that never
 * comes fails the communicator's creation in time. Rank 0 prints the init
 * time and a 1 MiB allreduce time ("xccl.timing"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "pg/half.h"
#include "pg/xccl/ccl_api.h"
#include "pg_kit.h"

/* Every ftc dtype: bf16 and f16 included (oneCCL 2022.2 reduces both on
 * the CPU). */
static const int dtypes[] = {FTC_DTYPE_F32,  FTC_DTYPE_F64, FTC_DTYPE_I32,
                             FTC_DTYPE_BF16, FTC_DTYPE_F16, FTC_DTYPE_I8,
                             FTC_DTYPE_U8,   FTC_DTYPE_I64};
#define NDTYPES (sizeof(dtypes) / sizeof(dtypes[0]))
static const int ops[] = {FTC_OP_SUM, FTC_OP_MAX, FTC_OP_MIN, FTC_OP_PROD};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* Small positive integers, exact in every dtype: sums of up to 8 ranks
 * stay <= 40, products (of 1s and 2s) <= 256 - so even i8/u8 and bf16 hold
 * them (i8 sums only). */
static double value(int op, int rank, size_t i)
{
    if (op == FTC_OP_PROD) {
        return (double)((i + (size_t)rank) % 2 + 1);
    }
    return (double)((i * 7 + (size_t)rank * 3) % 5 + 1);
}

static void put(int dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case FTC_DTYPE_F32:
        ((float *)buf)[i] = (float)v;
        break;
    case FTC_DTYPE_F64:
        ((double *)buf)[i] = v;
        break;
    case FTC_DTYPE_I32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case FTC_DTYPE_BF16:
        ((uint16_t *)buf)[i] = ftc__f32_to_bf16((float)v);
        break;
    case FTC_DTYPE_F16:
        ((uint16_t *)buf)[i] = ftc__f32_to_f16((float)v);
        break;
    case FTC_DTYPE_I8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case FTC_DTYPE_U8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    default:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    }
}

static double get(int dtype, const void *buf, size_t i)
{
    switch (dtype) {
    case FTC_DTYPE_F32:
        return ((const float *)buf)[i];
    case FTC_DTYPE_F64:
        return ((const double *)buf)[i];
    case FTC_DTYPE_I32:
        return ((const int32_t *)buf)[i];
    case FTC_DTYPE_BF16:
        return ftc__bf16_to_f32(((const uint16_t *)buf)[i]);
    case FTC_DTYPE_F16:
        return ftc__f16_to_f32(((const uint16_t *)buf)[i]);
    case FTC_DTYPE_I8:
        return ((const int8_t *)buf)[i];
    case FTC_DTYPE_U8:
        return ((const uint8_t *)buf)[i];
    default:
        return (double)((const int64_t *)buf)[i];
    }
}

static double reduce_all(int op, int size, size_t i)
{
    double acc = value(op, 0, i);
    for (int r = 1; r < size; r++) {
        double v = value(op, r, i);
        switch (op) {
        case FTC_OP_SUM:
            acc += v;
            break;
        case FTC_OP_MAX:
            acc = v > acc ? v : acc;
            break;
        case FTC_OP_MIN:
            acc = v < acc ? v : acc;
            break;
        default:
            acc *= v;
            break;
        }
    }
    return acc;
}

/* One rank's state: the library, the communicator, scratch buffers. */
typedef struct member {
    const ftc__ccl_api *api;
    ftc__ccl_comm *comm;
    int rank, size;
    void *a, *b; /* count * size elements of 8 bytes each */
    int failures;
} member;

#define COUNT 1001 /* odd: no algorithm gets a power of two */

static void fill(int dtype, int op, int rank, void *buf, size_t n,
                 size_t offset)
{
    for (size_t i = 0; i < n; i++) {
        put(dtype, buf, i, value(op, rank, offset + i));
    }
}

/* Compares n outputs with want(i); reports the first wrong one. */
#define EXPECT_ELEMENTS(m, what, dtype, buf, n, want_expr)                     \
    do {                                                                       \
        for (size_t i = 0; i < (n); i++) {                                     \
            double want_ = (want_expr);                                        \
            double got_ = get((dtype), (buf), i);                              \
            if (got_ != want_) {                                               \
                fprintf(stderr,                                                \
                        "rank %d: %s %s: element %zu is %g, expected %g\n",    \
                        (m)->rank, (what), ftc_dtype_name(dtype), i, got_,     \
                        want_);                                                \
                (m)->failures++;                                               \
                break;                                                         \
            }                                                                  \
        }                                                                      \
    } while (0)

/* A oneCCL call that must succeed. */
static int ok(member *m, int result, const char *what, int dtype)
{
    int rc = ftc__ccl_error(m->api, result, m->comm, what);
    if (rc != 0) {
        fprintf(stderr, "rank %d: %s %s: %s\n", m->rank, what,
                ftc_dtype_name(dtype), ftc_last_error());
        m->failures++;
        return 0;
    }
    return 1;
}

static void check_allreduce(member *m, int dtype, int op)
{
    int cd = ftc__ccl_dtype(dtype), cop = ftc__ccl_op(op);
    /* Out of place, then in place. */
    fill(dtype, op, m->rank, m->a, COUNT, 0);
    memset(m->b, 0xa5, COUNT * 8);
    if (ok(m, m->api->all_reduce(m->a, m->b, COUNT, cd, cop, m->comm, NULL),
           "allreduce", dtype)) {
        EXPECT_ELEMENTS(m, "allreduce", dtype, m->b, COUNT,
                        reduce_all(op, m->size, i));
    }
    if (ok(m, m->api->all_reduce(m->a, m->a, COUNT, cd, cop, m->comm, NULL),
           "allreduce in place", dtype)) {
        EXPECT_ELEMENTS(m, "allreduce in place", dtype, m->a, COUNT,
                        reduce_all(op, m->size, i));
    }
}

static void check_reduce(member *m, int dtype)
{
    int root = m->size - 1;
    fill(dtype, FTC_OP_SUM, m->rank, m->a, COUNT, 0);
    if (ok(m,
           m->api->reduce(m->a, m->b, COUNT, ftc__ccl_dtype(dtype),
                          FTC__CCL_SUM, root, m->comm, NULL),
           "reduce", dtype) &&
        m->rank == root) {
        EXPECT_ELEMENTS(m, "reduce", dtype, m->b, COUNT,
                        reduce_all(FTC_OP_SUM, m->size, i));
    }
}

static void check_broadcast(member *m, int dtype)
{
    for (int root = 0; root < m->size; root += m->size - 1) {
        fill(dtype, FTC_OP_SUM, m->rank, m->a, COUNT, 0);
        if (ok(m,
               m->api->broadcast(m->a, m->a, COUNT, ftc__ccl_dtype(dtype), root,
                                 m->comm, NULL),
               "broadcast", dtype)) {
            EXPECT_ELEMENTS(m, "broadcast", dtype, m->a, COUNT,
                            value(FTC_OP_SUM, root, i));
        }
        if (m->size == 1) {
            break;
        }
    }
}

static void check_allgather(member *m, int dtype)
{
    /* Rank r contributes elements [r*COUNT, (r+1)*COUNT) of one sequence
     * per rank: output block r holds value(SUM, r, r*COUNT + i). */
    fill(dtype, FTC_OP_SUM, m->rank, m->a, COUNT, (size_t)m->rank * COUNT);
    if (ok(m,
           m->api->all_gather(m->a, m->b, COUNT, ftc__ccl_dtype(dtype), m->comm,
                              NULL),
           "allgather", dtype)) {
        EXPECT_ELEMENTS(m, "allgather", dtype, m->b, COUNT * (size_t)m->size,
                        value(FTC_OP_SUM, (int)(i / COUNT), i));
    }
}

static void check_reduce_scatter(member *m, int dtype)
{
    /* Everyone sends size blocks; this rank receives the sum of block
     * `rank`, i.e. elements rank*COUNT + i of the full reduction. */
    size_t n = COUNT * (size_t)m->size;
    fill(dtype, FTC_OP_SUM, m->rank, m->a, n, 0);
    if (ok(m,
           m->api->reduce_scatter(m->a, m->b, COUNT, ftc__ccl_dtype(dtype),
                                  FTC__CCL_SUM, m->comm, NULL),
           "reduce_scatter", dtype)) {
        size_t base = (size_t)m->rank * COUNT;
        EXPECT_ELEMENTS(m, "reduce_scatter", dtype, m->b, COUNT,
                        reduce_all(FTC_OP_SUM, m->size, base + i));
    }
}

static void check_alltoall(member *m, int dtype)
{
    /* Block d of rank s's input goes to rank d as its output block s.
     * Input element j of rank s is value(SUM, s, j), so output element
     * s*COUNT + i of rank d is value(SUM, s, d*COUNT + i). */
    size_t n = COUNT * (size_t)m->size;
    fill(dtype, FTC_OP_SUM, m->rank, m->a, n, 0);
    if (ok(m,
           m->api->all_to_all(m->a, m->b, COUNT, ftc__ccl_dtype(dtype), m->comm,
                              NULL),
           "alltoall", dtype)) {
        size_t mine = (size_t)m->rank * COUNT;
        EXPECT_ELEMENTS(m, "alltoall", dtype, m->b, n,
                        value(FTC_OP_SUM, (int)(i / COUNT), mine + i % COUNT));
    }
}

/* AVG: oneCCL raises "unsupported op" (result 11); ftc says FTC_ENOTSUP
 * with the reason, and the communicator keeps working. */
static void check_avg_refused(member *m)
{
    fill(FTC_DTYPE_F32, FTC_OP_SUM, m->rank, m->a, COUNT, 0);
    int result = m->api->all_reduce(m->a, m->b, COUNT, FTC__CCL_FLOAT32,
                                    ftc__ccl_op(FTC_OP_AVG), m->comm, NULL);
    int rc = ftc__ccl_error(m->api, result, m->comm, "allreduce avg");
    const char *msg = ftc_last_error();
    if (rc != FTC_ENOTSUP || strstr(msg, "onecclPluginException") == NULL ||
        strstr(msg, "AVG") == NULL) {
        fprintf(stderr, "rank %d: avg: result %d -> %s: %s\n", m->rank, result,
                ftc_err_name(rc), msg);
        m->failures++;
    }
    if (m->rank == 0) {
        printf("xccl.avg: %s\n", msg);
    }
}

static int64_t allreduce_1mib_us(member *m)
{
    size_t n = (1u << 20) / sizeof(float);
    float *buf = malloc(n * sizeof(float));
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        buf[i] = 1.0f;
    }
    for (int it = 0; it < 5 && buf != NULL; it++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (!ok(m,
                m->api->all_reduce(buf, buf, n, FTC__CCL_FLOAT32, FTC__CCL_SUM,
                                   m->comm, NULL),
                "allreduce 1 MiB", FTC_DTYPE_F32)) {
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t us =
            (b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
        best = us < best ? us : best;
    }
    free(buf);
    return best;
}

/* argv: role, store address, size, rank. */
static int member_role(int argc, char **argv)
{
    if (argc < 4) {
        return 2;
    }
    member m = {.rank = (int)strtol(argv[3], NULL, 10),
                .size = (int)strtol(argv[2], NULL, 10)};
    ftc__ccl_env_hint hint = {m.rank, m.size, 1};
    if (ftc__ccl_load(&hint, &m.api) != 0) {
        fprintf(stderr, "rank %d: %s\n", m.rank, ftc_last_error());
        return 3;
    }
    ftc_store_client *store = NULL;
    if (ftc_store_client_connect(argv[1], NULL, &store) != 0) {
        fprintf(stderr, "rank %d: store: %s\n", m.rank, ftc_last_error());
        return 4;
    }
    int64_t t0 = tk_now_ms();
    if (ftc__ccl_comm_create(m.api, store, "xccl", m.rank, m.size,
                             ftc__deadline_in_ms(tk_ms(60000)), &m.comm) != 0) {
        fprintf(stderr, "rank %d: comm: %s\n", m.rank, ftc_last_error());
        ftc_store_client_close(store);
        return 5;
    }
    int64_t init_ms = tk_now_ms() - t0;
    m.a = malloc(COUNT * 8 * (size_t)m.size);
    m.b = malloc(COUNT * 8 * (size_t)m.size);
    if (m.a == NULL || m.b == NULL) {
        return 6;
    }
    int64_t t1 = tk_now_ms();
    for (size_t d = 0; d < NDTYPES; d++) {
        for (size_t o = 0; o < NOPS; o++) {
            check_allreduce(&m, dtypes[d], ops[o]);
        }
        check_reduce(&m, dtypes[d]);
        check_broadcast(&m, dtypes[d]);
        check_allgather(&m, dtypes[d]);
        check_reduce_scatter(&m, dtypes[d]);
        check_alltoall(&m, dtypes[d]);
        if (d == 0) {
            check_avg_refused(&m);
        }
    }
    int64_t checks_ms = tk_now_ms() - t1;
    int64_t us = allreduce_1mib_us(&m);
    if (m.rank == 0) {
        printf("xccl.timing: N=%d onecclCommInitRank (with the id exchange) "
               "%lld ms, checks %lld ms, allreduce 1 MiB f32 best of 5 "
               "%lld us\n",
               m.size, (long long)init_ms, (long long)checks_ms, (long long)us);
    }
    if (ftc__ccl_comm_destroy(m.api, m.comm) != 0) {
        fprintf(stderr, "rank %d: destroy: %s\n", m.rank, ftc_last_error());
        m.failures++;
    }
    free(m.a);
    free(m.b);
    ftc_store_client_close(store);
    fflush(stdout);
    return m.failures == 0 ? 0 : 1;
}

static void xccl_collectives(void **state)
{
    (void)state;
    const char *s = getenv("XCCL_SIZE");
    int n = s != NULL ? (int)strtol(s, NULL, 10) : 2;
    const char *lib = getenv("FTC_CCL_LIBRARY");
    if (lib == NULL || access(lib, R_OK) != 0) {
        fail_msg("oneCCL is not unpacked at FTC_CCL_LIBRARY=%s: run "
                 "scripts/ccl_deps.sh (make check does)",
                 lib != NULL ? lib : "(unset)");
    }
    const char *addr = pgt_store();
    tk_child kids[8];
    assert_true(n >= 1 && n <= 8);
    for (int r = 0; r < n; r++) {
        char size_s[16], rank_s[16];
        snprintf(size_s, sizeof(size_s), "%d", n);
        snprintf(rank_s, sizeof(rank_s), "%d", r);
        char *args[] = {(char *)addr, size_s, rank_s, NULL};
        tk_spawn(&kids[r], "member", args, NULL);
    }
    assert_int_equal(tk_reap(kids, n, 150000), 0);
    for (int r = 0; r < n; r++) {
        if (tk_exit_code(&kids[r]) != 0) {
            fail_msg("rank %d exited with %d", r, tk_exit_code(&kids[r]));
        }
    }
}

/* A rank whose peers never come fails within the deadline, naming what
 * it waited for, and never enters oneCCL's init (which has none). */
static void xccl_missing_peer(void **state)
{
    (void)state;
    ftc__ccl_env_hint hint = {0, 2, 1};
    const ftc__ccl_api *api = NULL;
    TK_OK(ftc__ccl_load(&hint, &api));
    ftc_store_client *store = NULL;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &store));
    ftc__ccl_comm *comm = (ftc__ccl_comm *)&hint;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc__ccl_comm_create(api, store, "lonely0", 0, 2,
                                   ftc__deadline_in_ms(300), &comm),
              FTC_ETIMEDOUT);
    assert_null(comm);
    assert_non_null(strstr(ftc_last_error(), "lonely0/ccl_arrived/1"));
    TK_EXPECT(ftc__ccl_comm_create(api, store, "lonely1", 1, 2,
                                   ftc__deadline_in_ms(300), &comm),
              FTC_ETIMEDOUT);
    assert_non_null(strstr(ftc_last_error(), "unique id from rank 0"));
    assert_true(tk_now_ms() - t0 < tk_ms(5000));
    TK_EXPECT(ftc__ccl_comm_create(api, store, "bad", 2, 2,
                                   ftc__deadline_in_ms(300), &comm),
              FTC_EINVAL);
    ftc_store_client_close(store);
}

int main(int argc, char **argv)
{
    static const tk_role roles[] = {{"member", member_role}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xccl_collectives),
        cmocka_unit_test(xccl_missing_peer),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
