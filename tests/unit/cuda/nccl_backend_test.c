/* The nccl process-group backend (libftc_pg_nccl.so) against the real
 * libnccl.so.2 and CUDA runtime. Without a GPU: creating a group on it
 * fails with FTC_ENOTSUP carrying CUDA's "driver version is insufficient"
 * (by opts.backend and by FTC_PG_BACKEND), a missing libnccl is
 * FTC_ENOTSUP naming it, and nothing is published in the store. With a
 * GPU: a 1-rank group runs allreduce (SUM, AVG), broadcast and allgather
 * on device buffers (values checked after copying back), refuses host
 * buffers with FTC_EINVAL, and abort fails a pending work. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_kit.h"
#include "testkit.h"

static int counter;

/* A fresh prefix per create. */
static const char *prefix(void)
{
    static char p[64];
    snprintf(p, sizeof(p), "nccl_backend_test/%d", ++counter);
    return p;
}

/* ftc_pg_create(1 rank) with opts (NULL: FTC_PG_BACKEND) is refused with
 * FTC_ENOTSUP holding want, and <prefix>/backend/group was never set. */
static void refused(const ftc_pg_opts *o, const char *want)
{
    ftc_store_client *c = NULL;
    assert_int_equal(ftc_store_client_connect(pgt_store(), NULL, &c), 0);
    const char *name = prefix();
    ftc_pg *pg = (ftc_pg *)c;
    assert_int_equal(ftc_pg_create(c, name, 0, 1, o, &pg), FTC_ENOTSUP);
    assert_null(pg);
    const char *msg = ftc_last_error();
    if (strstr(msg, want) == NULL || strstr(msg, "nccl") == NULL) {
        fail_msg("'%s' lacks '%s'", msg, want);
    }
    printf("refused: %s\n", msg);
    pgt_assert_unpublished(c, name);
    ftc_store_client_close(c);
}

/* Runs first: NCCL is not loaded yet, so FTC_NCCL_LIBRARY is read. */
static void missing_library_named(void **state)
{
    (void)state;
    setenv("FTC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = "nccl";
    refused(&o, "/nonexistent/libnccl.so.2");
    unsetenv("FTC_NCCL_LIBRARY");
}

static int have_gpu(void)
{
    return ftc_device_available(FTC_DEVICE_CUDA) == 0;
}

static void no_gpu_refused_with_cuda_text(void **state)
{
    (void)state;
    if (have_gpu()) {
        printf("GPU: the cuda kind is available; refusal not checked\n");
        return;
    }
    printf("no GPU: checking the refusal only\n");
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = "nccl";
    refused(&o, "driver version is insufficient");
    /* The same by the environment (opts.backend NULL). */
    setenv("FTC_PG_BACKEND", "nccl", 1);
    refused(NULL, "driver version is insufficient");
    unsetenv("FTC_PG_BACKEND");
}

/* ---------------------------------------------------------- GPU checks */

static ftc_pg *one_rank(void)
{
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.backend = "nccl";
    ftc_pg *pg = NULL;
    int rc = pgt_create(pgt_store(), prefix(), 0, 1, &o, &pg);
    if (rc != 0) {
        fail_msg("create: %d: %s", rc, ftc_last_error());
    }
    return pg;
}

static float *dev_floats(const float *host, size_t n)
{
    void *d = NULL;
    assert_int_equal(cudaMalloc(&d, n * sizeof(float)), cudaSuccess);
    assert_int_equal(
        cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice),
        cudaSuccess);
    return d;
}

static void back(float *host, const float *d, size_t n)
{
    assert_int_equal(
        cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost),
        cudaSuccess);
}

static void done(int rc, ftc_work *w)
{
    if (rc == 0) {
        rc = ftc_work_wait(w, 30000);
        ftc_work_release(w);
    }
    if (rc != 0) {
        fail_msg("%d: %s", rc, ftc_last_error());
    }
}

static void gpu_collectives(void **state)
{
    (void)state;
    if (!have_gpu()) {
        printf("no GPU: collectives not run\n");
        return;
    }
    ftc_pg *pg = one_rank();
    enum { N = 1024 };
    static float h[N], out[N];
    for (int i = 0; i < N; i++) {
        h[i] = (float)i * 0.5f;
    }
    float *a = dev_floats(h, N), *b = dev_floats(h, N);
    ftc_tensor ta = {.data = a,
                     .count = N,
                     .dtype = FTC_DTYPE_F32,
                     .device = FTC_DEVICE_CUDA};
    ftc_tensor tb = ta;
    tb.data = b;
    ftc_work *w = NULL;
    int ops[] = {FTC_OP_SUM, FTC_OP_AVG, FTC_OP_MAX};
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        done(ftc_pg_allreduce(pg, &ta, &tb, ops[k], NULL, &w), w);
        back(out, b, N);
        assert_memory_equal(out, h, sizeof(h)); /* 1 rank: the input */
    }
    done(ftc_pg_broadcast(pg, &ta, 0, NULL, &w), w);
    back(out, a, N);
    assert_memory_equal(out, h, sizeof(h));
    done(ftc_pg_allgather(pg, &ta, &tb, NULL, &w), w);
    back(out, b, N);
    assert_memory_equal(out, h, sizeof(h));
    done(ftc_pg_barrier(pg, NULL, &w), w);
    /* Host memory: refused at the call, naming it. */
    ftc_tensor th = ftc_tensor_cpu(h, N, FTC_DTYPE_F32);
    assert_int_equal(ftc_pg_allreduce(pg, &th, &th, FTC_OP_SUM, NULL, &w),
                     FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "nccl needs device memory"));
    assert_non_null(strstr(ftc_last_error(), "allreduce"));
    printf("GPU: nccl allreduce SUM/AVG/MAX, broadcast, allgather, barrier "
           "on %d floats\n",
           N);
    ftc_pg_destroy(pg);
    cudaFree(a);
    cudaFree(b);
}

/* A send to itself with no matching recv never finishes: abort must fail
 * it with FTC_ECANCELED. */
static void gpu_abort_pending(void **state)
{
    (void)state;
    if (!have_gpu()) {
        printf("no GPU: abort not run\n");
        return;
    }
    ftc_pg *pg = one_rank();
    float h[16] = {1};
    float *a = dev_floats(h, 16);
    ftc_tensor ta = {.data = a,
                     .count = 16,
                     .dtype = FTC_DTYPE_F32,
                     .device = FTC_DEVICE_CUDA};
    ftc_work *w = NULL;
    assert_int_equal(ftc_pg_send(pg, &ta, 0, 1, NULL, &w), 0);
    assert_int_equal(ftc_work_wait(w, 200), FTC_ETIMEDOUT);
    ftc_pg_abort(pg);
    assert_int_equal(ftc_work_wait(w, 5000), FTC_ECANCELED);
    ftc_work_release(w);
    printf("GPU: nccl abort failed a pending send\n");
    ftc_pg_destroy(pg);
    cudaFree(a);
}

int main(void)
{
    pgt_store(); /* first, from the main thread */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(missing_library_named),
        cmocka_unit_test(no_gpu_refused_with_cuda_text),
        cmocka_unit_test(gpu_collectives),
        cmocka_unit_test(gpu_abort_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
