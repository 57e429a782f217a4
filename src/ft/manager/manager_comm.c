/* The algo layer's comm (include/ftc/algo.h) over a manager: a
 * synchronous quorum that heals in place, f32 averages, and the vote. */
#include "ft/manager/manager.h"
#include "ftc/algo.h"

/* Whether a round an earlier call started is still to be waited for. */
static bool round_in_flight(ftc_manager *m)
{
    pthread_mutex_lock(&m->mu);
    bool in_flight = m->phase == FTC__MGR_RUNNING || m->phase == FTC__MGR_DONE;
    pthread_mutex_unlock(&m->mu);
    return in_flight;
}

static int comm_start_quorum(void *ctx, int64_t timeout_ms)
{
    ftc_manager *m = ctx;
    /* An earlier call whose wait timed out (the round's own deadline is
     * the same, so it ends a moment later) left its round running: wait
     * for that round instead of starting one, which the manager refuses.
     * Retrying callers would otherwise fail at once, again and again, and
     * give up with the group's state (seen in run_hosts_chaos_test). */
    int rc = 0;
    if (!round_in_flight(m)) {
        ftc_manager_quorum_opts qo;
        ftc_manager_quorum_opts_init(&qo);
        /* Healed before this returns, and the algorithms touch the buffers
         * only after: no staging copy needed. */
        qo.heal_in_place = true;
        qo.timeout_ms = timeout_ms;
        rc = ftc_manager_start_quorum(m, &qo);
    }
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
