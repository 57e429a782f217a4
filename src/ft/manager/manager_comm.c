/* The algo layer's comm (include/ftc/algo.h) over a manager: a
 * synchronous quorum that heals in place, f32 averages, and the vote. */
#include "ft/manager/manager.h"
#include "ftc/algo.h"

static int comm_start_quorum(void *ctx, int64_t timeout_ms)
{
    ftc_manager *m = ctx;
    ftc_manager_quorum_opts qo;
    ftc_manager_quorum_opts_init(&qo);
    /* Healed before this returns, and the algorithms touch the buffers
     * only after: no staging copy needed. */
    qo.heal_in_place = true;
    qo.timeout_ms = timeout_ms;
    int rc = ftc_manager_start_quorum(m, &qo);
    return rc != 0 ? rc : ftc_manager_wait_quorum(m, timeout_ms);
}

static int comm_allreduce_avg(void *ctx, float *buf, size_t n,
                              ftc_algo_work **out)
{
    ftc_tensor t = ftc_tensor_cpu(buf, n, FTC_DTYPE_F32);
    ftc_manager_work *w = NULL;
    int rc =
        ftc_manager_allreduce(ctx, &t, FTC_OP_AVG, &w, FTC_TIMEOUT_DEFAULT);
    *out = (ftc_algo_work *)w;
    return rc;
}

static int comm_wait(void *ctx, ftc_algo_work *work, int64_t timeout_ms)
{
    (void)ctx;
    ftc_manager_work *w = (ftc_manager_work *)work;
    int rc = ftc_manager_work_wait(w, timeout_ms);
    ftc_manager_work_release(w);
    return rc;
}

static int comm_should_commit(void *ctx, int local_ok, int *commit,
                              int64_t timeout_ms)
{
    if (!local_ok) {
        ftc_manager_report_error(ctx, FTC_EPEER,
                                 "the algorithm saw a failed average");
    }
    return ftc_manager_should_commit(ctx, commit, timeout_ms);
}

static int64_t comm_current_step(void *ctx)
{
    return ftc_manager_current_step(ctx);
}

int ftc_manager_algo_comm(ftc_manager *m, struct ftc_algo_comm *out)
{
    ftc__clearerr();
    if (m == NULL || m->magic != FTC__MGR_MAGIC || out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "algo comm: NULL argument");
    }
    out->ctx = m;
    out->start_quorum = comm_start_quorum;
    out->allreduce_avg = comm_allreduce_avg;
    out->wait = comm_wait;
    out->should_commit = comm_should_commit;
    out->current_step = comm_current_step;
    return 0;
}
