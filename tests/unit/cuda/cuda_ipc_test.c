/* IPC memory and events across two processes through the cuda plugin:
 * the parent fills a device buffer on its stream, records an interprocess
 * event after the fill and passes both handles to a child; the child opens
 * them, makes its own stream wait on the event, copies the buffer back to
 * the host and checks every byte. Needs a GPU; without one it says "no
 * GPU" and passes (device_cuda_test covers the loading paths). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/device_int.h"
#include "testkit.h"

#define SIZE (8u << 20)
#define BYTE 0xc3

static void to_hex(const ftc_device_ipc_handle *h, char *out)
{
    for (uint32_t i = 0; i < h->size; i++) {
        snprintf(out + 2 * i, 3, "%02x", h->bytes[i]);
    }
}

static int from_hex(const char *in, ftc_device_ipc_handle *h)
{
    size_t len = strlen(in);
    if (len % 2 != 0 || len / 2 > FTC_DEVICE_IPC_HANDLE_MAX) {
        return -1;
    }
    memset(h, 0, sizeof(*h));
    h->size = (uint32_t)(len / 2);
    for (size_t i = 0; i < h->size; i++) {
        unsigned v;
        if (sscanf(in + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        h->bytes[i] = (uint8_t)v;
    }
    return 0;
}

static int64_t deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + tk_ms(ms) * 1000000;
}

#define CHILD_CHECK(call)                                                      \
    do {                                                                       \
        int rc_ = (int)(call);                                                 \
        if (rc_ != 0) {                                                        \
            fprintf(stderr, "child: %s: %d: %s\n", #call, rc_,                 \
                    ftc_last_error());                                         \
            return 1;                                                          \
        }                                                                      \
    } while (0)

/* argv: role, memory handle (hex), event handle (hex). */
static int child(int argc, char **argv)
{
    ftc_device_ipc_handle hm, he;
    if (argc != 3 || from_hex(argv[1], &hm) != 0 ||
        from_hex(argv[2], &he) != 0) {
        fprintf(stderr, "child: bad arguments\n");
        return 2;
    }
    const ftc__device *dev;
    CHILD_CHECK(ftc__device_get(FTC_DEVICE_CUDA, &dev));
    void *buf = NULL, *ev = NULL, *s = NULL;
    CHILD_CHECK(dev->table.ipc_memory_open(0, &hm, &buf));
    CHILD_CHECK(dev->table.ipc_event_open(0, &he, &ev));
    CHILD_CHECK(dev->table.stream_create(0, &s));
    CHILD_CHECK(dev->table.stream_wait_event(s, ev));
    unsigned char *host = malloc(SIZE);
    if (host == NULL) {
        return 3;
    }
    CHILD_CHECK(cudaMemcpyAsync(host, buf, SIZE, cudaMemcpyDeviceToHost,
                                (cudaStream_t)s));
    CHILD_CHECK(dev->table.stream_synchronize(s, deadline_in(20000)));
    for (size_t i = 0; i < SIZE; i++) {
        if (host[i] != BYTE) {
            fprintf(stderr, "child: byte %zu is 0x%02x, not 0x%02x\n", i,
                    host[i], BYTE);
            return 4;
        }
    }
    free(host);
    dev->table.stream_destroy(s);
    dev->table.ipc_event_close(ev);
    CHILD_CHECK(dev->table.ipc_memory_close(buf));
    printf("child: %u bytes read through IPC after the event\n", SIZE);
    return 0;
}

static void buffer_and_event_cross_processes(void **state)
{
    (void)state;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        printf("no GPU (cudaGetDeviceCount: %d, %s): the IPC check needs "
               "one; not run\n",
               (int)err, cudaGetErrorString(err));
        return;
    }
    const ftc__device *dev;
    TK_OK(ftc__device_get(FTC_DEVICE_CUDA, &dev));
    void *buf = NULL, *s = NULL, *ev = NULL;
    assert_int_equal(cudaMalloc(&buf, SIZE), cudaSuccess);
    TK_OK(dev->table.stream_create(0, &s));
    TK_OK(dev->table.event_create(0, &ev));
    assert_int_equal(cudaMemsetAsync(buf, BYTE, SIZE, (cudaStream_t)s),
                     cudaSuccess);
    TK_OK(dev->table.event_record(ev, s));
    ftc_device_ipc_handle hm, he;
    TK_OK(dev->table.ipc_memory_get(buf, &hm));
    TK_OK(dev->table.ipc_event_get(ev, &he));
    char mem_hex[2 * FTC_DEVICE_IPC_HANDLE_MAX + 1];
    char ev_hex[2 * FTC_DEVICE_IPC_HANDLE_MAX + 1];
    to_hex(&hm, mem_hex);
    to_hex(&he, ev_hex);
    char *args[] = {mem_hex, ev_hex, NULL};
    tk_child c;
    tk_spawn(&c, "child", args, NULL);
    assert_int_equal(tk_reap(&c, 1, 60000), 0);
    assert_int_equal(tk_exit_code(&c), 0);
    TK_OK(dev->table.stream_synchronize(s, deadline_in(10000)));
    dev->table.event_destroy(ev);
    dev->table.stream_destroy(s);
    assert_int_equal(cudaFree(buf), cudaSuccess);
}

int main(int argc, char **argv)
{
    const tk_role roles[] = {{"child", child}};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buffer_and_event_cross_processes),
    };
    return tk_main(argc, argv, roles, 1, tests);
}
