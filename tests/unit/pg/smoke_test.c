/* Every collective, in threads of one process (fast, and run under TSan):
 * group sizes 1..5, every algorithm, sizes 0/1/odd/not divisible and a
 * few thousand elements, a representative spread of dtypes and ops. The
 * full dtype x op matrix over processes is tests/integration/pg_matrix. */
#include "pg_kit.h"

typedef struct plan {
    int coll;
    int algo;
} plan;

static const plan plans[] = {
    {PGT_ALLREDUCE, FTC_ALGO_RING},      {PGT_ALLREDUCE, FTC_ALGO_RDOUBLE},
    {PGT_REDUCE, FTC_ALGO_TREE},         {PGT_REDUCE, FTC_ALGO_CHAIN},
    {PGT_BROADCAST, FTC_ALGO_TREE},      {PGT_BROADCAST, FTC_ALGO_CHAIN},
    {PGT_ALLGATHER, FTC_ALGO_RING},      {PGT_ALLGATHER, FTC_ALGO_DIRECT},
    {PGT_ALLGATHERV, FTC_ALGO_RING},     {PGT_ALLGATHERV, FTC_ALGO_DIRECT},
    {PGT_REDUCE_SCATTER, FTC_ALGO_RING}, {PGT_REDUCE_SCATTER, FTC_ALGO_DIRECT},
    {PGT_ALLTOALL, FTC_ALGO_AUTO},       {PGT_ALLTOALLV, FTC_ALGO_AUTO},
    {PGT_GATHER, FTC_ALGO_AUTO},         {PGT_SCATTER, FTC_ALGO_AUTO},
    {PGT_BARRIER, FTC_ALGO_AUTO},        {PGT_SENDRECV, FTC_ALGO_AUTO},
};

static const struct {
    int dtype, op;
} types[] = {
    {FTC_DTYPE_F32, FTC_OP_SUM}, {FTC_DTYPE_BF16, FTC_OP_AVG},
    {FTC_DTYPE_I8, FTC_OP_PROD}, {FTC_DTYPE_F16, FTC_OP_MAX},
    {FTC_DTYPE_I64, FTC_OP_MIN},
};

static int every_collective(ftc_pg *pg, void *arg)
{
    (void)arg;
    int n = ftc_pg_size(pg);
    size_t counts[] = {0, 1, 7, (size_t)n * 3 + 1, 5000};
    int seed = 0;
    for (size_t p = 0; p < sizeof(plans) / sizeof(plans[0]); p++) {
        for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                seed++;
                int rc =
                    pgt_check(pg, plans[p].coll, types[t].dtype, types[t].op,
                              counts[c], plans[p].algo, seed % n, seed);
                if (rc != 0) {
                    return rc;
                }
            }
        }
    }
    return 0;
}

static void collectives_in_threads(void **state)
{
    (void)state;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.segment_bytes = 1024; /* many segments: exercise the pipelining */
    for (int n = 1; n <= 5; n++) {
        pgt_run_threads(n, &o, every_collective, NULL);
    }
}

static void streams_stripe_large_messages(void **state)
{
    (void)state;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.segment_bytes = 4096;
    o.streams = 3;
    pgt_run_threads(3, &o, every_collective, NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collectives_in_threads),
        cmocka_unit_test(streams_stripe_large_messages),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
