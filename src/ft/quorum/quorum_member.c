/* The data a quorum carries: members (torchft QuorumMember) and decided
 * quorums, with deep copies, lookup by replica_id and torchft's
 * quorum_changed rule. */
#include <stddef.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/quorum/quorum_int.h"

_Static_assert(offsetof(ftc__quorum_member, replica_id) == 0,
               "lower_bound reads replica_id at offset 0");
_Static_assert(offsetof(ftc__quorum_participant, member) == 0,
               "lower_bound reads replica_id at offset 0");
_Static_assert(offsetof(ftc__quorum_heartbeat_record, replica_id) == 0,
               "lower_bound reads replica_id at offset 0");

int64_t ftc__quorum_elapsed_ms(int64_t now, int64_t then)
{
    if (then >= now) {
        return 0;
    }
    uint64_t d = (uint64_t)now - (uint64_t)then;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

int64_t ftc__quorum_add_ms(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

size_t ftc__quorum_lower_bound(const void *base, size_t n, size_t stride,
                               const char *id, bool *found)
{
    const char *p = base;
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(p + mid * stride, id) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = lo < n && strcmp(p + lo * stride, id) == 0;
    return lo;
}

int ftc__quorum_check_id(const char *id, const char *what)
{
    if (id == NULL || id[0] == '\0') {
        return ftc__seterr(FTC_EINVAL, "%s: replica_id is empty", what);
    }
    if (strnlen(id, FTC__QUORUM_STR_MAX) == FTC__QUORUM_STR_MAX) {
        return ftc__seterr(FTC_EINVAL, "%s: replica_id longer than %d bytes",
                           what, FTC__QUORUM_STR_MAX - 1);
    }
    return 0;
}

/* Copies src into a field of FTC__QUORUM_STR_MAX bytes, or says it is too
 * long. */
static int set_field(char *dst, const char *src, const char *what)
{
    size_t n = strnlen(src, FTC__QUORUM_STR_MAX);
    if (n == FTC__QUORUM_STR_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "quorum member: %s longer than %d B",
                           what, FTC__QUORUM_STR_MAX - 1);
    }
    memcpy(dst, src, n + 1);
    return 0;
}

int ftc__quorum_member_set(ftc__quorum_member *m, const char *replica_id,
                           const char *address, const char *store_address)
{
    if (replica_id == NULL || address == NULL || store_address == NULL ||
        replica_id[0] == '\0') {
        return ftc__seterr(FTC_EINVAL,
                           "quorum member: replica_id must be non-empty and "
                           "no string NULL");
    }
    ftc__quorum_member tmp;
    memset(&tmp, 0, sizeof(tmp));
    int rc = set_field(tmp.replica_id, replica_id, "replica_id");
    if (rc == 0) {
        rc = set_field(tmp.address, address, "address");
    }
    if (rc == 0) {
        rc = set_field(tmp.store_address, store_address, "store_address");
    }
    if (rc == 0) {
        *m = tmp;
    }
    return rc;
}

int ftc__quorum_member_copy(ftc__quorum_member *dst,
                            const ftc__quorum_member *src)
{
    *dst = *src;
    dst->data = NULL;
    dst->data_len = 0;
    dst->suspects = NULL;
    dst->suspects_len = 0;
    dst->n_suspects = 0;
    char *data = src->data_len > 0 ? ftc__malloc(src->data_len + 1) : NULL;
    char *suspects = src->suspects_len > 0
                         ? ftc__memdup(src->suspects, src->suspects_len)
                         : NULL;
    if ((src->data_len > 0 && data == NULL) ||
        (src->suspects_len > 0 && suspects == NULL)) {
        ftc__free(data);
        ftc__free(suspects);
        return ftc__seterr(FTC_ENOMEM, "quorum member: %zu B of data",
                           src->data_len + src->suspects_len);
    }
    if (data != NULL) {
        memcpy(data, src->data, src->data_len);
        data[src->data_len] = '\0';
        dst->data = data;
        dst->data_len = src->data_len;
    }
    if (suspects != NULL) {
        dst->suspects = suspects;
        dst->suspects_len = src->suspects_len;
        dst->n_suspects = src->n_suspects;
    }
    return 0;
}

void ftc__quorum_member_fini(ftc__quorum_member *m)
{
    ftc__free(m->data);
    m->data = NULL;
    m->data_len = 0;
    ftc__quorum_member_clear_suspects(m);
}

void ftc__quorum_member_clear_suspects(ftc__quorum_member *m)
{
    ftc__free(m->suspects);
    m->suspects = NULL;
    m->suspects_len = 0;
    m->n_suspects = 0;
}

int ftc__quorum_member_set_suspects(ftc__quorum_member *m,
                                    const char *const *ids, size_t n)
{
    if (n > FTC__QUORUM_SUSPECTS_MAX) {
        return ftc__seterr(FTC_EMSGSIZE, "member %s: %zu suspects, at most %d",
                           m->replica_id, n, FTC__QUORUM_SUSPECTS_MAX);
    }
    if (n > 0 && ids == NULL) {
        return ftc__seterr(FTC_EINVAL, "member %s: %zu suspects at NULL",
                           m->replica_id, n);
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = ftc__quorum_check_id(ids[i], "suspect");
        if (rc != 0) {
            return rc;
        }
        len += strlen(ids[i]) + 1;
    }
    char *buf = len > 0 ? ftc__malloc(len) : NULL;
    if (len > 0 && buf == NULL) {
        return ftc__seterr(FTC_ENOMEM, "member %s: %zu B of suspects",
                           m->replica_id, len);
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(ids[i]) + 1;
        memcpy(buf + at, ids[i], k);
        at += k;
    }
    m->suspects = buf;
    m->suspects_len = len;
    m->n_suspects = (uint32_t)n;
    return 0;
}

void ftc__quorum_init(ftc__quorum *q)
{
    memset(q, 0, sizeof(*q));
}

void ftc__quorum_fini(ftc__quorum *q)
{
    for (size_t i = 0; i < q->n; i++) {
        ftc__quorum_member_fini(&q->members[i]);
    }
    ftc__free(q->members);
    ftc__quorum_init(q);
}

int ftc__quorum_copy(ftc__quorum *dst, const ftc__quorum *src)
{
    ftc__quorum tmp = *src;
    tmp.members = NULL;
    tmp.n = 0;
    if (src->n > 0) {
        tmp.members = ftc__calloc(src->n, sizeof(*tmp.members));
        if (tmp.members == NULL) {
            return ftc__seterr(FTC_ENOMEM, "quorum copy: %zu members", src->n);
        }
    }
    for (size_t i = 0; i < src->n; i++) {
        int rc = ftc__quorum_member_copy(&tmp.members[i], &src->members[i]);
        if (rc != 0) {
            ftc__quorum_fini(&tmp);
            return rc;
        }
        tmp.n = i + 1;
    }
    *dst = tmp;
    return 0;
}

long ftc__quorum_find(const ftc__quorum *q, const char *replica_id)
{
    bool found;
    size_t i = ftc__quorum_lower_bound(q->members, q->n, sizeof(*q->members),
                                       replica_id, &found);
    return found ? (long)i : -1;
}

bool ftc__quorum_members_changed(const ftc__quorum_member *a, size_t na,
                                 const ftc__quorum_member *b, size_t nb)
{
    if (na != nb) {
        return true;
    }
    for (size_t i = 0; i < na; i++) {
        if (strcmp(a[i].replica_id, b[i].replica_id) != 0) {
            return true;
        }
    }
    return false;
}

bool ftc__quorum_same_entry(const ftc__quorum_member *x,
                            const ftc__quorum_member *y)
{
    return strcmp(x->replica_id, y->replica_id) == 0 &&
           strcmp(x->address, y->address) == 0 &&
           strcmp(x->store_address, y->store_address) == 0 &&
           x->world_size == y->world_size && x->data_len == y->data_len &&
           (x->data_len == 0 || memcmp(x->data, y->data, x->data_len) == 0);
}

bool ftc__quorum_same_roster(const ftc__quorum *a, const ftc__quorum *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (!ftc__quorum_same_entry(&a->members[i], &b->members[i])) {
            return false;
        }
    }
    return true;
}
