/* Reduction kernels against an independent scalar reference: every dtype,
 * every op, every length up to 67 plus long and misaligned arrays, the
 * three aliasing forms, and NaN/Inf/-0/overflow behaviour; exhaustive
 * f16 conversions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pg/half.h"
#include "pg/reduce.h"
#include "testkit.h"

/* ---------------------------------------------------- reference formats */

static uint32_t bits32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float from32(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* binary16 -> f32 by the textbook: scale the significand. */
static float ref_f16_to_f32(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) {
        return from32((uint32_t)sign << 31 | 0x7f800000u |
                      (uint32_t)mant << 13);
    }
    double v = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
    return (float)(sign ? -v : v);
}

/* f32 -> binary16 with round-to-nearest-even done in double arithmetic:
 * the f16 grid spacing is a power of two, and rint() rounds ties to
 * even. */
static uint16_t ref_f32_to_f16(float x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) {
        return sign | 0x7e00;
    }
    double a = fabs((double)x);
    if (a >= 65520.0) { /* halfway between 65504 and 2^16 rounds up */
        return sign | 0x7c00;
    }
    int e;
    frexp(a, &e);                        /* a = m * 2^e, m in [0.5, 1) */
    int q = e - 11 < -24 ? -24 : e - 11; /* grid exponent */
    double units = rint(ldexp(a, -q));
    double v = ldexp(units, q);
    if (v == 0) {
        return sign;
    }
    frexp(v, &e);
    if (e - 1 < -14) { /* subnormal */
        return sign | (uint16_t)ldexp(v, 24);
    }
    int exp = e - 1 + 15;
    uint16_t mant = (uint16_t)(ldexp(v, -(e - 1) + 10) - 1024);
    return sign | (uint16_t)(exp << 10) | mant;
}

static float ref_bf16_to_f32(uint16_t h)
{
    return from32((uint32_t)h << 16);
}

static uint16_t ref_f32_to_bf16(float x)
{
    uint32_t u = bits32(x);
    if (isnan(x)) {
        return (uint16_t)((u >> 16) | 0x40);
    }
    uint32_t hi = u >> 16, lo = u & 0xffff;
    if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) {
        hi++;
    }
    return (uint16_t)hi;
}

static void f16_conversions_match_reference(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float want = ref_f16_to_f32((uint16_t)h);
        float got = ftc__f16_to_f32((uint16_t)h);
        if (bits32(got) != bits32(want)) {
            fail_msg("f16 %04x -> f32: got %08x want %08x", h, bits32(got),
                     bits32(want));
        }
        /* Round trip, and the ties between neighbours in both
         * directions. */
        if ((h & 0x7c00) != 0x7c00) {
            assert_int_equal(ftc__f32_to_f16(got), h);
        }
        for (int d = -2; d <= 2; d++) {
            float x = from32(bits32(want) + (uint32_t)d);
            if (isinf(want) && d > 0) {
                continue;
            }
            if (ftc__f32_to_f16(x) != ref_f32_to_f16(x)) {
                fail_msg("f32 %08x -> f16: got %04x want %04x", bits32(x),
                         ftc__f32_to_f16(x), ref_f32_to_f16(x));
            }
        }
    }
    /* Exact midpoints between neighbouring halves: ties to even. */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double lo = ref_f16_to_f32((uint16_t)h);
        double hi = ref_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2);
        assert_int_equal(ftc__f32_to_f16(mid), ref_f32_to_f16(mid));
        assert_int_equal(ftc__f32_to_f16(mid), (h & 1) ? h + 1 : h);
    }
    srand(7);
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)rand() << 16 ^ (uint32_t)rand();
        float x = from32(u);
        if (ftc__f32_to_f16(x) != ref_f32_to_f16(x)) {
            fail_msg("f32 %08x -> f16: got %04x want %04x", u,
                     ftc__f32_to_f16(x), ref_f32_to_f16(x));
        }
    }
}

static void bf16_conversions_match_reference(void **state)
{
    (void)state;
    static const uint32_t lows[] = {0,      1,      0x7fff, 0x8000,
                                    0x8001, 0xc000, 0xffff};
    for (uint32_t hi = 0; hi < 65536; hi++) {
        assert_int_equal(bits32(ftc__bf16_to_f32((uint16_t)hi)), hi << 16);
        for (size_t k = 0; k < sizeof(lows) / sizeof(lows[0]); k++) {
            float x = from32(hi << 16 | lows[k]);
            if (ftc__f32_to_bf16(x) != ref_f32_to_bf16(x)) {
                fail_msg("f32 %08x -> bf16: got %04x want %04x",
                         hi << 16 | lows[k], ftc__f32_to_bf16(x),
                         ref_f32_to_bf16(x));
            }
        }
    }
    /* Rounding past the largest finite value gives Inf. */
    assert_int_equal(ftc__f32_to_bf16(from32(0x7f7fffff)), 0x7f80);
}

/* ------------------------------------------------------- reference ops */

/* The documented float semantics: NaN in -> NaN out (canonical for
 * min/max), -0 < +0, otherwise IEEE. */
static double ref_float_op(double x, double y, int op)
{
    switch (op) {
    case FTC_OP_SUM:
    case FTC_OP_AVG:
        return x + y;
    case FTC_OP_PROD:
        return x * y;
    default:
        break;
    }
    if (isnan(x) || isnan(y)) {
        return NAN;
    }
    if (x == y && x == 0) {
        int neg = op == FTC_OP_MIN ? (signbit(x) || signbit(y))
                                   : (signbit(x) && signbit(y));
        return neg ? -0.0 : 0.0;
    }
    if (op == FTC_OP_MAX) {
        return x > y ? x : y;
    }
    return x < y ? x : y;
}

static int64_t ref_int_op(int64_t x, int64_t y, int op)
{
    switch (op) {
    case FTC_OP_SUM:
        return (int64_t)((uint64_t)x + (uint64_t)y);
    case FTC_OP_PROD:
        return (int64_t)((uint64_t)x * (uint64_t)y);
    case FTC_OP_MIN:
        return x < y ? x : y;
    default:
        return x > y ? x : y;
    }
}

/* Element i of buffer p as double / int64 and back, per dtype. */
static double load_f(const void *p, size_t i, int dt)
{
    switch (dt) {
    case FTC_DTYPE_F32:
        return ((const float *)p)[i];
    case FTC_DTYPE_F64:
        return ((const double *)p)[i];
    case FTC_DTYPE_F16:
        return ref_f16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ref_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

static void store_f(void *p, size_t i, int dt, double v)
{
    switch (dt) {
    case FTC_DTYPE_F32:
        ((float *)p)[i] = (float)v;
        break;
    case FTC_DTYPE_F64:
        ((double *)p)[i] = v;
        break;
    case FTC_DTYPE_F16:
        ((uint16_t *)p)[i] = ref_f32_to_f16((float)v);
        break;
    default:
        ((uint16_t *)p)[i] = ref_f32_to_bf16((float)v);
        break;
    }
}

static int64_t load_i(const void *p, size_t i, int dt)
{
    switch (dt) {
    case FTC_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case FTC_DTYPE_U8:
        return ((const uint8_t *)p)[i];
    case FTC_DTYPE_I32:
        return ((const int32_t *)p)[i];
    default:
        return ((const int64_t *)p)[i];
    }
}

static void store_i(void *p, size_t i, int dt, int64_t v)
{
    switch (dt) {
    case FTC_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)(uint8_t)v;
        break;
    case FTC_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case FTC_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)(uint32_t)v;
        break;
    default:
        ((int64_t *)p)[i] = v;
        break;
    }
}

/* Fills n elements with random values; floats get specials mixed in. */
static void fill(void *p, size_t n, int dt)
{
    static const double specials[] = {0.0,     -0.0,   INFINITY, -INFINITY,
                                      NAN,     1e-40,  -3e-8,    65504.0,
                                      70000.0, 3.4e38, 1.0,      -1.0};
    for (size_t i = 0; i < n; i++) {
        if (ftc__dtype_is_float(dt)) {
            int r = rand() % 16;
            double v = r < 12 ? specials[r]
                              : ((double)rand() / RAND_MAX - 0.5) *
                                    pow(2, rand() % 40 - 20);
            store_f(p, i, dt, v);
        } else {
            int64_t v = (int64_t)((uint64_t)rand() << 33 ^
                                  (uint64_t)rand() << 11 ^ (uint64_t)rand());
            store_i(p, i, dt, rand() % 4 == 0 ? v % 5 : v);
        }
    }
}

/* Compares element i of got with want; NaN must stay NaN, and min/max NaN
 * is the canonical quiet NaN bit for bit. */
static void check_elem(const void *got, const void *want, size_t i, int dt,
                       int op, const char *form)
{
    size_t sz = ftc_dtype_size(dt);
    const uint8_t *g = (const uint8_t *)got + i * sz;
    const uint8_t *w = (const uint8_t *)want + i * sz;
    if (ftc__dtype_is_float(dt) && isnan(load_f(want, i, dt)) &&
        (op == FTC_OP_SUM || op == FTC_OP_PROD || op == FTC_OP_AVG)) {
        if (!isnan(load_f(got, i, dt))) {
            fail_msg("%s %s %s [%zu]: want NaN, got %g", ftc_dtype_name(dt),
                     ftc_op_name(op), form, i, load_f(got, i, dt));
        }
        return;
    }
    if (memcmp(g, w, sz) != 0) {
        fail_msg("%s %s %s [%zu]: got %g want %g", ftc_dtype_name(dt),
                 ftc_op_name(op), form, i,
                 ftc__dtype_is_float(dt) ? load_f(got, i, dt)
                                         : (double)load_i(got, i, dt),
                 ftc__dtype_is_float(dt) ? load_f(want, i, dt)
                                         : (double)load_i(want, i, dt));
    }
}

static void reference(void *want, const void *a, const void *b, size_t n,
                      int dt, int op)
{
    for (size_t i = 0; i < n; i++) {
        if (ftc__dtype_is_float(dt)) {
            double r = ref_float_op(load_f(a, i, dt), load_f(b, i, dt), op);
            if (dt == FTC_DTYPE_F32 || dt == FTC_DTYPE_F16 ||
                dt == FTC_DTYPE_BF16) {
                r = (float)ref_float_op((float)load_f(a, i, dt),
                                        (float)load_f(b, i, dt), op);
            }
            if (isnan(r) && (op == FTC_OP_MIN || op == FTC_OP_MAX)) {
                /* canonical quiet NaN of each format */
                static const uint8_t q32[4] = {0, 0, 0xc0, 0x7f};
                static const uint8_t q64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
                static const uint8_t q16[2] = {0, 0x7e};
                static const uint8_t qbf[2] = {0xc0, 0x7f};
                const uint8_t *q = dt == FTC_DTYPE_F32   ? q32
                                   : dt == FTC_DTYPE_F64 ? q64
                                   : dt == FTC_DTYPE_F16 ? q16
                                                         : qbf;
                memcpy((uint8_t *)want + i * ftc_dtype_size(dt), q,
                       ftc_dtype_size(dt));
                continue;
            }
            store_f(want, i, dt, r);
        } else {
            store_i(want, i, dt,
                    ref_int_op(load_i(a, i, dt), load_i(b, i, dt), op));
        }
    }
}

static void run_case(int dt, int op, size_t n, size_t misalign)
{
    size_t sz = ftc_dtype_size(dt);
    size_t bytes = (n + misalign) * sz;
    uint8_t *a = malloc(bytes + 1), *b = malloc(bytes + 1);
    uint8_t *d = malloc(bytes + 1), *want = malloc(bytes + 1);
    void *pa = a + misalign * sz, *pb = b + misalign * sz;
    void *pd = d + misalign * sz;
    fill(pa, n, dt);
    fill(pb, n, dt);
    reference(want, pa, pb, n, dt, op);

    ftc__reduce(pd, pa, pb, n, dt, op); /* out of place */
    for (size_t i = 0; i < n; i++) {
        check_elem(pd, want, i, dt, op, "dst=a op b");
    }
    memcpy(pd, pa, n * sz); /* dst is a */
    ftc__reduce(pd, pd, pb, n, dt, op);
    for (size_t i = 0; i < n; i++) {
        check_elem(pd, want, i, dt, op, "a op= b");
    }
    memcpy(pd, pb, n * sz); /* dst is b */
    ftc__reduce(pd, pa, pd, n, dt, op);
    for (size_t i = 0; i < n; i++) {
        check_elem(pd, want, i, dt, op, "b = a op b");
    }
    free(a);
    free(b);
    free(d);
    free(want);
}

static void every_dtype_op_and_length(void **state)
{
    (void)state;
    srand(11);
    for (int dt = 0; dt < FTC_DTYPE_COUNT; dt++) {
        for (int op = 0; op < FTC_OP_COUNT; op++) {
            if (ftc__reduce_check(dt, op) != 0) {
                continue;
            }
            for (size_t n = 0; n <= 67; n++) {
                run_case(dt, op, n, n % 3);
            }
            run_case(dt, op, 1000, 0);
            run_case(dt, op, 4099, 1);
            run_case(dt, op, 65537, 0);
        }
    }
}

static void integers_wrap_and_floats_follow_ieee(void **state)
{
    (void)state;
    int8_t a8 = 127, b8 = 1;
    ftc__reduce(&a8, &a8, &b8, 1, FTC_DTYPE_I8, FTC_OP_SUM);
    assert_int_equal(a8, -128);
    int64_t a64 = INT64_MAX, b64 = 2;
    ftc__reduce(&a64, &a64, &b64, 1, FTC_DTYPE_I64, FTC_OP_PROD);
    assert_int_equal(a64, -2);
    uint8_t u = 200, v = 100;
    ftc__reduce(&u, &u, &v, 1, FTC_DTYPE_U8, FTC_OP_SUM);
    assert_int_equal(u, 44);
    float x[4] = {INFINITY, INFINITY, -0.0f, 0.0f};
    float y[4] = {-INFINITY, 1.0f, 0.0f, -0.0f};
    float s[4];
    ftc__reduce(s, x, y, 4, FTC_DTYPE_F32, FTC_OP_SUM);
    assert_true(isnan(s[0]));
    assert_true(isinf(s[1]) && s[1] > 0);
    assert_false(signbit(s[2]));
    ftc__reduce(s, x, y, 4, FTC_DTYPE_F32, FTC_OP_MAX);
    assert_false(signbit(s[2]));
    assert_false(signbit(s[3]));
    ftc__reduce(s, x, y, 4, FTC_DTYPE_F32, FTC_OP_MIN);
    assert_true(signbit(s[2]) && s[2] == 0);
    assert_true(signbit(s[3]) && s[3] == 0);
    /* f16 overflow to Inf, in f32 then rounded once. */
    uint16_t h1 = ftc__f32_to_f16(65504.0f), h2 = ftc__f32_to_f16(8.0f);
    ftc__reduce(&h1, &h1, &h2, 1, FTC_DTYPE_F16, FTC_OP_SUM);
    assert_int_equal(h1, 0x7bff); /* 65512 rounds back to 65504 */
    h2 = ftc__f32_to_f16(16.0f);  /* 65520: the tie rounds to even, Inf */
    ftc__reduce(&h1, &h1, &h2, 1, FTC_DTYPE_F16, FTC_OP_SUM);
    assert_int_equal(h1, 0x7c00);
}

static void avg_finishes_with_one_division(void **state)
{
    (void)state;
    float f[3] = {3.0f, 1.0f, -7.0f};
    ftc__reduce_avg_finish(f, 3, FTC_DTYPE_F32, 3);
    assert_true(f[0] == 1.0f && f[1] == 1.0f / 3.0f && f[2] == -7.0f / 3.0f);
    double g[2] = {1.0, 10.0};
    ftc__reduce_avg_finish(g, 2, FTC_DTYPE_F64, 4);
    assert_true(g[0] == 0.25 && g[1] == 2.5);
    for (uint32_t h = 0; h < 65536; h += 7) {
        uint16_t x = (uint16_t)h, y = (uint16_t)h;
        ftc__reduce_avg_finish(&x, 1, FTC_DTYPE_F16, 3);
        uint16_t want = ref_f32_to_f16(ref_f16_to_f32((uint16_t)h) / 3.0f);
        if (!(isnan(ref_f16_to_f32(want)) && isnan(ref_f16_to_f32(x)))) {
            assert_int_equal(x, want);
        }
        ftc__reduce_avg_finish(&y, 1, FTC_DTYPE_BF16, 5);
        want = ref_f32_to_bf16(ref_bf16_to_f32((uint16_t)h) / 5.0f);
        assert_int_equal(y, want);
    }
}

static void checks_reject_what_they_should(void **state)
{
    (void)state;
    for (int dt = 0; dt < FTC_DTYPE_COUNT; dt++) {
        TK_OK(ftc__reduce_check(dt, FTC_OP_SUM));
        TK_OK(ftc__reduce_check(dt, FTC_OP_MAX));
        if (ftc__dtype_is_float(dt)) {
            TK_OK(ftc__reduce_check(dt, FTC_OP_AVG));
        } else {
            TK_EXPECT(ftc__reduce_check(dt, FTC_OP_AVG), FTC_EINVAL);
            assert_non_null(strstr(ftc_last_error(), "avg"));
            assert_non_null(strstr(ftc_last_error(), ftc_dtype_name(dt)));
        }
    }
    TK_EXPECT(ftc__reduce_check(FTC_DTYPE_COUNT, FTC_OP_SUM), FTC_EINVAL);
    TK_EXPECT(ftc__reduce_check(FTC_DTYPE_F32, FTC_OP_COUNT), FTC_EINVAL);
    TK_EXPECT(ftc__reduce_check(-1, FTC_OP_SUM), FTC_EINVAL);
    assert_int_equal(ftc_dtype_size(FTC_DTYPE_BF16), 2);
    assert_int_equal(ftc_dtype_size(FTC_DTYPE_I64), 8);
    assert_int_equal(ftc_dtype_size(99), 0);
    assert_string_equal(ftc_dtype_name(FTC_DTYPE_U8), "u8");
    assert_string_equal(ftc_op_name(FTC_OP_PROD), "prod");
    assert_string_equal(ftc_op_name(-1), "?");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_conversions_match_reference),
        cmocka_unit_test(bf16_conversions_match_reference),
        cmocka_unit_test(every_dtype_op_and_length),
        cmocka_unit_test(integers_wrap_and_floats_follow_ieee),
        cmocka_unit_test(avg_finishes_with_one_division),
        cmocka_unit_test(checks_reject_what_they_should),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
