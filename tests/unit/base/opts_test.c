/* Options structs that evolve: a caller's struct is read up to its
 * struct_size over the defaults; the timeout rule's check. */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "base/clock.h"
#include "base/opts.h"
#include "testkit.h"

/* Version 1 of an options struct, and version 2 with one field more. */
typedef struct v1_opts {
    size_t struct_size;
    int64_t timeout_ms;
    int a;
} v1_opts;

typedef struct v2_opts {
    size_t struct_size;
    int64_t timeout_ms;
    int a;
    int64_t added; /* new in version 2 */
} v2_opts;

static void v2_init(v2_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->timeout_ms = 300000;
    o->a = 7;
    o->added = 42;
}

static int merge(v2_opts *out, const void *in)
{
    v2_init(out);
    return FTC__OPTS_MERGE(out, in, v2_opts, a);
}

static void an_older_caller_gets_the_new_defaults(void **state)
{
    (void)state;
    /* Built against version 1: its struct ends before `added`. */
    struct {
        v1_opts o;
        int64_t garbage; /* what lies after an older caller's struct */
    } old = {{sizeof(v1_opts), 0, 3}, -99};
    v2_opts out;
    TK_OK(merge(&out, &old.o));
    assert_int_equal(out.timeout_ms, 0); /* 0 means 0 */
    assert_int_equal(out.a, 3);
    assert_int_equal(out.added, 42); /* unset: its default */
    assert_int_equal(out.struct_size, sizeof(v2_opts));
    /* The same with struct_size at the first newer field's offset. */
    old.o.struct_size = offsetof(v2_opts, added);
    TK_OK(merge(&out, &old.o));
    assert_int_equal(out.added, 42);
}

static void a_current_or_newer_caller_is_read_in_full(void **state)
{
    (void)state;
    v2_opts in;
    v2_init(&in);
    in.added = 5;
    v2_opts out;
    TK_OK(merge(&out, &in));
    assert_int_equal(out.added, 5);
    struct {
        v2_opts o;
        int64_t later; /* a field this library does not know */
    } newer = {in, 1};
    newer.o.struct_size = sizeof(newer);
    TK_OK(merge(&out, &newer.o));
    assert_int_equal(out.added, 5);
    assert_int_equal(out.struct_size, sizeof(v2_opts));
    TK_OK(merge(&out, NULL)); /* NULL: all defaults */
    assert_int_equal(out.timeout_ms, 300000);
}

static void an_uninitialised_struct_is_einval(void **state)
{
    (void)state;
    v2_opts in;
    memset(&in, 0, sizeof(in));
    v2_opts out;
    TK_EXPECT(merge(&out, &in), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "call v2_opts_init() first"));
    in.struct_size = offsetof(v2_opts, a); /* smaller than version 1 */
    TK_EXPECT(merge(&out, &in), FTC_EINVAL);
}

static void unset_takes_the_default(void **state)
{
    (void)state;
    v2_opts d, o;
    v2_init(&d);
    o = d;
    o.timeout_ms = FTC_TIMEOUT_DEFAULT;
    o.added = 0;
    FTC__OPT_DEFAULT(&o, &d, timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, added, FTC_TIMEOUT_DEFAULT);
    assert_int_equal(o.timeout_ms, 300000);
    assert_int_equal(o.added, 0);
}

static void the_timeout_rule(void **state)
{
    (void)state;
    const int64_t good[] = {0, 1, INT64_MAX, FTC_TIMEOUT_INFINITE,
                            FTC_TIMEOUT_DEFAULT};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        TK_OK(ftc__timeout_check(good[i], "f"));
    }
    const int64_t bad[] = {-3, -7, INT64_MIN};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        TK_EXPECT(ftc__timeout_check(bad[i], "ftc_thing"), FTC_EINVAL);
        assert_non_null(strstr(ftc_last_error(), "ftc_thing: timeout_ms"));
    }
    assert_int_equal(ftc__timeout_resolve(FTC_TIMEOUT_DEFAULT, 5), 5);
    assert_int_equal(ftc__timeout_resolve(0, 5), 0);
    assert_int_equal(ftc__timeout_resolve(-1, 5), -1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_older_caller_gets_the_new_defaults),
        cmocka_unit_test(a_current_or_newer_caller_is_read_in_full),
        cmocka_unit_test(an_uninitialised_struct_is_einval),
        cmocka_unit_test(unset_takes_the_default),
        cmocka_unit_test(the_timeout_rule),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
