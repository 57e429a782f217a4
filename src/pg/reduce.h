/* Element-wise reductions for every dtype and op, vectorised, plus the
 * dtype/op tables the pg layer checks arguments against. */
#ifndef FTC_PG_REDUCE_H
#define FTC_PG_REDUCE_H

#include <stdbool.h>
#include <stddef.h>

#include "ftc/pg.h"

bool ftc__dtype_is_float(int dtype);

/* 0 if op applies to dtype; FTC_EINVAL with a message otherwise (unknown
 * dtype or op, or AVG on an integer type). */
int ftc__reduce_check(int dtype, int op);

/* dst[i] = a[i] op b[i] for count elements. dst may be exactly a or
 * exactly b (in place) but must not partially overlap either. AVG reduces
 * as SUM; finish it with ftc__reduce_avg_finish. dtype/op must have
 * passed ftc__reduce_check. */
void ftc__reduce(void *dst, const void *a, const void *b, size_t count,
                 int dtype, int op);

/* dst[i] /= n (floating dtypes; the division is done in f32 for f16/bf16
 * and rounded once). */
void ftc__reduce_avg_finish(void *dst, size_t count, int dtype, int n);

#endif
