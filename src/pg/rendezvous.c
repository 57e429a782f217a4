/* ftc_pg_create: rendezvous through a store. The pg layer agrees on a
 * fresh group id (rank 0's random number, under "<prefix>/backend/group")
 * and calls the chosen backend's create. tcp's create (here): every rank
 * publishes "host:port|nonce" under "<prefix>/pg/rank/<r>", fetches all
 * of them in one multi_get (which waits for the missing ones), and
 * connects the mesh. */
#include <stdlib.h>

#include "pg/pg_int.h"
#include "pg/tcp/tcp.h"

#define KEY_MAX 512
#define VALUE_MAX (FTC_HOST_MAX + 40)

/* Parses "host:port|nonce"; the address is copied into addr. */
static int parse(const ftc_store_value *v, int rank, char *addr, size_t cap,
                 uint64_t *nonce)
{
    char text[VALUE_MAX + 1];
    if (v->len == 0 || v->len > VALUE_MAX) {
        return ftc__seterr(FTC_EPROTO, "rank %d published %zu bytes", rank,
                           v->len);
    }
    memcpy(text, v->data, v->len);
    text[v->len] = '\0';
    char *bar = strrchr(text, '|');
    char *end = NULL;
    if (bar != NULL) {
        *bar = '\0';
        *nonce = strtoull(bar + 1, &end, 16);
    }
    if (bar == NULL || end == bar + 1 || *end != '\0' || strlen(text) >= cap) {
        return ftc__seterr(FTC_EPROTO, "rank %d published '%.*s'", rank,
                           (int)v->len, (const char *)v->data);
    }
    memcpy(addr, text, strlen(text) + 1);
    return 0;
}

static void key_of(char *out, const char *prefix, int rank)
{
    snprintf(out, KEY_MAX, "%s/pg/rank/%d", prefix, rank);
}

int ftc__tcp_create(const ftc_pg_backend_create_args *args, void **impl)
{
    *impl = NULL;
    if (args->store == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "tcp: a subgroup is built by ftc_pg_split");
    }
    ftc_store_client *store = args->store;
    const char *prefix = args->prefix;
    int rank = args->rank, size = args->size;
    ftc__deadline dl = {args->deadline_ns};
    ftc__pg_listener l;
    int rc = ftc__pg_listen(args->opts->host, &l);
    if (rc != 0) {
        return rc;
    }
    char(*keys)[KEY_MAX] = ftc__calloc((size_t)size, KEY_MAX);
    const char **kp = ftc__calloc((size_t)size, sizeof(*kp));
    char(*addrs)[FTC_HOST_MAX + 16] =
        ftc__calloc((size_t)size, FTC_HOST_MAX + 16);
    const char **ap = ftc__calloc((size_t)size, sizeof(*ap));
    ftc_store_value *vals = ftc__calloc((size_t)size, sizeof(*vals));
    if (!keys || !kp || !addrs || !ap || !vals) {
        rc = ftc__seterr(FTC_ENOMEM, "create: out of memory");
    }
    for (int i = 0; rc == 0 && i < size; i++) {
        key_of(keys[i], prefix, i);
        kp[i] = keys[i];
        ap[i] = addrs[i];
    }
    if (rc == 0) {
        char value[VALUE_MAX + 1];
        int n = snprintf(value, sizeof(value), "%s|%016llx", l.addr,
                         (unsigned long long)ftc__rand_u64());
        rc = ftc_store_client_set(store, keys[rank], value, (size_t)n,
                                  ftc__deadline_left_ms(dl));
    }
    if (rc == 0) {
        rc = ftc_store_client_multi_get(store, kp, (size_t)size, vals,
                                        ftc__deadline_left_ms(dl));
    }
    uint64_t nonce = 0;
    for (int i = 0; rc == 0 && i < size; i++) {
        rc = parse(&vals[i], i, addrs[i], FTC_HOST_MAX + 16, &nonce);
    }
    if (rc == 0) {
        rc = ftc__tcp_build(args->group, &l, ap, args->group_id,
                            args->deadline_ns, impl);
    } else {
        ftc__adderr(rc, "process group rendezvous under '%s'", prefix);
        ftc__pg_listener_close(&l);
    }
    if (vals != NULL) {
        ftc_store_values_free(vals, (size_t)size);
    }
    ftc__free(vals);
    ftc__free(keys);
    ftc__free(kp);
    ftc__free(addrs);
    ftc__free(ap);
    return rc;
}

int ftc_pg_create(ftc_store_client *store, const char *prefix, int rank,
                  int size, const ftc_pg_opts *opts, ftc_pg **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EINVAL, "create: out is NULL");
    }
    *out = NULL;
    if (store == NULL || prefix == NULL || prefix[0] == '\0' ||
        strlen(prefix) > KEY_MAX - 32 || size < 1 || rank < 0 || rank >= size) {
        return ftc__seterr(FTC_EINVAL,
                           "create: needs a store, a prefix and 0 <= rank "
                           "(%d) < size (%d)",
                           rank, size);
    }
    ftc_pg_opts o;
    int rc = ftc__pg_resolve_opts(&o, opts);
    const ftc_pg_backend *be = NULL;
    if (rc == 0) {
        /* Before anything is published: a backend that cannot be loaded
         * leaves no trace in the store. */
        rc = ftc__pg_backend_get(ftc__pg_backend_choose(&o, "tcp"), &be);
    }
    if (rc == 0 && strcmp(be->name, "xccl") == 0) {
        rc = ftc__xccl_prepare(&o, rank, size); /* oneCCL loaded here */
    }
    if (rc != 0) {
        return rc;
    }
    ftc__deadline dl =
        ftc__deadline_from_timeout(o.connect_timeout_ms, o.connect_timeout_ms);
    ftc_pg_backend_rendezvous rv = {
        .store = store, .prefix = prefix, .rank = rank, .size = size};
    uint8_t id[8];
    ftc__put_u64le(id, ftc__rand_u64());
    rc = ftc_pg_backend_exchange(&rv, "group", id, sizeof(id), dl.ns);
    if (rc != 0) {
        return ftc__adderr(rc, "process group rendezvous under '%s'", prefix);
    }
    return ftc__pg_build(be, &rv, rank, size, NULL, ftc__get_u64le(id), &o,
                         dl.ns, out);
}
