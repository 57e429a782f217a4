/* Reduction kernels: one in-place and one out-of-place loop per dtype and
 * op, with restrict pointers so the compiler vectorises them, cloned per
 * x86-64 level (v4: AVX-512, v3: AVX2) and picked at load time. */
#include "pg/reduce.h"

#include <stdint.h>

#include "base/base_int.h"
#include "pg/half.h"

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) &&                    \
    !defined(FTC_NO_CLONES)
#define KERNEL                                                                 \
    __attribute__((                                                            \
        target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KERNEL
#endif

/* ---- element operations on a computation type */

#define QNAN32 0x7fc00000u
#define QNAN64 0x7ff8000000000000ull

/* Floats: IEEE sum and product; symmetric max/min: NaN if either is NaN,
 * -0 < +0 (the equal case picks by bits: AND keeps +0 for max, OR keeps
 * -0 for min), so a op b and b op a are the same bits. */
#define FLOAT_OPS(TAG, T, U, BITS, FROM, QNAN)                                 \
    static inline T sum_##TAG(T x, T y)                                        \
    {                                                                          \
        return x + y;                                                          \
    }                                                                          \
    static inline T prod_##TAG(T x, T y)                                       \
    {                                                                          \
        return x * y;                                                          \
    }                                                                          \
    static inline T max_##TAG(T x, T y)                                        \
    {                                                                          \
        U xb = BITS(x), yb = BITS(y);                                          \
        U r = x > y ? xb : (y > x ? yb : (xb & yb));                           \
        return FROM((x != x || y != y) ? QNAN : r);                            \
    }                                                                          \
    static inline T min_##TAG(T x, T y)                                        \
    {                                                                          \
        U xb = BITS(x), yb = BITS(y);                                          \
        U r = x < y ? xb : (y < x ? yb : (xb | yb));                           \
        return FROM((x != x || y != y) ? QNAN : r);                            \
    }
FLOAT_OPS(f32, float, uint32_t, ftc__f32_bits, ftc__f32_from_bits, QNAN32)
FLOAT_OPS(f64, double, uint64_t, ftc__f64_bits, ftc__f64_from_bits, QNAN64)

/* Integers: sum and product wrap (computed unsigned, no UB). */
#define INT_OPS(T, U)                                                          \
    static inline T sum_##T(T x, T y)                                          \
    {                                                                          \
        return (T)((U)x + (U)y);                                               \
    }                                                                          \
    static inline T prod_##T(T x, T y)                                         \
    {                                                                          \
        return (T)((U)x * (U)y);                                               \
    }                                                                          \
    static inline T max_##T(T x, T y)                                          \
    {                                                                          \
        return x > y ? x : y;                                                  \
    }                                                                          \
    static inline T min_##T(T x, T y)                                          \
    {                                                                          \
        return x < y ? x : y;                                                  \
    }
INT_OPS(int8_t, uint8_t)
INT_OPS(uint8_t, uint32_t)
INT_OPS(int32_t, uint32_t)
INT_OPS(int64_t, uint64_t)

static inline float id_f32(float x)
{
    return x;
}
static inline double id_f64(double x)
{
    return x;
}
#define ID_INT(T)                                                              \
    static inline T id_##T(T x)                                                \
    {                                                                          \
        return x;                                                              \
    }
ID_INT(int8_t)
ID_INT(uint8_t)
ID_INT(int32_t)
ID_INT(int64_t)

/* ---- kernels: storage type S, computed as C through LOAD/STORE */

#define KERNELS(NAME, S, LOAD, STORE, OPFN)                                    \
    KERNEL static void NAME##_ip(S *restrict d, const S *restrict b, size_t n) \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            d[i] = STORE(OPFN(LOAD(d[i]), LOAD(b[i])));                        \
        }                                                                      \
    }                                                                          \
    KERNEL static void NAME##_op(S *restrict d, const S *restrict a,           \
                                 const S *restrict b, size_t n)                \
    {                                                                          \
        for (size_t i = 0; i < n; i++) {                                       \
            d[i] = STORE(OPFN(LOAD(a[i]), LOAD(b[i])));                        \
        }                                                                      \
    }

#define FOUR_OPS(TAG, S, LOAD, STORE, C)                                       \
    KERNELS(sum_##TAG, S, LOAD, STORE, sum_##C)                                \
    KERNELS(prod_##TAG, S, LOAD, STORE, prod_##C)                              \
    KERNELS(max_##TAG, S, LOAD, STORE, max_##C)                                \
    KERNELS(min_##TAG, S, LOAD, STORE, min_##C)

FOUR_OPS(f32, float, id_f32, id_f32, f32)
FOUR_OPS(f64, double, id_f64, id_f64, f64)
FOUR_OPS(f16, uint16_t, ftc__f16_to_f32, ftc__f32_to_f16, f32)
FOUR_OPS(bf16, uint16_t, ftc__bf16_to_f32, ftc__f32_to_bf16, f32)
FOUR_OPS(i8, int8_t, id_int8_t, id_int8_t, int8_t)
FOUR_OPS(u8, uint8_t, id_uint8_t, id_uint8_t, uint8_t)
FOUR_OPS(i32, int32_t, id_int32_t, id_int32_t, int32_t)
FOUR_OPS(i64, int64_t, id_int64_t, id_int64_t, int64_t)

typedef void (*ip_fn)(void *restrict d, const void *restrict b, size_t n);
typedef void (*op_fn)(void *restrict d, const void *restrict a,
                      const void *restrict b, size_t n);

/* Indexed [dtype][op]; AVG uses the SUM kernels. */
#define ROW(TAG)                                                               \
    {                                                                          \
        (ip_fn) sum_##TAG##_ip, (ip_fn)sum_##TAG##_ip, (ip_fn)min_##TAG##_ip,  \
            (ip_fn)max_##TAG##_ip, (ip_fn)prod_##TAG##_ip                      \
    }
#define ROW_OP(TAG)                                                            \
    {                                                                          \
        (op_fn) sum_##TAG##_op, (op_fn)sum_##TAG##_op, (op_fn)min_##TAG##_op,  \
            (op_fn)max_##TAG##_op, (op_fn)prod_##TAG##_op                      \
    }

static const ip_fn in_place[FTC_DTYPE_COUNT][FTC_OP_COUNT] = {
    [FTC_DTYPE_F32] = ROW(f32), [FTC_DTYPE_F64] = ROW(f64),
    [FTC_DTYPE_F16] = ROW(f16), [FTC_DTYPE_BF16] = ROW(bf16),
    [FTC_DTYPE_I8] = ROW(i8),   [FTC_DTYPE_U8] = ROW(u8),
    [FTC_DTYPE_I32] = ROW(i32), [FTC_DTYPE_I64] = ROW(i64),
};

static const op_fn out_of_place[FTC_DTYPE_COUNT][FTC_OP_COUNT] = {
    [FTC_DTYPE_F32] = ROW_OP(f32), [FTC_DTYPE_F64] = ROW_OP(f64),
    [FTC_DTYPE_F16] = ROW_OP(f16), [FTC_DTYPE_BF16] = ROW_OP(bf16),
    [FTC_DTYPE_I8] = ROW_OP(i8),   [FTC_DTYPE_U8] = ROW_OP(u8),
    [FTC_DTYPE_I32] = ROW_OP(i32), [FTC_DTYPE_I64] = ROW_OP(i64),
};

void ftc__reduce(void *dst, const void *a, const void *b, size_t count,
                 int dtype, int op)
{
    if (count == 0) {
        return;
    }
    if (dst == a) {
        in_place[dtype][op](dst, b, count);
    } else if (dst == b) {
        /* Every op is exactly commutative (see max_f32), so b op a is
         * bit-identical to a op b. */
        in_place[dtype][op](dst, a, count);
    } else {
        out_of_place[dtype][op](dst, a, b, count);
    }
}

/* ---- AVG's final division */

KERNEL static void div_f32(float *restrict d, size_t n, float k)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = d[i] / k;
    }
}

KERNEL static void div_f64(double *restrict d, size_t n, double k)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = d[i] / k;
    }
}

KERNEL static void div_f16(uint16_t *restrict d, size_t n, float k)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = ftc__f32_to_f16(ftc__f16_to_f32(d[i]) / k);
    }
}

KERNEL static void div_bf16(uint16_t *restrict d, size_t n, float k)
{
    for (size_t i = 0; i < n; i++) {
        d[i] = ftc__f32_to_bf16(ftc__bf16_to_f32(d[i]) / k);
    }
}

void ftc__reduce_avg_finish(void *dst, size_t count, int dtype, int n)
{
    switch (dtype) {
    case FTC_DTYPE_F32:
        div_f32(dst, count, (float)n);
        break;
    case FTC_DTYPE_F64:
        div_f64(dst, count, (double)n);
        break;
    case FTC_DTYPE_F16:
        div_f16(dst, count, (float)n);
        break;
    case FTC_DTYPE_BF16:
        div_bf16(dst, count, (float)n);
        break;
    default:
        break; /* ftc__reduce_check rejected AVG on integers */
    }
}
