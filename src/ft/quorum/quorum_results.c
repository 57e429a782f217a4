/* What one rank of one replica group makes of a quorum (torchft
 * compute_quorum_results): ranks, max step, the primary's store, and who
 * heals from whom; plus the store prefix of a quorum's process group. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

static int by_replica_id(const void *a, const void *b)
{
    const ftc__quorum_member *const *x = a;
    const ftc__quorum_member *const *y = b;
    return strcmp((*x)->replica_id, (*y)->replica_id);
}

/* The members of q in replica_id order (torchft sorts every time: a quorum
 * from the network need not be sorted). */
static int sort_members(const ftc__quorum *q, const ftc__quorum_member ***out)
{
    const ftc__quorum_member **m = ftc__malloc(q->n * sizeof(*m));
    if (m == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum results: %zu members", q->n);
    }
    for (size_t i = 0; i < q->n; i++) {
        m[i] = &q->members[i];
    }
    qsort(m, q->n, sizeof(*m), by_replica_id);
    for (size_t i = 1; i < q->n; i++) {
        if (strcmp(m[i - 1]->replica_id, m[i]->replica_id) == 0) {
            int rc =
                ftc__seterr(FTC_EINVAL, "quorum %" PRId64 " lists %s twice",
                            q->quorum_id, m[i]->replica_id);
            ftc__free(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

/* (a + b) mod n without overflow, for a < n and b >= 0. */
static size_t add_mod(size_t a, int64_t b, size_t n)
{
    return (a + (size_t)((uint64_t)b % n)) % n;
}

/* Everything of the result that needs the sorted members m; the recovery
 * lists are filled by assign_recovery. */
static void fill_ranks(const ftc__quorum_member **m, size_t n, size_t self,
                       int64_t group_rank, bool init_sync,
                       ftc__quorum_result *r, bool *dst, size_t *primary)
{
    r->replica_rank = (int64_t)self;
    r->replica_world_size = (int64_t)n;
    r->max_step = m[0]->step;
    r->commit_failures = m[0]->commit_failures;
    for (size_t i = 1; i < n; i++) {
        if (m[i]->step > r->max_step) {
            r->max_step = m[i]->step;
        }
        if (m[i]->commit_failures > r->commit_failures) {
            r->commit_failures = m[i]->commit_failures;
        }
    }
    r->max_replica_rank = -1;
    for (size_t i = 0; i < n; i++) {
        if (m[i]->step == r->max_step) {
            if (i == self) {
                r->max_replica_rank = r->max_world_size;
            }
            r->max_world_size++;
        }
    }
    /* The primary spreads the group ranks' process groups over the stores
     * of the up-to-date members. */
    size_t want = add_mod(0, group_rank, (size_t)r->max_world_size);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i]->step == r->max_step && seen++ == want) {
            *primary = i;
            break;
        }
    }
    memcpy(r->store_address, m[*primary]->store_address,
           sizeof(r->store_address));
    /* Behind max_step heals; with init_sync at step 0 so does everyone but
     * the primary, so that all start from one replica's initial state. */
    bool force = init_sync && r->max_step == 0;
    for (size_t i = 0; i < n; i++) {
        dst[i] = m[i]->step != r->max_step || (force && i != *primary);
    }
}

/* torchft's round robin: the k-th healing member (in rank order) heals from
 * up-to-date member (k + group_rank) mod count, so group ranks spread their
 * transfers over different sources. Fills self's source and its own
 * destinations. */
static int assign_recovery(const ftc__quorum_member **m, size_t n, size_t self,
                           int64_t group_rank, const bool *dst,
                           ftc__quorum_result *r)
{
    size_t *up = ftc__malloc(n * sizeof(*up));
    if (up == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum results: %zu members", n);
    }
    size_t n_up = 0;
    for (size_t i = 0; i < n; i++) {
        if (!dst[i]) {
            up[n_up++] = i;
        }
    }
    int rc = 0;
    size_t k = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!dst[i]) {
            continue;
        }
        size_t src = up[add_mod(k++ % n_up, group_rank, n_up)];
        if (i == self) {
            r->recover_src_replica_rank = (int64_t)src;
            r->heal = true;
            memcpy(r->recover_src_manager_address, m[src]->address,
                   sizeof(r->recover_src_manager_address));
        }
        if (src == self) {
            if (r->recover_dst_replica_ranks == NULL) {
                r->recover_dst_replica_ranks =
                    ftc__malloc(n * sizeof(*r->recover_dst_replica_ranks));
                if (r->recover_dst_replica_ranks == NULL) {
                    rc =
                        ftc__seterr(FTC_ENOMEM, "quorum results: %zu ranks", n);
                    break;
                }
            }
            r->recover_dst_replica_ranks[r->n_recover_dst++] = (int64_t)i;
        }
    }
    ftc__free(up);
    return rc;
}

static int copy_ids(const ftc__quorum_member **m, size_t n,
                    ftc__quorum_result *r)
{
    r->replica_ids = ftc__malloc(n * sizeof(*r->replica_ids));
    if (r->replica_ids == NULL) {
        return ftc__seterr(FTC_ENOMEM, "quorum results: %zu ids", n);
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(r->replica_ids[i], m[i]->replica_id, sizeof(r->replica_ids[i]));
    }
    return 0;
}

int ftc__quorum_results(const ftc__quorum *q, const char *replica_id,
                        int64_t group_rank, bool init_sync,
                        ftc__quorum_result *out)
{
    memset(out, 0, sizeof(*out));
    out->recover_src_replica_rank = -1;
    out->max_replica_rank = -1;
    if (q == NULL || q->n == 0 || replica_id == NULL || group_rank < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "quorum results: need a non-empty quorum, a "
                           "replica_id and group_rank >= 0 (got %lld)",
                           (long long)group_rank);
    }
    const ftc__quorum_member **m = NULL;
    int rc = sort_members(q, &m);
    if (rc != 0) {
        return rc;
    }
    size_t self = q->n;
    for (size_t i = 0; i < q->n; i++) {
        if (strcmp(m[i]->replica_id, replica_id) == 0) {
            self = i;
        }
    }
    bool *dst = NULL;
    if (self == q->n) {
        rc = ftc__seterr(FTC_ENOENT,
                         "replica %s not participating in returned quorum "
                         "%" PRId64,
                         replica_id, q->quorum_id);
        goto done;
    }
    dst = ftc__malloc(q->n * sizeof(*dst));
    if (dst == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "quorum results: %zu members", q->n);
        goto done;
    }
    out->quorum_id = q->quorum_id;
    size_t primary = 0;
    fill_ranks(m, q->n, self, group_rank, init_sync, out, dst, &primary);
    rc = assign_recovery(m, q->n, self, group_rank, dst, out);
    if (rc == 0) {
        rc = copy_ids(m, q->n, out);
    }
done:
    ftc__free(dst);
    ftc__free(m);
    if (rc != 0) {
        ftc__quorum_result_fini(out);
    }
    return rc;
}

void ftc__quorum_result_fini(ftc__quorum_result *r)
{
    ftc__free(r->recover_dst_replica_ranks);
    ftc__free(r->replica_ids);
    memset(r, 0, sizeof(*r));
    r->recover_src_replica_rank = -1;
    r->max_replica_rank = -1;
}

int ftc__quorum_store_prefix(char *buf, size_t cap, const char *store_address,
                             int64_t quorum_id, int64_t group_rank)
{
    if (buf == NULL || cap == 0 || store_address == NULL || group_rank < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "store prefix: need a buffer, a store address "
                           "and group_rank >= 0");
    }
    int n = snprintf(buf, cap, "%s/torchft/%" PRId64 "/%" PRId64, store_address,
                     quorum_id, group_rank);
    if (n < 0 || (size_t)n >= cap) {
        buf[0] = '\0';
        return ftc__seterr(FTC_EMSGSIZE, "store prefix: %d B > %zu B", n,
                           cap - 1);
    }
    return 0;
}
