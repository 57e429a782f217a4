/* The comm table as the algorithms use it: checking a caller's table and
 * turning one call's timeout into what each comm call receives. */
#include "algo/algo_int.h"

ftc__algo_clock ftc__algo_clock_start(int64_t timeout_ms)
{
    ftc__algo_clock clk;
    clk.use_comm_default = timeout_ms == FTC_TIMEOUT_DEFAULT;
    clk.deadline = ftc__deadline_in_ms(timeout_ms);
    return clk;
}

int64_t ftc__algo_clock_left(const ftc__algo_clock *clk)
{
    if (clk->use_comm_default) {
        return FTC_TIMEOUT_DEFAULT;
    }
    if (ftc__deadline_is_never(clk->deadline)) {
        return FTC_TIMEOUT_INFINITE;
    }
    return ftc__deadline_left_ms(clk->deadline);
}

int ftc__algo_check_create(int out_given, const ftc_algo_comm *comm)
{
    if (!out_given) {
        return ftc__seterr(FTC_EINVAL, "out is NULL");
    }
    if (comm == NULL) {
        return ftc__seterr(FTC_EINVAL, "comm is NULL");
    }
    const char *missing = NULL;
    if (comm->start_quorum == NULL) {
        missing = "start_quorum";
    } else if (comm->allreduce_avg == NULL) {
        missing = "allreduce_avg";
    } else if (comm->wait == NULL) {
        missing = "wait";
    } else if (comm->should_commit == NULL) {
        missing = "should_commit";
    } else if (comm->current_step == NULL) {
        missing = "current_step";
    }
    if (missing != NULL) {
        return ftc__seterr(FTC_EINVAL, "comm->%s is NULL", missing);
    }
    return 0;
}

int ftc__algo_check_params(const float *params, size_t n)
{
    if (params == NULL || n == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "params must be a non-empty array (params %s, n "
                           "%zu)",
                           params == NULL ? "NULL" : "set", n);
    }
    return 0;
}

int ftc__algo_check_handle(const void *handle, uint32_t magic, const char *type)
{
    /* Every handle struct starts with its magic number. */
    if (handle == NULL || *(const uint32_t *)handle != magic) {
        return ftc__seterr(FTC_EMISUSE, "not a live %s handle", type);
    }
    return 0;
}

int ftc__algo_enter_step(const void *handle, uint32_t magic, const char *type,
                         int *outcome)
{
    int rc = ftc__algo_check_handle(handle, magic, type);
    if (rc != 0) {
        return rc;
    }
    if (outcome == NULL) {
        return ftc__seterr(FTC_EINVAL, "outcome is NULL");
    }
    *outcome = FTC_ALGO_LOCAL;
    return 0;
}

int ftc__algo_check_bucket(size_t bucket_elems)
{
    return bucket_elems == 0
               ? ftc__seterr(FTC_EINVAL, "bucket_elems 0 must be >= 1")
               : 0;
}
