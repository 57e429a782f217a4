/* LocalSGD: replicas train alone and average their parameters every
 * sync_every steps, committing the average only if the group agrees. */
#include "algo/algo_int.h"

#include <string.h>

#define LOCALSGD_MAGIC 0x4C534744u /* "LSGD" */

struct ftc_localsgd {
    uint32_t magic;
    ftc_algo_comm comm;
    float *params; /* borrowed */
    float *avg_copy;
    size_t n;
    int sync_every;
    int local_step;
    size_t bucket_elems;
    ftc__algo_avg avg;
};

void ftc_localsgd_opts_init(ftc_localsgd_opts *opts)
{
    if (opts != NULL) {
        memset(opts, 0, sizeof(*opts));
        opts->struct_size = sizeof(*opts);
        opts->sync_every = FTC_ALGO_DEFAULT_SYNC_EVERY;
        opts->bucket_elems = FTC_ALGO_DEFAULT_BUCKET_ELEMS;
    }
}

int ftc_localsgd_create(const ftc_algo_comm *comm, float *params, size_t n,
                        const ftc_localsgd_opts *opts, ftc_localsgd **out)
{
    ftc__clearerr();
    if (out != NULL) {
        *out = NULL;
    }
    int rc = ftc__algo_check_create(out != NULL, comm);
    if (rc != 0) {
        return rc;
    }
    ftc_localsgd_opts o;
    ftc_localsgd_opts_init(&o);
    rc = FTC__OPTS_MERGE(&o, opts, ftc_localsgd_opts, bucket_elems);
    if (rc != 0) {
        return rc;
    }
    if (params == NULL || n == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "params must be a non-empty array "
                           "(params %s, n %zu)",
                           params == NULL ? "NULL" : "set", n);
    }
    rc = ftc__algo_check_bucket(o.bucket_elems);
    if (rc != 0) {
        return rc;
    }
    if (o.sync_every < 1) {
        return ftc__seterr(FTC_EINVAL, "sync_every %d must be >= 1",
                           o.sync_every);
    }
    ftc_localsgd *sgd = ftc__calloc(1, sizeof(*sgd));
    float *copy = ftc__calloc(n, sizeof(float));
    if (sgd == NULL || copy == NULL) {
        ftc__free(sgd);
        ftc__free(copy);
        return ftc__seterr(FTC_ENOMEM, "localsgd copy of %zu floats", n);
    }
    sgd->magic = LOCALSGD_MAGIC;
    sgd->comm = *comm;
    sgd->params = params;
    sgd->avg_copy = copy;
    sgd->n = n;
    sgd->sync_every = o.sync_every;
    sgd->bucket_elems = o.bucket_elems;
    *out = sgd;
    return 0;
}

void ftc_localsgd_destroy(ftc_localsgd *sgd)
{
    if (sgd == NULL) {
        return;
    }
    sgd->magic = 0;
    ftc__free(sgd->avg_copy);
    ftc__free(sgd);
}

/* One synchronisation: quorum, average of a copy, vote, copy back. */
static int sync_params(ftc_localsgd *sgd, int *outcome,
                       const ftc__algo_clock *clk)
{
    const ftc_algo_comm *c = &sgd->comm;
    int rc = c->start_quorum(c->ctx, ftc__algo_clock_left(clk));
    if (rc != 0) {
        return ftc__adderr(rc, "localsgd: start_quorum");
    }
    memcpy(sgd->avg_copy, sgd->params, sgd->n * sizeof(float));
    ftc__algo_avg_issue(&sgd->avg, c, sgd->avg_copy, sgd->n, sgd->bucket_elems,
                        clk);
    int ok = ftc__algo_avg_drain(&sgd->avg, c, clk) == 0;
    ftc__clearerr();
    sgd->local_step = 0;
    int commit = 0;
    rc = c->should_commit(c->ctx, ok, &commit, ftc__algo_clock_left(clk));
    if (rc != 0) {
        *outcome = FTC_ALGO_DISCARDED;
        return ftc__adderr(rc, "localsgd: should_commit");
    }
    if (commit) {
        memcpy(sgd->params, sgd->avg_copy, sgd->n * sizeof(float));
    }
    *outcome = commit ? FTC_ALGO_COMMITTED : FTC_ALGO_DISCARDED;
    return 0;
}

int ftc_localsgd_step(ftc_localsgd *sgd, int *outcome, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = ftc__algo_enter_step(sgd, LOCALSGD_MAGIC, "ftc_localsgd", outcome);
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_localsgd_step");
    if (rc != 0) {
        return rc;
    }
    if (sgd->local_step < sgd->sync_every) {
        sgd->local_step++;
    }
    if (sgd->local_step < sgd->sync_every) {
        return 0;
    }
    ftc__algo_clock clk = ftc__algo_clock_start(timeout_ms);
    return sync_params(sgd, outcome, &clk);
}
