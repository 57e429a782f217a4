/* Bucketed averages: a float vector averaged as consecutive slices, all
 * issued before any is waited for, with a bounded number in flight. */
#include "algo/algo_int.h"

/* Keeps the first failure and says once why the step will not commit. */
static void record_failure(ftc__algo_avg *avg, int rc, const char *what)
{
    if (rc == 0 || avg->failed != 0) {
        return;
    }
    FTC_LOG_WARN("algo.average", "%s failed, step will not commit: %s: %s",
                 what, ftc_err_name(rc), ftc_last_error());
    avg->failed = rc;
}

/* Removes the oldest outstanding average and waits for it. */
static int wait_oldest(ftc__algo_avg *avg, const ftc_algo_comm *comm,
                       int64_t timeout_ms)
{
    ftc_algo_work *w = avg->work[avg->head];
    avg->work[avg->head] = NULL;
    avg->head = (avg->head + 1) % FTC__ALGO_MAX_INFLIGHT;
    avg->count--;
    return comm->wait(comm->ctx, w, timeout_ms);
}

void ftc__algo_avg_issue(ftc__algo_avg *avg, const ftc_algo_comm *comm,
                         float *buf, size_t n, size_t bucket_elems,
                         const ftc__algo_clock *clk)
{
    size_t off = 0;
    while (off < n && avg->failed == 0) {
        if (avg->count == FTC__ALGO_MAX_INFLIGHT) {
            int rc = wait_oldest(avg, comm, ftc__algo_clock_left(clk));
            record_failure(avg, rc, "average");
            continue;
        }
        size_t len = n - off < bucket_elems ? n - off : bucket_elems;
        ftc_algo_work *w = NULL;
        int rc = comm->allreduce_avg(comm->ctx, buf + off, len, &w);
        if (rc != 0) {
            record_failure(avg, rc, "issuing an average");
            break;
        }
        avg->work[(avg->head + avg->count) % FTC__ALGO_MAX_INFLIGHT] = w;
        avg->count++;
        off += len;
    }
}

int ftc__algo_avg_drain(ftc__algo_avg *avg, const ftc_algo_comm *comm,
                        const ftc__algo_clock *clk)
{
    while (avg->count > 0) {
        int rc = wait_oldest(avg, comm, ftc__algo_clock_left(clk));
        record_failure(avg, rc, "average");
    }
    int failed = avg->failed;
    avg->failed = 0;
    return failed;
}

void ftc__algo_avg_release(ftc__algo_avg *avg, const ftc_algo_comm *comm)
{
    while (avg->count > 0) {
        (void)wait_oldest(avg, comm, 0);
    }
    avg->failed = 0;
}
