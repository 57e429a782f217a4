/* 1,024 store clients at once against the embedded ftc server: each on its
 * own thread adds to a counter and parks in a get until the last one
 * arrives, so the server holds 1,024 parked one-write gets. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "testkit.h"

enum { K = 1024 };

static int port;
static atomic_int failures;

/* Each client is a socket here and another one in the embedded server. */
static void raise_nofile(rlim_t need)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= need) {
        return;
    }
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fail_msg("RLIMIT_NOFILE hard limit %llu < %llu: raise it (ulimit -Hn)",
                 (unsigned long long)rl.rlim_max, (unsigned long long)need);
    }
    rl.rlim_cur = need;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void *client(void *arg)
{
    (void)arg;
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ftc_store_client_opts o;
    ftc_store_client_opts_init(&o);
    o.connect_timeout_ms = tk_ms(60000);
    ftc_store_client *c = NULL;
    int rc = ftc_store_client_connect(addr, &o, &c);
    int64_t n = 0;
    if (rc == 0) {
        rc = ftc_store_client_add(c, "arrived", 1, &n, tk_ms(60000));
    }
    if (rc == 0 && n == K) {
        rc = ftc_store_client_set(c, "go", "go!", 3, tk_ms(60000));
    }
    void *v = NULL;
    size_t len = 0;
    if (rc == 0) {
        rc = ftc_store_client_get(c, "go", &v, &len, tk_ms(120000));
    }
    if (rc != 0 || len != 3 || memcmp(v, "go!", 3) != 0) {
        fprintf(stderr, "client: %s: %s\n", ftc_err_name(rc), ftc_last_error());
        atomic_fetch_add(&failures, 1);
    }
    ftc_free(v);
    ftc_store_client_close(c);
    return NULL;
}

static void thousand_clients_park_and_wake(void **state)
{
    (void)state;
    raise_nofile(3 * K);
    ftc_store_server_opts so;
    ftc_store_server_opts_init(&so);
    so.bind_host = "127.0.0.1";
    ftc_store_server *srv = NULL;
    TK_OK(ftc_store_server_create(&so, &srv));
    port = ftc_store_server_port(srv);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    static pthread_t t[K];
    for (int i = 0; i < K; i++) {
        assert_int_equal(pthread_create(&t[i], &attr, client, NULL), 0);
    }
    for (int i = 0; i < K; i++) {
        pthread_join(t[i], NULL);
    }
    pthread_attr_destroy(&attr);
    assert_int_equal(atomic_load(&failures), 0);
    ftc_store_server_stats st;
    TK_OK(ftc_store_server_stats_get(srv, &st));
    assert_int_equal(st.protocol_errors, 0);
    ftc_store_server_destroy(srv);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thousand_clients_park_and_wake),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
