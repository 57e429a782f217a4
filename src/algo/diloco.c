/* DiLoCo and streaming DiLoCo: fragments of the parameters synchronised
 * in turn through averaged pseudo-gradients and an outer Nesterov SGD. */
#include "algo/algo_int.h"

#include <math.h>
#include <string.h>

#define DILOCO_MAGIC 0x444C4F43u /* "DLOC" */
#define DEFAULT_OUTER_LR 0.7
#define DEFAULT_OUTER_MOMENTUM 0.9

struct ftc_diloco {
    uint32_t magic;
    ftc_algo_comm comm;
    float *params; /* borrowed */
    size_t n;
    float *global;   /* n: parameters of the last committed outer steps */
    float *momentum; /* n: outer optimizer buffers, zero until stepped */
    float *pseudo;   /* largest fragment: pseudo-gradient, then average */
    float *local;    /* largest fragment: local values for mixing */
    ftc_algo_range *frags;
    size_t nfrag;
    int period; /* inner steps between two fragment syncs */
    int delay;
    float alpha;
    float lr;
    float mu;
    size_t bucket_elems;
    int local_step;
    int has_pending;
    size_t pending; /* fragment whose average is in flight */
    ftc__algo_avg avg;
    ftc_algo_buffer buffers[2];
};

void ftc_diloco_opts_init(ftc_diloco_opts *opts)
{
    if (opts == NULL) {
        return;
    }
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = sizeof(*opts);
    opts->sync_every = FTC_ALGO_DEFAULT_SYNC_EVERY;
    opts->n_fragments = 1;
    opts->outer_lr = DEFAULT_OUTER_LR;
    opts->outer_momentum = DEFAULT_OUTER_MOMENTUM;
    opts->bucket_elems = FTC_ALGO_DEFAULT_BUCKET_ELEMS;
}

/* Fills defaults into *o and checks the schedule and optimizer fields;
 * the fragment ranges are checked by ftc__algo_fragments. */
static int resolve_opts(ftc_diloco_opts *o)
{
    if (o->sync_every < 1) {
        return ftc__seterr(FTC_EINVAL, "sync_every %d must be >= 1",
                           o->sync_every);
    }
    if (o->n_fragments < 1) {
        return ftc__seterr(FTC_EINVAL, "n_fragments 0 must be >= 1");
    }
    int rc = ftc__algo_check_bucket(o->bucket_elems);
    if (rc != 0) {
        return rc;
    }
    if ((size_t)o->sync_every % o->n_fragments != 0) {
        return ftc__seterr(FTC_EINVAL,
                           "sync_every %d must be a multiple of the number "
                           "of fragments %zu (each fragment syncs once per "
                           "sync_every steps, one at a time)",
                           o->sync_every, o->n_fragments);
    }
    int period = o->sync_every / (int)o->n_fragments;
    if (o->fragment_sync_delay < 0 || o->fragment_sync_delay >= period) {
        return ftc__seterr(FTC_EINVAL,
                           "fragment_sync_delay %d must be in [0, %d): the "
                           "per-fragment period sync_every / n_fragments is "
                           "%d and an average must finish before the next "
                           "one starts",
                           o->fragment_sync_delay, period, period);
    }
    if (!(o->fragment_update_alpha >= 0 && o->fragment_update_alpha <= 1)) {
        return ftc__seterr(FTC_EINVAL,
                           "fragment_update_alpha %g must be in [0, 1]",
                           o->fragment_update_alpha);
    }
    if (!(o->outer_lr > 0 && isfinite(o->outer_lr))) {
        return ftc__seterr(FTC_EINVAL, "outer_lr %g must be > 0 and finite",
                           o->outer_lr);
    }
    if (!(o->outer_momentum > 0 && o->outer_momentum < 1)) {
        return ftc__seterr(FTC_EINVAL,
                           "outer_momentum %g must be in (0, 1) for Nesterov "
                           "momentum",
                           o->outer_momentum);
    }
    return 0;
}

static size_t largest_fragment(const ftc_algo_range *frags, size_t nfrag)
{
    size_t max = 0;
    for (size_t i = 0; i < nfrag; i++) {
        max = frags[i].count > max ? frags[i].count : max;
    }
    return max;
}

void ftc_diloco_destroy(ftc_diloco *dl)
{
    if (dl == NULL) {
        return;
    }
    ftc__algo_avg_release(&dl->avg, &dl->comm);
    dl->magic = 0;
    ftc__free(dl->global);
    ftc__free(dl->momentum);
    ftc__free(dl->pseudo);
    ftc__free(dl->local);
    ftc__free(dl->frags);
    ftc__free(dl);
}

/* Allocates the handle's buffers once the fragment table is known. */
static int alloc_state(ftc_diloco *dl)
{
    size_t max = largest_fragment(dl->frags, dl->nfrag);
    dl->global = ftc__calloc(dl->n, sizeof(float));
    dl->momentum = ftc__calloc(dl->n, sizeof(float));
    dl->pseudo = ftc__calloc(max, sizeof(float));
    dl->local = ftc__calloc(max, sizeof(float));
    if (dl->global == NULL || dl->momentum == NULL || dl->pseudo == NULL ||
        dl->local == NULL) {
        return ftc__seterr(FTC_ENOMEM, "diloco state for %zu floats", dl->n);
    }
    memcpy(dl->global, dl->params, dl->n * sizeof(float));
    dl->buffers[0] = (ftc_algo_buffer){"diloco.global", dl->global, dl->n};
    dl->buffers[1] =
        (ftc_algo_buffer){"diloco.outer_momentum", dl->momentum, dl->n};
    return 0;
}

int ftc_diloco_create(const ftc_algo_comm *comm, float *params, size_t n,
                      const ftc_diloco_opts *opts, ftc_diloco **out)
{
    ftc__clearerr();
    if (out != NULL) {
        *out = NULL;
    }
    int rc = ftc__algo_check_create(out != NULL, comm);
    if (rc != 0) {
        return rc;
    }
    rc = ftc__algo_check_params(params, n);
    if (rc != 0) {
        return rc;
    }
    ftc_diloco_opts o;
    ftc_diloco_opts_init(&o);
    rc = FTC__OPTS_MERGE(&o, opts, ftc_diloco_opts, bucket_elems);
    if (rc != 0) {
        return rc;
    }
    rc = resolve_opts(&o);
    if (rc != 0) {
        return rc;
    }
    ftc_diloco *dl = ftc__calloc(1, sizeof(*dl));
    if (dl == NULL) {
        return ftc__seterr(FTC_ENOMEM, "ftc_diloco");
    }
    dl->comm = *comm;
    dl->params = params;
    dl->n = n;
    dl->nfrag = o.n_fragments;
    dl->period = o.sync_every / (int)o.n_fragments;
    dl->delay = o.fragment_sync_delay;
    dl->alpha = (float)o.fragment_update_alpha;
    dl->lr = (float)o.outer_lr;
    dl->mu = (float)o.outer_momentum;
    dl->bucket_elems = o.bucket_elems;
    rc = ftc__algo_fragments(o.fragments, o.n_fragments, n, &dl->frags);
    if (rc == 0) {
        rc = alloc_state(dl);
    }
    if (rc != 0) {
        ftc_diloco_destroy(dl);
        return rc;
    }
    dl->magic = DILOCO_MAGIC;
    *out = dl;
    return 0;
}

int ftc_diloco_buffers(const ftc_diloco *dl, const ftc_algo_buffer **bufs,
                       size_t *count)
{
    ftc__clearerr();
    int rc = ftc__algo_check_handle(dl, DILOCO_MAGIC, "ftc_diloco");
    if (rc != 0) {
        return rc;
    }
    if (bufs == NULL || count == NULL) {
        return ftc__seterr(FTC_EINVAL, "bufs and count must not be NULL");
    }
    *bufs = dl->buffers;
    *count = sizeof(dl->buffers) / sizeof(dl->buffers[0]);
    return 0;
}

/* The fragment every replica syncs now: from the committed step. */
static size_t current_fragment(const ftc_diloco *dl)
{
    int64_t step = dl->comm.current_step(dl->comm.ctx);
    if (FTC_NEVER(step < 0)) {
        step = 0;
    }
    return (size_t)((uint64_t)step % dl->nfrag);
}

/* Puts fragment f back at its global value. */
static void restore(ftc_diloco *dl, size_t f)
{
    const ftc_algo_range *r = &dl->frags[f];
    memcpy(dl->params + r->offset, dl->global + r->offset,
           r->count * sizeof(float));
}

/* Local step H - D: quorum, pseudo-gradient of the chosen fragment, and
 * its average issued to overlap the next D inner steps. */
static int prepare(ftc_diloco *dl, const ftc__algo_clock *clk)
{
    int rc = dl->comm.start_quorum(dl->comm.ctx, ftc__algo_clock_left(clk));
    if (rc != 0) {
        return ftc__adderr(rc, "diloco: start_quorum");
    }
    size_t f = current_fragment(dl);
    const ftc_algo_range *r = &dl->frags[f];
    const float *global = dl->global + r->offset;
    const float *params = dl->params + r->offset;
    for (size_t i = 0; i < r->count; i++) {
        dl->pseudo[i] = global[i] - params[i];
    }
    dl->pending = f;
    dl->has_pending = 1;
    ftc__algo_avg_issue(&dl->avg, &dl->comm, dl->pseudo, r->count,
                        dl->bucket_elems, clk);
    return 0;
}

/* Local step H: average in, fragment back to global, vote, and on commit
 * the outer step and the mixing of local progress. */
static int perform(ftc_diloco *dl, int *outcome, const ftc__algo_clock *clk)
{
    size_t f = dl->pending;
    const ftc_algo_range *r = &dl->frags[f];
    float *params = dl->params + r->offset;
    float *global = dl->global + r->offset;
    int ok = ftc__algo_avg_drain(&dl->avg, &dl->comm, clk) == 0;
    ftc__clearerr();
    dl->has_pending = 0;
    dl->local_step = 0;
    if (dl->alpha > 0) {
        memcpy(dl->local, params, r->count * sizeof(float));
    }
    restore(dl, f);
    *outcome = FTC_ALGO_DISCARDED;
    int commit = 0;
    int rc = dl->comm.should_commit(dl->comm.ctx, ok, &commit,
                                    ftc__algo_clock_left(clk));
    if (rc != 0) {
        return ftc__adderr(rc, "diloco: should_commit");
    }
    if (!commit) {
        return 0;
    }
    ftc__algo_nesterov_step(global, dl->momentum + r->offset, dl->pseudo,
                            r->count, dl->lr, dl->mu);
    memcpy(params, global, r->count * sizeof(float));
    if (dl->alpha > 0) {
        ftc__algo_lerp(params, dl->local, r->count, dl->alpha);
    }
    *outcome = FTC_ALGO_COMMITTED;
    return 0;
}

int ftc_diloco_step(ftc_diloco *dl, int *outcome, int64_t timeout_ms)
{
    ftc__clearerr();
    int rc = ftc__algo_enter_step(dl, DILOCO_MAGIC, "ftc_diloco", outcome);
    rc = rc != 0 ? rc : ftc__timeout_check(timeout_ms, "ftc_diloco_step");
    if (rc != 0) {
        return rc;
    }
    ftc__algo_clock clk = ftc__algo_clock_start(timeout_ms);
    dl->local_step++;
    if (dl->local_step == dl->period - dl->delay) {
        rc = prepare(dl, &clk);
        if (rc != 0) {
            restore(dl, current_fragment(dl));
            dl->local_step = 0;
            *outcome = FTC_ALGO_DISCARDED;
            return rc;
        }
    }
    if (dl->local_step < dl->period) {
        return 0;
    }
    return perform(dl, outcome, &clk);
}
