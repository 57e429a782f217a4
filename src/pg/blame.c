/* Who a failed group holds responsible: the public call over the
 * backend's failed_peers slot. */
#include "pg/pg_int.h"

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
