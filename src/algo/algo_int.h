/* What the algo layer's files share: call deadlines passed to the comm,
 * the bucketed average engine and the outer-optimizer kernels. */
#ifndef FTC_ALGO_INT_H
#define FTC_ALGO_INT_H

#include <stdint.h>

#include "base/base_int.h"
#include "ftc/algo.h"

/* ---- deadlines ----------------------------------------------------- */

/* One algorithm call's time budget. FTC_TIMEOUT_DEFAULT is passed through
 * unchanged so the comm applies its own default per kind of call; any
 * other timeout becomes one deadline shared by every comm call inside. */
typedef struct ftc__algo_clock {
    int use_comm_default;
    ftc__deadline deadline;
} ftc__algo_clock;

ftc__algo_clock ftc__algo_clock_start(int64_t timeout_ms);
/* The timeout_ms argument for the next comm call. */
int64_t ftc__algo_clock_left(const ftc__algo_clock *clk);

/* ---- comm table ---------------------------------------------------- */

/* The checks every create call starts with: out must be given and the
 * table complete (FTC_EINVAL naming the first missing function). */
int ftc__algo_check_create(int out_given, const ftc_algo_comm *comm);
/* A parameter vector must be a non-empty array (FTC_EINVAL). */
int ftc__algo_check_params(const float *params, size_t n);
/* A handle whose first field is its magic number must carry `magic`
 * (FTC_EMISUSE naming the type otherwise). */
int ftc__algo_check_handle(const void *handle, uint32_t magic,
                           const char *type);
/* The checks every step call starts with: a live handle and a non-NULL
 * outcome, which is set to FTC_ALGO_LOCAL. */
int ftc__algo_enter_step(const void *handle, uint32_t magic, const char *type,
                         int *outcome);
/* The bucket size of an opts field: 0 means the default. */
/* FTC_EINVAL for bucket_elems 0 (every bucket needs an element). */
int ftc__algo_check_bucket(size_t bucket_elems);

/* ---- bucketed averages --------------------------------------------- */

/* At most this many averages in flight per engine; a larger vector waits
 * for the oldest bucket before issuing the next, which bounds the state
 * without allocating per call. */
#define FTC__ALGO_MAX_INFLIGHT 64

/* Averages issued and not yet waited for, oldest first, and the first
 * failure since the last drain. Zero-initialised means empty. */
typedef struct ftc__algo_avg {
    ftc_algo_work *work[FTC__ALGO_MAX_INFLIGHT];
    size_t head;
    size_t count;
    int failed; /* first failure code, 0 if none */
} ftc__algo_avg;

/* Issues averages of buf[0..n) in consecutive buckets of at most
 * bucket_elems floats. A failure is recorded (and logged), not returned;
 * after it no further bucket is issued. buf is lent to the comm until the
 * drain. */
void ftc__algo_avg_issue(ftc__algo_avg *avg, const ftc_algo_comm *comm,
                         float *buf, size_t n, size_t bucket_elems,
                         const ftc__algo_clock *clk);
/* Waits for every outstanding average, in issue order; returns 0 if
 * every average since the previous drain succeeded, else the first
 * failure code. Leaves the engine empty. */
int ftc__algo_avg_drain(ftc__algo_avg *avg, const ftc_algo_comm *comm,
                        const ftc__algo_clock *clk);
/* Releases outstanding averages at once (wait with timeout 0), for
 * destroy. */
void ftc__algo_avg_release(ftc__algo_avg *avg, const ftc_algo_comm *comm);

/* ---- fragments ----------------------------------------------------- */

/* The fragment table of a DiLoCo handle: a copy of the caller's nfrag
 * ranges after checking each is non-empty, inside [0, n) and disjoint from
 * the others, or (given NULL) nfrag contiguous near-equal ranges covering
 * [0, n). *out is allocated (ftc__free). Errors: FTC_EINVAL naming the
 * offending fragment, FTC_ENOMEM. */
int ftc__algo_fragments(const ftc_algo_range *given, size_t nfrag, size_t n,
                        ftc_algo_range **out);

/* ---- outer optimizer ----------------------------------------------- */

/* One step of torch.optim.SGD(lr, momentum, nesterov=True, dampening=0)
 * on p[0..n) with gradient g and momentum buffer buf (zero before the
 * first step), bit-identical to PyTorch's CPU kernel. */
void ftc__algo_nesterov_step(float *p, float *buf, const float *g, size_t n,
                             float lr, float momentum);
/* self = torch.lerp(self, end, weight), bit-identical to PyTorch. */
void ftc__algo_lerp(float *self, const float *end, size_t n, float weight);

#endif
