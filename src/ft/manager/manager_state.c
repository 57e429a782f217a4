/* The manager's registered state: buffers borrowed or behind save/load
 * callbacks, where a healed state lands, and how a staged one is applied
 * on the training thread. */
#include <string.h>

#include "ft/manager/manager.h"

/* The manager whose prepare function runs on this thread (NULL: none).
 * Thread-local so that only the prepare function itself may register
 * while a round is in flight, not another thread meanwhile. */
static _Thread_local ftc_manager *preparing;

/* 0 when m is a manager between steps (or, with state, inside its
 * prepare function on this thread), with mu held; else the error for
 * what (mu not held). */
static int lock_between_steps(ftc_manager *m, const char *what, bool state)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "manager %s: not a manager", what);
    }
    pthread_mutex_lock(&m->mu);
    if ((m->phase == FTC__MGR_RUNNING || m->phase == FTC__MGR_DONE) &&
        !(state && preparing == m)) {
        pthread_mutex_unlock(&m->mu);
        return ftc__seterr(FTC_EMISUSE,
                           "manager %s: a quorum round is in "
                           "flight",
                           what);
    }
    return 0;
}

/* Registers b reached through data, or through cb when it is not NULL. */
static int add(ftc_manager *m, const char *name, int dtype,
               const int64_t *shape, int ndim, void *data,
               const ftc_manager_state_cb *cb)
{
    ftc__clearerr();
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "manager register: not a manager");
    }
    size_t elem = ftc_dtype_size(dtype);
    if (elem == 0) {
        return ftc__seterr(FTC_EINVAL, "manager register: unknown dtype %d",
                           dtype);
    }
    ftc__heal_buf b;
    int rc = ftc__heal_buf_set(&b, name, dtype, shape, ndim, elem);
    if (rc != 0) {
        return rc;
    }
    rc = lock_between_steps(m, "register", true);
    if (rc != 0) {
        return rc;
    }
    rc = cb != NULL ? ftc__heal_state_add_cb(&m->state, &b, cb)
                    : ftc__heal_state_add(&m->state, &b, data);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ftc_manager_clear_state(ftc_manager *m)
{
    ftc__clearerr();
    int rc = lock_between_steps(m, "clear_state", true);
    if (rc != 0) {
        return rc;
    }
    ftc__heal_state_fini(&m->state);
    ftc__heal_state_init(&m->state);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int ftc_manager_set_step(ftc_manager *m, int64_t step,
                         int64_t batches_committed)
{
    ftc__clearerr();
    int rc = lock_between_steps(m, "set_step", false);
    if (rc != 0) {
        return rc;
    }
    if (m->phase == FTC__MGR_READY) {
        rc = ftc__seterr(FTC_EMISUSE, "manager set_step: the round taken "
                                      "over is not voted on yet");
    } else if (step < 0 || batches_committed < 0) {
        rc = ftc__seterr(FTC_EINVAL,
                         "manager set_step: step %lld and batches %lld "
                         "must not be negative",
                         (long long)step, (long long)batches_committed);
    } else {
        atomic_store(&m->step, step);
        atomic_store(&m->batches, batches_committed);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ftc_manager_set_adopt(ftc_manager *m, ftc_manager_adopt_fn fn, void *user)
{
    ftc__clearerr();
    int rc = lock_between_steps(m, "set_adopt", false);
    if (rc != 0) {
        return rc;
    }
    m->adopt_fn = fn;
    m->adopt_user = fn != NULL ? user : NULL;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int ftc_manager_set_prepare(ftc_manager *m, ftc_manager_prepare_fn fn,
                            void *user)
{
    ftc__clearerr();
    int rc = lock_between_steps(m, "set_prepare", false);
    if (rc != 0) {
        return rc;
    }
    m->prepare_fn = fn;
    m->prepare_user = fn != NULL ? user : NULL;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int ftc__manager_prepare(ftc_manager *m, const char *what)
{
    pthread_mutex_lock(&m->mu);
    ftc_manager_prepare_fn fn = m->prepare_fn;
    void *user = m->prepare_user;
    pthread_mutex_unlock(&m->mu);
    if (fn == NULL) {
        return 0;
    }
    ftc_manager *outer = preparing;
    preparing = m;
    int rc = fn(user);
    preparing = outer;
    if (rc != 0) {
        return ftc__seterr(FTC_ECANCELED,
                           "prepare function (for %s) "
                           "returned %d",
                           what, rc);
    }
    return 0;
}

int ftc__manager_heal_adopt_layout(void *user, const ftc__heal_meta *meta,
                                   const ftc__heal_state **layout,
                                   void *const **dest)
{
    ftc_manager *m = user;
    ftc__heal_state_fini(&m->adopted);
    ftc__heal_state_init(&m->adopted);
    ftc__free(m->staging);
    m->staging = meta->total_bytes > 0 ? ftc__malloc(meta->total_bytes) : NULL;
    if (meta->total_bytes > 0 && m->staging == NULL) {
        return ftc__seterr(FTC_ENOMEM, "healing staging of %llu B",
                           (unsigned long long)meta->total_bytes);
    }
    uint64_t off = 0;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < meta->n_buffers; i++) {
        rc = ftc__heal_state_add(&m->adopted, &meta->buffers[i],
                                 m->staging + off);
        off += meta->buffers[i].nbytes;
    }
    *layout = &m->adopted;
    *dest = m->adopted.data;
    return rc;
}

/* Hands the adopted state to the adopt callback (the buffers' views point
 * into the staging). */
static int apply_adopted(ftc_manager *m)
{
    const ftc__heal_state *a = &m->adopted;
    ftc_manager_buffer_view *v = ftc__calloc(a->n > 0 ? a->n : 1, sizeof(*v));
    int64_t(*dims)[FTC__HEAL_NDIM_MAX] =
        ftc__calloc(a->n > 0 ? a->n : 1, sizeof(*dims));
    int rc = v == NULL || dims == NULL
                 ? ftc__seterr(FTC_ENOMEM, "adopting a healed state")
                 : 0;
    for (size_t i = 0; rc == 0 && i < a->n; i++) {
        const ftc__heal_buf *b = &a->bufs[i];
        for (uint8_t d = 0; d < b->ndim; d++) {
            dims[i][d] = (int64_t)b->dims[d];
        }
        v[i] = (ftc_manager_buffer_view){
            b->name, b->dtype, b->ndim, dims[i], a->data[i], (size_t)b->nbytes};
    }
    if (rc == 0) {
        int cb = m->adopt_fn(m->adopt_user, v, a->n);
        if (cb != 0) {
            rc = ftc__seterr(FTC_ECANCELED,
                             "adopt callback of a state of %zu buffers "
                             "returned %d",
                             a->n, cb);
        }
    }
    ftc__free(v);
    ftc__free(dims);
    ftc__heal_state_fini(&m->adopted);
    ftc__heal_state_init(&m->adopted);
    return rc;
}

int ftc_manager_register(ftc_manager *m, const char *name, int dtype,
                         const int64_t *shape, int ndim, void *data)
{
    return add(m, name, dtype, shape, ndim, data, NULL);
}

int ftc_manager_register_cb(ftc_manager *m, const char *name, int dtype,
                            const int64_t *shape, int ndim,
                            const ftc_manager_state_cb *cb)
{
    if (cb == NULL) {
        ftc__clearerr();
        return ftc__seterr(FTC_EINVAL, "manager register: callbacks NULL");
    }
    return add(m, name, dtype, shape, ndim, NULL, cb);
}

/* Whether buffer i is received straight into its memory. */
static bool in_place(const ftc_manager *m, bool heal_in_place, size_t i)
{
    return heal_in_place && !ftc__heal_state_is_cb(&m->state, i);
}

int ftc__manager_heal_destinations(ftc_manager *m, bool heal_in_place,
                                   void **dest, bool *staged)
{
    uint64_t need = 0;
    for (size_t i = 0; i < m->state.n; i++) {
        need += in_place(m, heal_in_place, i) ? 0 : m->state.bufs[i].nbytes;
    }
    ftc__free(m->staging);
    m->staging = NULL;
    if (need > 0) {
        m->staging = ftc__malloc(need);
        if (m->staging == NULL) {
            return ftc__seterr(FTC_ENOMEM, "healing staging of %llu B",
                               (unsigned long long)need);
        }
    }
    uint64_t off = 0;
    for (size_t i = 0; i < m->state.n; i++) {
        if (in_place(m, heal_in_place, i)) {
            dest[i] = m->state.data[i];
        } else {
            dest[i] = m->staging + off;
            off += m->state.bufs[i].nbytes;
        }
    }
    *staged = need > 0;
    return 0;
}

int ftc__manager_heal_apply(ftc_manager *m, bool heal_in_place)
{
    uint64_t off = 0;
    int rc = m->adopt_fn != NULL ? apply_adopted(m) : 0;
    if (m->adopt_fn != NULL) {
        ftc__free(m->staging);
        m->staging = NULL;
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < m->state.n; i++) {
        size_t len = (size_t)m->state.bufs[i].nbytes;
        const uint8_t *src = m->staging + off;
        if (in_place(m, heal_in_place, i) || len == 0) {
            continue;
        }
        off += len;
        if (!ftc__heal_state_is_cb(&m->state, i)) {
            memcpy(m->state.data[i], src, len);
            continue;
        }
        int cb = m->state.cb[i].load(m->state.cb[i].user, src, len);
        if (cb != 0) {
            rc = ftc__seterr(FTC_ECANCELED,
                             "load callback of buffer %s returned %d",
                             m->state.bufs[i].name, cb);
        }
    }
    ftc__free(m->staging);
    m->staging = NULL;
    return rc;
}
