/* The cuda device plugin with the real CUDA runtime. Without a GPU (no
 * driver: cudaGetDeviceCount fails) the kind must be unavailable with
 * FTC_ENOTSUP and CUDA's own text, and mesh_2d must say the same; with a
 * GPU the stream, event and memory-kind checks run for real. Either way a
 * missing runtime and a library without its symbols are FTC_ENOTSUP
 * naming them. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device_int.h"
#include "pg_kit.h"

#define CUDA_OK(call) assert_int_equal((int)(call), (int)cudaSuccess)

/* Forgets the loaded kind so the next call loads the plugin again. */
static int reset(void **state)
{
    (void)state;
    unsetenv("FTC_CUDA_RUNTIME");
    ftc__device_unregister(FTC_DEVICE_CUDA);
    return 0;
}

static void assert_has(const char *text, const char *part)
{
    if (strstr(text, part) == NULL) {
        fail_msg("'%s' lacks '%s'", text, part);
    }
}

static int64_t deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + tk_ms(ms) * 1000000;
}

/* Streams, events and memory kinds on device 0 of a real GPU. */
static void gpu_checks(int n)
{
    TK_OK(ftc_device_available(FTC_DEVICE_CUDA));
    uint32_t caps = 0;
    TK_OK(ftc_device_caps(FTC_DEVICE_CUDA, &caps));
    assert_int_equal(caps, FTC_DEVCAP_STREAMS | FTC_DEVCAP_EVENTS |
                               FTC_DEVCAP_IPC_MEMORY | FTC_DEVCAP_IPC_EVENTS);
    int count = 0;
    TK_OK(ftc_device_count(FTC_DEVICE_CUDA, &count));
    assert_int_equal(count, n);

    size_t size = 64u << 20;
    void *dev_buf = NULL, *pinned = NULL, *managed = NULL;
    CUDA_OK(cudaMalloc(&dev_buf, size));
    CUDA_OK(cudaMallocHost(&pinned, size));
    CUDA_OK(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal));
    int plain = 0, mk = -1;
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_CUDA, dev_buf, &mk));
    assert_int_equal(mk, FTC_MEMORY_DEVICE);
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_CUDA, pinned, &mk));
    assert_int_equal(mk, FTC_MEMORY_HOST_PINNED);
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_CUDA, managed, &mk));
    assert_int_equal(mk, FTC_MEMORY_MANAGED);
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_CUDA, &plain, &mk));
    assert_int_equal(mk, FTC_MEMORY_HOST);

    /* The public API: record, wait, synchronize, query. */
    ftc_device_stream *s = NULL;
    ftc_device_event *e = NULL;
    TK_EXPECT(ftc_device_stream_create(FTC_DEVICE_CUDA, n, &s), FTC_EINVAL);
    TK_OK(ftc_device_stream_create(FTC_DEVICE_CUDA, 0, &s));
    TK_OK(ftc_device_event_create(FTC_DEVICE_CUDA, 0, &e));
    TK_OK(ftc_device_event_record(e, s));
    TK_OK(ftc_device_stream_wait_event(s, e));
    TK_OK(ftc_device_event_synchronize(e, tk_ms(10000)));
    int done = 0;
    TK_OK(ftc_device_event_query(e, &done));
    assert_int_equal(done, 1);
    TK_OK(ftc_device_stream_synchronize(s, tk_ms(10000)));
    ftc_device_event_destroy(e);
    ftc_device_stream_destroy(s);

    /* Real work on the plugin's stream (CUDA's own handle): fill on the
     * device, copy back, and wait through the plugin's event. */
    const ftc__device *dev;
    TK_OK(ftc__device_get(FTC_DEVICE_CUDA, &dev));
    void *raw_s = NULL, *raw_e = NULL;
    TK_OK(dev->table.stream_create(0, &raw_s));
    TK_OK(dev->table.event_create(0, &raw_e));
    CUDA_OK(cudaMemsetAsync(dev_buf, 0x5a, size, (cudaStream_t)raw_s));
    CUDA_OK(cudaMemcpyAsync(pinned, dev_buf, size, cudaMemcpyDeviceToHost,
                            (cudaStream_t)raw_s));
    TK_OK(dev->table.event_record(raw_e, raw_s));
    TK_OK(dev->table.event_synchronize(raw_e, deadline_in(10000)));
    const unsigned char *p = pinned;
    for (size_t i = 0; i < size; i += 4093) {
        assert_int_equal(p[i], 0x5a);
    }
    TK_OK(dev->table.stream_synchronize(raw_s, deadline_in(10000)));
    ftc_device_ipc_handle h;
    TK_OK(dev->table.ipc_event_get(raw_e, &h));
    assert_int_equal(h.size, sizeof(cudaIpcEventHandle_t));
    TK_OK(dev->table.ipc_memory_get(dev_buf, &h));
    assert_int_equal(h.size, sizeof(cudaIpcMemHandle_t));
    dev->table.event_destroy(raw_e);
    dev->table.stream_destroy(raw_s);
    CUDA_OK(cudaFree(managed));
    CUDA_OK(cudaFreeHost(pinned));
    CUDA_OK(cudaFree(dev_buf));
}

static void runtime_reports_or_runs(void **state)
{
    (void)state;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaSuccess && n > 0) {
        printf("GPU: %d CUDA devices: running stream/event checks\n", n);
        gpu_checks(n);
        return;
    }
    /* No GPU here: the plugin must say what CUDA said. */
    const char *text = cudaGetErrorString(err);
    printf("no GPU (cudaGetDeviceCount: %d, %s): checked the loading path "
           "only\n",
           (int)err, text);
    TK_EXPECT(ftc_device_available(FTC_DEVICE_CUDA), FTC_ENOTSUP);
    assert_has(ftc_last_error(), text);
    assert_has(ftc_last_error(), "cudaGetDeviceCount");
    assert_has(ftc_last_error(), "libcudart.so");
    int count = -1;
    TK_EXPECT(ftc_device_count(FTC_DEVICE_CUDA, &count), FTC_ENOTSUP);
    assert_has(ftc_last_error(), text);
    ftc_device_stream *s = NULL;
    TK_EXPECT(ftc_device_stream_create(FTC_DEVICE_CUDA, 0, &s), FTC_ENOTSUP);
    assert_null(s);
}

/* mesh_2d(devices_per_node = 0) asks the plugin for the count. */
static int mesh_cuda(ftc_pg *pg, void *arg)
{
    (void)arg;
    ftc_pg *shard = NULL, *rep = NULL;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    int rc = ftc_pg_mesh_2d(pg, 0, FTC_DEVICE_CUDA, NULL, &shard, &rep);
    if (err != cudaSuccess || n == 0) {
        assert_int_equal(rc, FTC_ENOTSUP);
        assert_has(ftc_last_error(), "mesh_2d");
        assert_has(ftc_last_error(), cudaGetErrorString(err));
        assert_null(shard);
    } else if (n == 1) {
        assert_int_equal(rc, 0);
        assert_int_equal(ftc_pg_size(shard), 1);
        ftc_pg_destroy(shard);
        ftc_pg_destroy(rep);
    } else {
        /* One rank is not a whole node of n devices. */
        assert_int_equal(rc, FTC_EINVAL);
    }
    return 0;
}

static void mesh_2d_takes_the_plugin_count(void **state)
{
    (void)state;
    pgt_run_threads(1, NULL, mesh_cuda, NULL);
}

static void missing_runtime_is_enotsup(void **state)
{
    (void)state;
    setenv("FTC_CUDA_RUNTIME", "/nonexistent/libcudart.so.99", 1);
    TK_EXPECT(ftc_device_available(FTC_DEVICE_CUDA), FTC_ENOTSUP);
    assert_has(ftc_last_error(), "FTC_CUDA_RUNTIME=/nonexistent/libcudart");
    assert_has(ftc_last_error(), "cannot load the CUDA runtime");
    /* The failure is remembered: asking again gives the same reason. */
    TK_EXPECT(ftc_device_require(FTC_DEVICE_CUDA, FTC_DEVCAP_STREAMS),
              FTC_ENOTSUP);
    assert_has(ftc_last_error(), "/nonexistent/libcudart.so.99");
}

static void runtime_without_symbols_is_enotsup(void **state)
{
    (void)state;
    setenv("FTC_CUDA_RUNTIME", "libm.so.6", 1);
    TK_EXPECT(ftc_device_available(FTC_DEVICE_CUDA), FTC_ENOTSUP);
    /* The first symbol the plugin resolves. */
    assert_has(ftc_last_error(), "libm.so.6 lacks symbol cudaGetErrorString");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(runtime_reports_or_runs, reset, reset),
        cmocka_unit_test_setup_teardown(mesh_2d_takes_the_plugin_count, reset,
                                        reset),
        cmocka_unit_test_setup_teardown(missing_runtime_is_enotsup, reset,
                                        reset),
        cmocka_unit_test_setup_teardown(runtime_without_symbols_is_enotsup,
                                        reset, reset),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
