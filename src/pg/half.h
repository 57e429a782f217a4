/* Conversions between f32 and the 16-bit float formats (IEEE binary16 and
 * bfloat16), round-to-nearest-even, written branch-free so the compiler
 * vectorises them (no _Float16: clang 14 lacks it on x86). */
#ifndef FTC_PG_HALF_H
#define FTC_PG_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ftc__f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

static inline float ftc__f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

static inline uint64_t ftc__f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

static inline double ftc__f64_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

/* binary16 -> f32, exact (after F. Giesen's half_to_float): subnormal
 * halves are renormalised by an f32 subtraction, Inf/NaN get an all-ones
 * exponent; NaN payloads are kept. */
static inline float ftc__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = o & 0x0f800000u;
    o += (uint32_t)(127 - 15) << 23;
    uint32_t infnan = o + ((uint32_t)(128 - 16) << 23);
    float sub =
        ftc__f32_from_bits(o + (1u << 23)) - ftc__f32_from_bits(113u << 23);
    o = exp == 0x0f800000u ? infnan : o;
    o = exp == 0 ? ftc__f32_bits(sub) : o;
    return ftc__f32_from_bits(o | sign);
}

/* f32 -> binary16, round to nearest even (after F. Giesen's
 * float_to_half_fast3_rtne); overflow gives Inf, NaN the quiet NaN 0x7e00
 * with the sign kept. */
static inline uint16_t ftc__f32_to_f16(float x)
{
    const uint32_t f32_inf = 255u << 23;
    const uint32_t f16_max = (127u + 16u) << 23;
    const uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t f = ftc__f32_bits(x);
    uint32_t sign = f & 0x80000000u;
    f ^= sign;
    uint32_t special = f > f32_inf ? 0x7e00u : 0x7c00u;
    uint32_t sub = ftc__f32_bits(ftc__f32_from_bits(f) +
                                 ftc__f32_from_bits(denorm_magic)) -
                   denorm_magic;
    uint32_t mant_odd = (f >> 13) & 1u;
    uint32_t norm =
        (f + ((uint32_t)(15 - 127) << 23) + 0xfffu + mant_odd) >> 13;
    uint32_t o = f < (113u << 23) ? sub : norm;
    o = f >= f16_max ? special : o;
    return (uint16_t)(o | (sign >> 16));
}

static inline float ftc__bf16_to_f32(uint16_t h)
{
    return ftc__f32_from_bits((uint32_t)h << 16);
}

/* f32 -> bfloat16, round to nearest even; NaN stays NaN (quiet bit set,
 * sign and upper payload kept), overflow rounds to Inf. */
static inline uint16_t ftc__f32_to_bf16(float x)
{
    uint32_t u = ftc__f32_bits(x);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

#endif
