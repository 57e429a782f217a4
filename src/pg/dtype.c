/* Names, sizes and validity of dtypes and reduction ops. */
#include "base/base_int.h"
#include "pg/reduce.h"

static const struct {
    const char *name;
    size_t size;
    bool is_float;
} dtypes[FTC_DTYPE_COUNT] = {
    [FTC_DTYPE_F32] = {"f32", 4, true},  [FTC_DTYPE_F64] = {"f64", 8, true},
    [FTC_DTYPE_F16] = {"f16", 2, true},  [FTC_DTYPE_BF16] = {"bf16", 2, true},
    [FTC_DTYPE_I8] = {"i8", 1, false},   [FTC_DTYPE_U8] = {"u8", 1, false},
    [FTC_DTYPE_I32] = {"i32", 4, false}, [FTC_DTYPE_I64] = {"i64", 8, false},
};

static const char *const op_names[FTC_OP_COUNT] = {
    [FTC_OP_SUM] = "sum", [FTC_OP_AVG] = "avg",   [FTC_OP_MIN] = "min",
    [FTC_OP_MAX] = "max", [FTC_OP_PROD] = "prod",
};

size_t ftc_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < FTC_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *ftc_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < FTC_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

const char *ftc_op_name(int op)
{
    return op >= 0 && op < FTC_OP_COUNT ? op_names[op] : "?";
}

bool ftc__dtype_is_float(int dtype)
{
    return dtype >= 0 && dtype < FTC_DTYPE_COUNT && dtypes[dtype].is_float;
}

int ftc__reduce_check(int dtype, int op)
{
    if (dtype < 0 || dtype >= FTC_DTYPE_COUNT) {
        return ftc__seterr(FTC_EINVAL, "unknown dtype %d", dtype);
    }
    if (op < 0 || op >= FTC_OP_COUNT) {
        return ftc__seterr(FTC_EINVAL, "unknown reduction op %d", op);
    }
    if (op == FTC_OP_AVG && !dtypes[dtype].is_float) {
        return ftc__seterr(FTC_EINVAL,
                           "op avg needs a floating dtype, not %s (use sum "
                           "and divide)",
                           dtypes[dtype].name);
    }
    return 0;
}
