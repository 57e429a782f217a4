/* FT-DDP: per-step gradient averages through the comm, in buckets, and
 * the group's commit decision that gates the caller's optimizer step. */
#include "algo/algo_int.h"

#include <string.h>

#define DDP_MAGIC 0x46444450u /* "FDDP" */

struct ftc_ddp {
    uint32_t magic;
    ftc_algo_comm comm;
    size_t bucket_elems;
    int in_step;
    int step_ok; /* 0 once an average of the open step failed */
    ftc__algo_avg avg;
};

void ftc_ddp_opts_init(ftc_ddp_opts *opts)
{
    if (opts != NULL) {
        memset(opts, 0, sizeof(*opts));
        opts->struct_size = sizeof(*opts);
        opts->bucket_elems = FTC_ALGO_DEFAULT_BUCKET_ELEMS;
    }
}

int ftc_ddp_create(const ftc_algo_comm *comm, const ftc_ddp_opts *opts,
                   ftc_ddp **out)
{
    ftc__clearerr();
    if (out != NULL) {
        *out = NULL;
    }
    int rc = ftc__algo_check_create(out != NULL, comm);
    if (rc != 0) {
        return rc;
    }
    ftc_ddp_opts o;
    ftc_ddp_opts_init(&o);
    rc = FTC__OPTS_MERGE(&o, opts, ftc_ddp_opts, bucket_elems);
    rc = rc != 0 ? rc : ftc__algo_check_bucket(o.bucket_elems);
    if (rc != 0) {
        return rc;
    }
    ftc_ddp *ddp = ftc__calloc(1, sizeof(*ddp));
    if (ddp == NULL) {
        return ftc__seterr(FTC_ENOMEM, "ftc_ddp");
    }
    ddp->magic = DDP_MAGIC;
    ddp->comm = *comm;
    ddp->bucket_elems = o.bucket_elems;
    *out = ddp;
    return 0;
}

void ftc_ddp_destroy(ftc_ddp *ddp)
{
    if (ddp == NULL) {
        return;
    }
    ddp->magic = 0;
    ftc__free(ddp);
}

int ftc_ddp_begin_step(ftc_ddp *ddp, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = ftc__algo_check_handle(ddp, DDP_MAGIC, "ftc_ddp");
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_ddp_begin_step");
    if (rc != 0) {
        return rc;
    }
    if (ddp->in_step) {
        return ftc__seterr(FTC_EMISUSE, "a step is already open: call "
                                        "ftc_ddp_commit first");
    }
    rc = ddp->comm.start_quorum(ddp->comm.ctx, timeout_ms);
    if (rc != 0) {
        return ftc__adderr(rc, "ddp: start_quorum");
    }
    ddp->in_step = 1;
    ddp->step_ok = 1;
    return 0;
}

int ftc_ddp_sync_grads(ftc_ddp *ddp, float *grads, size_t n, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = ftc__algo_check_handle(ddp, DDP_MAGIC, "ftc_ddp");
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_ddp_sync_grads");
    if (rc != 0) {
        return rc;
    }
    if (!ddp->in_step) {
        return ftc__seterr(FTC_EMISUSE, "no open step: call "
                                        "ftc_ddp_begin_step first");
    }
    if (grads == NULL && n > 0) {
        return ftc__seterr(FTC_EINVAL, "grads is NULL with n = %zu", n);
    }
    ftc__algo_clock clk = ftc__algo_clock_start(timeout_ms);
    ftc__algo_avg_issue(&ddp->avg, &ddp->comm, grads, n, ddp->bucket_elems,
                        &clk);
    if (ftc__algo_avg_drain(&ddp->avg, &ddp->comm, &clk) != 0) {
        ddp->step_ok = 0;
    }
    ftc__clearerr();
    return 0;
}

int ftc_ddp_commit(ftc_ddp *ddp, int *commit, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = ftc__algo_check_handle(ddp, DDP_MAGIC, "ftc_ddp");
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_ddp_commit");
    if (rc != 0) {
        return rc;
    }
    if (commit == NULL) {
        return ftc__seterr(FTC_EINVAL, "commit is NULL");
    }
    *commit = 0;
    if (!ddp->in_step) {
        return ftc__seterr(FTC_EMISUSE, "no open step: call "
                                        "ftc_ddp_begin_step first");
    }
    ddp->in_step = 0;
    int decision = 0;
    rc = ddp->comm.should_commit(ddp->comm.ctx, ddp->step_ok, &decision,
                                 timeout_ms);
    if (rc != 0) {
        return ftc__adderr(rc, "ddp: should_commit");
    }
    *commit = decision != 0;
    return 0;
}
