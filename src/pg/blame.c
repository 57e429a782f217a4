/* Who a failed group, or a failed ftc_pg_create, holds responsible: the
 * public calls over the backend's failed_peers slot and over the blame a
 * backend reports during create (ftc_pg_backend_blame), which ends in a
 * thread-local slot as ftc_last_error does. */
#include "pg/pg_int.h"

/* The lowest ranks of the last failed ftc_pg_create of this thread that
 * are kept, and how many there were. Thread-local like the error
 * message: a create has no handle left to ask once it failed. */
#define CREATE_KEPT 1024
static _Thread_local int create_blamed[CREATE_KEPT];
static _Thread_local int create_blamed_n;

int ftc__pg_blame_list(const bool *blamed, int size, int *ranks, int cap)
{
    int n = 0;
    for (int r = 0; blamed != NULL && r < size; r++) {
        if (blamed[r]) {
            if (n < cap) {
                ranks[n] = r;
            }
            n++;
        }
    }
    return n;
}

static int check_out(const int *ranks, int cap)
{
    if (cap < 0 || (ranks == NULL && cap > 0)) {
        return ftc__seterr(FTC_EINVAL,
                           "failed peers: cap %d with ranks %s (cap must be "
                           ">= 0, ranks may be NULL only with cap 0)",
                           cap, ranks != NULL ? "set" : "NULL");
    }
    return 0;
}

int ftc_pg_failed_peers(ftc_pg *pg, int *ranks, int cap)
{
    ftc__clearerr();
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a process group");
    }
    int rc = check_out(ranks, cap);
    if (rc != 0 || pg->ops->failed_peers == NULL) {
        return rc; /* a backend without the slot blames nobody */
    }
    return pg->ops->failed_peers(pg->impl, ranks, cap);
}

int ftc_pg_create_failed_peers(int *ranks, int cap)
{
    ftc__clearerr();
    int rc = check_out(ranks, cap);
    if (rc != 0) {
        return rc;
    }
    int kept = create_blamed_n < CREATE_KEPT ? create_blamed_n : CREATE_KEPT;
    for (int i = 0; i < kept && i < cap; i++) {
        ranks[i] = create_blamed[i];
    }
    return create_blamed_n;
}

int ftc_pg_backend_blame(ftc_pg_backend_rendezvous *rv, const int *ranks, int n)
{
    if (rv == NULL || n < 0 || (ranks == NULL && n > 0)) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_pg_backend_blame: needs the rendezvous and "
                           "n >= 0 ranks");
    }
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= rv->size || ranks[i] == rv->rank) {
            return ftc__seterr(FTC_EINVAL,
                               "ftc_pg_backend_blame: rank %d is not a peer "
                               "(this is member %d of %d)",
                               ranks[i], rv->rank, rv->size);
        }
    }
    if (n > 0 && rv->blamed == NULL) {
        rv->blamed = ftc__calloc((size_t)rv->size, sizeof(*rv->blamed));
        if (rv->blamed == NULL) {
            return ftc__seterr(FTC_ENOMEM, "ftc_pg_backend_blame: out of "
                                           "memory");
        }
    }
    for (int i = 0; i < n; i++) {
        rv->blamed[ranks[i]] = true;
    }
    return 0;
}

void ftc__pg_rendezvous_done(ftc_pg_backend_rendezvous *rv, int rc)
{
    if (rv->parent == NULL) {
        create_blamed_n = rc == 0
                              ? 0
                              : ftc__pg_blame_list(rv->blamed, rv->size,
                                                   create_blamed, CREATE_KEPT);
    }
    ftc__free(rv->blamed);
    rv->blamed = NULL;
}
