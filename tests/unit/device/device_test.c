/* The device layer: kinds, the cpu device, capability checks that fail
 * with FTC_ENOTSUP, the registry and plugin loading. */
#include <stdlib.h>
#include <string.h>

#include "device/device_int.h"
#include "testkit.h"

static void kinds_have_names(void **state)
{
    (void)state;
    int k = -1;
    TK_OK(ftc_device_kind_parse("cuda", &k));
    assert_int_equal(k, FTC_DEVICE_CUDA);
    TK_OK(ftc_device_kind_parse("cpu", &k));
    assert_int_equal(k, FTC_DEVICE_CPU);
    TK_EXPECT(ftc_device_kind_parse("tpu", &k), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "tpu"));
    assert_string_equal(ftc_device_kind_name(FTC_DEVICE_XPU), "xpu");
    assert_string_equal(ftc_device_kind_name(99), "?");
    assert_string_equal(ftc_device_cap_name(FTC_DEVCAP_STREAMS), "streams");
    assert_string_equal(ftc_device_cap_name(3), "?");
}

static void cpu_device_basics(void **state)
{
    (void)state;
    TK_OK(ftc_device_available(FTC_DEVICE_CPU));
    uint32_t caps = 0;
    TK_OK(ftc_device_caps(FTC_DEVICE_CPU, &caps));
    assert_true(caps & FTC_DEVCAP_HOST_ACCESS);
    assert_true(caps & FTC_DEVCAP_STREAMS);
    assert_false(caps & FTC_DEVCAP_IPC_MEMORY);
    int n = 0;
    unsetenv("FTC_CPU_DEVICE_COUNT");
    TK_OK(ftc_device_count(FTC_DEVICE_CPU, &n));
    assert_int_equal(n, 1);
    setenv("FTC_CPU_DEVICE_COUNT", "4", 1);
    TK_OK(ftc_device_count(FTC_DEVICE_CPU, &n));
    assert_int_equal(n, 4);
    setenv("FTC_CPU_DEVICE_COUNT", "4x", 1);
    TK_EXPECT(ftc_device_count(FTC_DEVICE_CPU, &n), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "FTC_CPU_DEVICE_COUNT"));
    unsetenv("FTC_CPU_DEVICE_COUNT");
    int mk = -1;
    float x = 1;
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_CPU, &x, &mk));
    assert_int_equal(mk, FTC_MEMORY_HOST);
    TK_EXPECT(ftc_device_memory_kind(FTC_DEVICE_CPU, NULL, &mk), FTC_EINVAL);
    TK_EXPECT(ftc_device_available(-1), FTC_EINVAL);
    TK_EXPECT(ftc_device_available(FTC_DEVICE_KIND_COUNT), FTC_EINVAL);
}

static void missing_capability_is_enotsup(void **state)
{
    (void)state;
    TK_OK(ftc_device_require(FTC_DEVICE_CPU,
                             FTC_DEVCAP_STREAMS | FTC_DEVCAP_EVENTS));
    TK_EXPECT(ftc_device_require(FTC_DEVICE_CPU,
                                 FTC_DEVCAP_STREAMS | FTC_DEVCAP_IPC_MEMORY),
              FTC_ENOTSUP);
    assert_string_equal(ftc_last_error(),
                        "device 'cpu' lacks capability 'ipc_memory'");
    TK_EXPECT(ftc_device_require(FTC_DEVICE_CPU, FTC_DEVCAP_IPC_EVENTS),
              FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "ipc_events"));
}

static void cpu_streams_and_events_are_inert(void **state)
{
    (void)state;
    ftc_device_stream *s = NULL;
    ftc_device_event *e = NULL;
    TK_OK(ftc_device_stream_create(FTC_DEVICE_CPU, 0, &s));
    TK_OK(ftc_device_event_create(FTC_DEVICE_CPU, 0, &e));
    TK_OK(ftc_device_event_record(e, s));
    int done = 0;
    TK_OK(ftc_device_event_query(e, &done));
    assert_int_equal(done, 1);
    TK_OK(ftc_device_event_synchronize(e, 10));
    TK_OK(ftc_device_stream_wait_event(s, e));
    TK_OK(ftc_device_stream_synchronize(s, 10));
    TK_EXPECT(ftc_device_event_query(e, NULL), FTC_EINVAL);
    ftc_device_event_destroy(e);
    ftc_device_stream_destroy(s);
    ftc_device_stream_destroy(NULL);
    ftc_device_event_destroy(NULL);

    ftc_device_stream *bad = (ftc_device_stream *)&done;
    TK_EXPECT(ftc_device_stream_create(FTC_DEVICE_CPU, 1, &s), FTC_EINVAL);
    assert_null(s);
    assert_non_null(strstr(ftc_last_error(), "index 1 out of range"));
    TK_EXPECT(ftc_device_stream_synchronize(NULL, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_device_stream_synchronize(bad, 0), FTC_EMISUSE);
    TK_EXPECT(ftc_device_event_record(NULL, NULL), FTC_EMISUSE);
}

static void plugin_kinds_fail_loudly_without_plugin(void **state)
{
    (void)state;
    setenv("FTC_DEVICE_CUDA_PLUGIN", "/nonexistent/libftc_device_cuda.so", 1);
    TK_EXPECT(ftc_device_available(FTC_DEVICE_CUDA), FTC_ENOTSUP);
    assert_non_null(strstr(ftc_last_error(), "'cuda' is not available"));
    assert_non_null(strstr(ftc_last_error(), "FTC_DEVICE_CUDA_PLUGIN"));
    int n = -1;
    TK_EXPECT(ftc_device_count(FTC_DEVICE_CUDA, &n), FTC_ENOTSUP);
    assert_int_equal(n, -1);
    ftc_device_stream *s = NULL;
    TK_EXPECT(ftc_device_stream_create(FTC_DEVICE_CUDA, 0, &s), FTC_ENOTSUP);
    /* The failure is remembered, not retried on every call. */
    TK_EXPECT(ftc_device_require(FTC_DEVICE_CUDA, 0), FTC_ENOTSUP);
    unsetenv("FTC_DEVICE_CUDA_PLUGIN");
}

/* Points the xpu kind at a plugin library and forgets what was loaded. */
static void use_plugin(const char *path)
{
    ftc__device_unregister(FTC_DEVICE_XPU);
    setenv("FTC_DEVICE_XPU_PLUGIN", path, 1);
}

static void forget_plugin(void)
{
    ftc__device_unregister(FTC_DEVICE_XPU);
    unsetenv("FTC_DEVICE_XPU_PLUGIN");
}

/* Loads path as the xpu plugin and checks it is the fake one: 3 devices
 * of device memory, and only the capability whose slots it set. */
static void load_fake_xpu(const char *path)
{
    use_plugin(path);
    TK_OK(ftc_device_available(FTC_DEVICE_XPU));
    int n = 0;
    TK_OK(ftc_device_count(FTC_DEVICE_XPU, &n));
    assert_int_equal(n, 3);
    int mk = -1;
    char x = 0;
    TK_OK(ftc_device_memory_kind(FTC_DEVICE_XPU, &x, &mk));
    assert_int_equal(mk, FTC_MEMORY_DEVICE);
    uint32_t caps = 0;
    TK_OK(ftc_device_caps(FTC_DEVICE_XPU, &caps));
    assert_int_equal(caps, FTC_DEVCAP_IPC_MEMORY);
}

static void plugin_loads_through_dlopen(void **state)
{
    (void)state;
    load_fake_xpu(FTC_TEST_PLUGIN_GOOD);
    TK_OK(ftc_device_require(FTC_DEVICE_XPU, FTC_DEVCAP_IPC_MEMORY));
    /* NULL slots: loud failure naming the capability, no NULL call. */
    TK_EXPECT(ftc_device_require(FTC_DEVICE_XPU, FTC_DEVCAP_IPC_EVENTS),
              FTC_ENOTSUP);
    assert_string_equal(ftc_last_error(),
                        "device 'xpu' lacks capability 'ipc_events'");
    TK_EXPECT(ftc_device_require(FTC_DEVICE_XPU, FTC_DEVCAP_HOST_ACCESS),
              FTC_ENOTSUP);
    assert_string_equal(ftc_last_error(),
                        "device 'xpu' lacks capability 'host_access'");
    ftc_device_stream *s = NULL;
    TK_EXPECT(ftc_device_stream_create(FTC_DEVICE_XPU, 0, &s), FTC_ENOTSUP);
    assert_string_equal(ftc_last_error(),
                        "device 'xpu' lacks capability 'streams'");
    ftc_device_event *e = NULL;
    TK_EXPECT(ftc_device_event_create(FTC_DEVICE_XPU, 0, &e), FTC_ENOTSUP);
    assert_string_equal(ftc_last_error(),
                        "device 'xpu' lacks capability 'events'");
    forget_plugin();
}

/* Plugins that are wrong on purpose (fake_plugin.c), and the words the
 * FTC_ENOTSUP message must hold: library, symbol, versions, capability. */
static const struct {
    const char *path;
    const char *words[3];
} refused[] = {
    {FTC_TEST_PLUGIN_MAJOR, {"ABI version 2.0", "needs ABI 1.x", NULL}},
    {FTC_TEST_PLUGIN_SMALL,
     {"ABI version 1.0 with struct_size 40", "struct_size >= ", NULL}},
    {FTC_TEST_PLUGIN_NO_ENTRY, {"does not export it", NULL, NULL}},
    {FTC_TEST_PLUGIN_PARTIAL,
     {"capability 'ipc_memory'", "not ipc_memory_close", NULL}},
};

static void plugins_that_break_the_abi_are_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        use_plugin(refused[i].path);
        TK_EXPECT(ftc_device_available(FTC_DEVICE_XPU), FTC_ENOTSUP);
        const char *msg = ftc_last_error();
        assert_non_null(strstr(msg, refused[i].path));
        assert_non_null(strstr(msg, "symbol ftc_device_plugin_entry"));
        for (int w = 0; w < 3 && refused[i].words[w] != NULL; w++) {
            if (strstr(msg, refused[i].words[w]) == NULL) {
                fail_msg("'%s' not in: %s", refused[i].words[w], msg);
            }
        }
        /* Remembered: later calls fail the same way, nothing is called. */
        int n = -1;
        TK_EXPECT(ftc_device_count(FTC_DEVICE_XPU, &n), FTC_ENOTSUP);
        assert_int_equal(n, -1);
        assert_non_null(strstr(ftc_last_error(), refused[i].path));
        forget_plugin();
    }
}

static void newer_plugin_is_used_through_the_known_prefix(void **state)
{
    (void)state;
    /* ABI 1.7 with fields appended: accepted, the 1.0 prefix is used. */
    load_fake_xpu(FTC_TEST_PLUGIN_NEWER);
    forget_plugin();
}

static int fake_count(int *out)
{
    *out = 2;
    return 0;
}

static int fake_memory_kind(const void *p, int *out)
{
    (void)p;
    *out = FTC_MEMORY_MANAGED;
    return 0;
}

static int fake_stream_create(int index, void **out)
{
    (void)index;
    *out = NULL;
    return 0;
}

static void registry_rejects_inconsistent_tables(void **state)
{
    (void)state;
    ftc_device_plugin partial = {
        .abi_version = FTC_DEVICE_PLUGIN_ABI_VERSION,
        .struct_size = sizeof(ftc_device_plugin),
        .kind = FTC_DEVICE_CUDA,
        .name = "cuda",
        .count = fake_count,
        .memory_kind = fake_memory_kind,
        .stream_create = fake_stream_create,
    };
    TK_EXPECT(ftc__device_register(&partial), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "capability 'streams'"));
    ftc_device_plugin cpu_again = ftc__device_cpu_plugin;
    TK_EXPECT(ftc__device_register(&cpu_again), FTC_EINVAL);
    ftc_device_plugin nameless = partial;
    nameless.stream_create = NULL;
    nameless.name = NULL;
    TK_EXPECT(ftc__device_register(&nameless), FTC_EINVAL);
    ftc_device_plugin honest = partial;
    honest.stream_create = NULL;
    honest.host_access = 1;
    TK_OK(ftc__device_register(&honest));
    int n = 0;
    TK_OK(ftc_device_count(FTC_DEVICE_CUDA, &n));
    assert_int_equal(n, 2);
    uint32_t caps = 0;
    TK_OK(ftc_device_caps(FTC_DEVICE_CUDA, &caps));
    assert_int_equal(caps, FTC_DEVCAP_HOST_ACCESS);
    ftc__device_unregister(FTC_DEVICE_CUDA);
    ftc__device_unregister(FTC_DEVICE_CPU); /* refused: cpu stays */
    TK_OK(ftc_device_available(FTC_DEVICE_CPU));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_have_names),
        cmocka_unit_test(cpu_device_basics),
        cmocka_unit_test(missing_capability_is_enotsup),
        cmocka_unit_test(cpu_streams_and_events_are_inert),
        cmocka_unit_test(plugin_kinds_fail_loudly_without_plugin),
        cmocka_unit_test(plugin_loads_through_dlopen),
        cmocka_unit_test(plugins_that_break_the_abi_are_refused),
        cmocka_unit_test(newer_plugin_is_used_through_the_known_prefix),
        cmocka_unit_test(registry_rejects_inconsistent_tables),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
