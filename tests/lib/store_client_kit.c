/* Value checks, counters and blocked-call helpers for the store client's
 * tests. */
#include "store_client_kit.h"

#include <string.h>

#include "store/client/client_int.h"
#include "testkit.h"

ftc_store_client *sck_connect(const char *addr, int dialect)
{
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.dialect = dialect;
    o.connect_timeout_ms = tk_ms(30000);
    ftc_store_client *c = NULL;
    return ftc_store_client_connect(addr, &o, &c) == 0 ? c : NULL;
}

uint64_t sck_requests(ftc_store_server *srv)
{
    ftc_store_server_stats st;
    TK_OK(ftc_store_server_stats_get(srv, &st));
    return st.requests;
}

uint64_t sck_writes(ftc_store_client *c)
{
    return atomic_load(&c->core->conn.writes);
}

uint64_t sck_connects(ftc_store_client *c)
{
    return atomic_load(&c->core->conn.connects);
}

void sck_expect_value(ftc_store_client *c, const char *key, const void *want,
                      size_t want_len, int64_t timeout_ms)
{
    void *v = NULL;
    size_t n = 0;
    TK_OK(ftc_store_client_get(c, key, &v, &n, timeout_ms));
    assert_non_null(v);
    assert_int_equal(n, want_len);
    assert_memory_equal(v, want, n);
    ftc_free(v);
}

void sck_expect_str(ftc_store_client *c, const char *key, const char *want,
                    int64_t timeout_ms)
{
    sck_expect_value(c, key, want, strlen(want), timeout_ms);
}

void sck_set_str(ftc_store_client *c, const char *key, const char *v,
                 int64_t timeout_ms)
{
    TK_OK(ftc_store_client_set(c, key, v, strlen(v), timeout_ms));
}

static void *call_forever(void *arg)
{
    sck_blocked *b = arg;
    b->rc = b->call(b->client, b->key);
    atomic_store(&b->done, 1);
    return NULL;
}

void sck_block_in(sck_blocked *b, ftc_store_client *client, const char *key,
                  int (*call)(ftc_store_client *c, const char *key))
{
    b->client = client;
    b->key = key;
    b->call = call;
    b->rc = 0;
    atomic_store(&b->done, 0);
    assert_int_equal(pthread_create(&b->thread, NULL, call_forever, b), 0);
}

static int get_forever(ftc_store_client *c, const char *key)
{
    void *v = NULL;
    size_t n = 0;
    int rc = ftc_store_client_get(c, key, &v, &n, FTC_TIMEOUT_INFINITE);
    ftc_free(v);
    return rc;
}

void sck_block_in_get(sck_blocked *b, ftc_store_client *client, const char *key)
{
    sck_block_in(b, client, key, get_forever);
}

int sck_cancel_and_join(sck_blocked *b, ftc_store_client *canceller)
{
    TK_WAIT_UNTIL((ftc_store_client_cancel(canceller), atomic_load(&b->done)),
                  10000);
    pthread_join(b->thread, NULL);
    return b->rc;
}
