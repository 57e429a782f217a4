/* Strangers by client address (issue 15, exhaustion): with a token, a
 * connection that has not authenticated yet counts against its address,
 * and an address at ftc_store_server_opts.max_strangers_per_address
 * gives up its oldest stranger for the next one. So connections held open
 * from one address (slowloris, or idle ones) never fill the table, and a
 * client there that authenticates at once still gets in: what it evicts
 * is the flood's oldest, not its own. */
#include <netinet/in.h>
#include <string.h>

#include "store/server/server_int.h"

/* One client address with strangers open. */
struct store_host {
    ftc__list bucket_node; /* in srv->host_buckets[hash] */
    ftc__list strangers;   /* its stranger connections, oldest first */
    size_t n;
    uint8_t key[17]; /* family, then 4 or 16 address bytes */
};

/* The address of sa as a key; IPv4-mapped IPv6 counts as IPv4. */
static void host_key(const struct sockaddr *sa, uint8_t key[17])
{
    memset(key, 0, 17);
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
            key[0] = AF_INET;
            memcpy(key + 1, a6->sin6_addr.s6_addr + 12, 4);
        } else {
            key[0] = AF_INET6;
            memcpy(key + 1, a6->sin6_addr.s6_addr, 16);
        }
    } else if (sa->sa_family == AF_INET) {
        key[0] = AF_INET;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    }
}

static size_t bucket_of(const uint8_t key[17])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 17; i++) {
        h = (h ^ key[i]) * 16777619u;
    }
    return h % FTC__STORE_HOST_BUCKETS;
}

static struct store_host *find_or_add(struct ftc_store_server *srv,
                                      const uint8_t key[17])
{
    ftc__list *bucket = &srv->host_buckets[bucket_of(key)];
    for (ftc__list *n = bucket->next; n != bucket; n = n->next) {
        struct store_host *h =
            FTC_LIST_ENTRY(n, struct store_host, bucket_node);
        if (memcmp(h->key, key, 17) == 0) {
            return h;
        }
    }
    struct store_host *h = ftc__calloc(1, sizeof(*h));
    if (h != NULL) {
        memcpy(h->key, key, 17);
        ftc__list_init(&h->strangers);
        ftc__list_push_back(bucket, &h->bucket_node);
    }
    return h;
}

void ftc__store_hosts_init(struct ftc_store_server *srv)
{
    for (int i = 0; i < FTC__STORE_HOST_BUCKETS; i++) {
        ftc__list_init(&srv->host_buckets[i]);
    }
}

store_conn *ftc__store_hosts_add(store_conn *c, const struct sockaddr *peer)
{
    uint8_t key[17];
    host_key(peer, key);
    struct store_host *h = find_or_add(c->srv, key);
    if (h == NULL) {
        return NULL; /* no memory: not counted, still a stranger */
    }
    c->host = h;
    ftc__list_push_back(&h->strangers, &c->host_node);
    if (++h->n <= c->srv->opts.max_strangers_per_address) {
        return NULL;
    }
    return FTC_LIST_ENTRY(h->strangers.next, store_conn, host_node);
}

void ftc__store_hosts_remove(store_conn *c)
{
    struct store_host *h = c->host;
    if (h == NULL) {
        return;
    }
    ftc__list_remove(&c->host_node);
    c->host = NULL;
    if (--h->n == 0) {
        ftc__list_remove(&h->bucket_node);
        ftc__free(h);
    }
}
