/* The healing server under hostile streams while a healer pulls a real
 * state from it: 300 connections held open (a third of them stalled in
 * the middle of a request line), garbage bytes, and requests announcing a
 * terabyte body (answered 413 at once, the body never read). Fetches run
 * back to back on their own thread for the whole attack and every one
 * must land bit-exact. And a flood of connections from addresses that do
 * not heal leaves the healer its reserved room. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "lighthouse_kit.h"
#include "testkit.h"

#define NX ((size_t)1 << 20) /* floats: a 4 MiB state */
#define CHUNK (64 * 1024)    /* 64 chunks */
#define HELD 300             /* hostile connections held open */

/* A healer fetching the source's state again and again until told to
 * stop, each time into a scrambled buffer that must end equal. */
typedef struct healer {
    const char *addr;
    const float *want;
    ftc__heal_state layout;
    float *x;
    atomic_bool stop;
    atomic_int fetched; /* fetches that landed bit-exact */
    atomic_int rc;      /* the first failure */
    char why[256];
} healer;

static void *heal_loop(void *arg)
{
    healer *h = arg;
    ftc__heal_client *cli;
    int rc = ftc__heal_client_create(&cli);
    const char *src[] = {h->addr};
    void *dest[] = {h->x};
    while (rc == 0 && !atomic_load(&h->stop)) {
        memset(h->x, 0xee, NX * sizeof(float));
        const ftc__heal_fetch f = {.sources = src,
                                   .n_sources = 1,
                                   .step = 7,
                                   .layout = &h->layout,
                                   .dest = dest};
        ftc__heal_fetch_result res;
        rc = ftc__heal_client_fetch(cli, &f, ftc__deadline_in_ms(tk_ms(20000)),
                                    &res);
        if (rc == 0 && memcmp(h->x, h->want, NX * sizeof(float)) != 0) {
            rc = ftc__seterr(FTC_EPROTO, "fetch %d landed different bytes",
                             atomic_load(&h->fetched));
        }
        if (rc == 0) {
            atomic_fetch_add(&h->fetched, 1);
        }
    }
    if (rc != 0) {
        snprintf(h->why, sizeof(h->why), "%s", ftc_last_error());
        atomic_store(&h->rc, rc); /* after why: the main thread reads it */
    }
    ftc__heal_client_destroy(cli);
    return NULL;
}

/* A healing server publishing a 4 MiB state at step 7. */
typedef struct source {
    float *want;
    ftc__heal_state st;
    ftc__heal_buf buf;
    ftc__heal_snapshot *snap;
    ftc__heal_server *srv;
    const char *addr;
    char host[64];
    int port;
} source;

static void source_start(source *s, const ftc__heal_server_opts *o, float base)
{
    s->want = malloc(NX * sizeof(float));
    for (size_t i = 0; i < NX; i++) {
        s->want[i] = (float)i * 0.5f + base;
    }
    ftc__heal_state_init(&s->st);
    int64_t dims[] = {(int64_t)NX};
    TK_OK(ftc__heal_buf_set(&s->buf, "x", FTC_DTYPE_F32, dims, 1, 4));
    TK_OK(ftc__heal_state_add(&s->st, &s->buf, s->want));
    TK_OK(ftc__heal_snapshot_take(&s->st, 7, 3, CHUNK, 1, &s->snap));
    TK_OK(ftc__heal_server_start(&s->srv, o));
    ftc__heal_server_publish(s->srv, s->snap);
    s->addr = ftc__heal_server_address(s->srv);
    TK_OK(ftc__addr_split(s->addr, -1, s->host, sizeof(s->host), &s->port));
}

static void source_stop(source *s)
{
    ftc__heal_server_stop(s->srv);
    ftc__heal_snapshot_unref(s->snap);
    ftc__heal_state_fini(&s->st);
    free(s->want);
}

/* Starts h fetching from s on thread t. */
static void healer_start(healer *h, const source *s, pthread_t *t)
{
    *h = (healer){.addr = s->addr, .want = s->want};
    h->x = malloc(NX * sizeof(float));
    ftc__heal_state_init(&h->layout);
    TK_OK(ftc__heal_state_add(&h->layout, &s->buf, h->x));
    assert_int_equal(pthread_create(t, NULL, heal_loop, h), 0);
}

/* Stops h, failing the test if a fetch of its failed. */
static void healer_stop(healer *h, pthread_t t)
{
    atomic_store(&h->stop, true);
    pthread_join(t, NULL);
    if (atomic_load(&h->rc) != 0) {
        fail_msg("fetch %d failed: %s", atomic_load(&h->fetched), h->why);
    }
    ftc__heal_state_fini(&h->layout);
    free(h->x);
}

/* Sends a raw request and expects the answer `status` (or, NULL, no
 * answer or a 4xx), then the server closing the connection, well before
 * its idle timeout (30 s). */
static void expect_refused(const char *addr, const char *req, size_t len,
                           const char *status)
{
    char reply[4096];
    bool closed;
    lt_raw(addr, req, len, reply, sizeof(reply), 10000, &closed);
    if (status != NULL) {
        if (strncmp(reply, status, strlen(status)) != 0) {
            fail_msg("expected '%s', got '%.80s'", status, reply);
        }
    } else if (reply[0] != '\0' && strncmp(reply, "HTTP/1.1 4", 10) != 0) {
        fail_msg("garbage answered '%.80s'", reply);
    }
    assert_true(closed);
}

static void hostile_streams_during_a_fetch(void **state)
{
    (void)state;
    /* Room for the held connections next to the healer's: what is under
     * test is that they disturb nobody, not the connection limit. */
    ftc__heal_server_opts o = {.max_connections = 1024,
                               .max_connections_per_address = 1024};
    source src;
    source_start(&src, &o, -3.0f);
    const char *addr = src.addr, *host = src.host;
    int port = src.port;
    healer h;
    pthread_t t;
    healer_start(&h, &src, &t);
    TK_WAIT_UNTIL(atomic_load(&h.fetched) >= 1 || atomic_load(&h.rc) != 0,
                  20000);

    int fds[HELD];
    static const char half[] = "GET /v1/heal/7/me";
    for (int i = 0; i < HELD; i++) {
        TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(tk_ms(5000)),
                                NULL, &fds[i]));
        if (i % 3 == 0) {
            TK_OK(ftc__sock_send_all(fds[i], half, sizeof(half) - 1,
                                     ftc__deadline_in_ms(tk_ms(5000)), NULL));
        }
    }
    int before = atomic_load(&h.fetched);
    static const char garbage[] = "\x16\x03\x01\x02\x00\x01\xff\xfe\x00zz\r\n"
                                  "\x80\x81 / HTTP/9.9\r\n\r\n";
    expect_refused(addr, garbage, sizeof(garbage) - 1, NULL);
    /* A terabyte announced, a few bytes of it sent: 413 and closed. */
    static const char tera[] = "POST /v1/heal/7/release?replica=r HTTP/1.1\r\n"
                               "Host: x\r\n"
                               "Content-Length: 1000000000000\r\n\r\n"
                               "0123456789";
    expect_refused(addr, tera, sizeof(tera) - 1, "HTTP/1.1 413");
    static const char tera_get[] = "GET /v1/heal/7/meta HTTP/1.1\r\n"
                                   "Host: x\r\n"
                                   "Content-Length: 1000000000000\r\n\r\n";
    expect_refused(addr, tera_get, sizeof(tera_get) - 1, "HTTP/1.1 413");
    static const char chunked[] =
        "POST /v1/heal/7/release?replica=r HTTP/1.1\r\n"
        "Host: x\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
        "ffffffffff\r\n";
    expect_refused(addr, chunked, sizeof(chunked) - 1, "HTTP/1.1 413");
    /* Whole fetches completed while every hostile connection is held. */
    TK_WAIT_UNTIL(atomic_load(&h.fetched) >= before + 2 ||
                      atomic_load(&h.rc) != 0,
                  30000);
    assert_int_equal(lt_http(addr, "GET", "/v1/heal/7/meta", NULL, NULL, NULL),
                     200);
    for (int i = 0; i < HELD; i++) {
        close(fds[i]);
    }
    healer_stop(&h, t);
    ftc__heal_server_stats hs;
    ftc__heal_server_stats_get(src.srv, &hs);
    assert_int_equal(hs.refused, 3); /* the three bodies */
    printf("%d fetches of %zu B bit-exact, %d of them with %d hostile "
           "connections held\n",
           atomic_load(&h.fetched), NX * sizeof(float),
           atomic_load(&h.fetched) - before, HELD);
    source_stop(&src);
}

static ftc__heal_server_stats stats_of(ftc__heal_server *s)
{
    ftc__heal_server_stats st;
    ftc__heal_server_stats_get(s, &st);
    return st;
}

/* n connections from `from`; returns when the server has admitted or
 * refused each of them (it decides at accept, in order). */
static void flood_from(ftc__heal_server *srv, const char *from,
                       const char *host, int port, int n, int *fds, int *k)
{
    ftc__heal_server_stats before = stats_of(srv);
    char addr[96];
    snprintf(addr, sizeof(addr), "%s:%d", host, port);
    for (int i = 0; i < n; i++) {
        fds[(*k)++] = lt_connect_from(from, addr, "GET /v1/heal/7/me");
    }
    TK_WAIT_UNTIL(stats_of(srv).connections_refused +
                          stats_of(srv).stranger_connections ==
                      before.connections_refused + before.stranger_connections +
                          (uint64_t)n,
                  20000);
}

/* A flood of held-open connections from addresses that are not healing
 * (slowloris, from several addresses) takes only the strangers' share of
 * the table and a few per address: the healer the manager vouched for
 * still gets its connections at once and its state lands bit-exact. */
static void flood_leaves_room_for_the_healers(void **state)
{
    (void)state;
    enum { MAX = 64, PER_ADDRESS = 8, FROM = 10 };
    ftc__heal_server_opts o = {.max_connections = MAX,
                               .max_connections_per_address = PER_ADDRESS};
    source src;
    source_start(&src, &o, 1.0f);
    ftc__heal_server *srv = src.srv;
    const char *host = src.host;
    int port = src.port;
    /* The healer is on 127.0.0.1; the lighthouse named it. */
    const char *healer_addr = "127.0.0.1:1";
    ftc__heal_server_vouch(srv, &healer_addr, 1);

    /* One address gets PER_ADDRESS connections. */
    int fds[FROM * 2 * PER_ADDRESS + 1];
    int k = 0;
    flood_from(srv, "127.0.0.2", host, port, 2 * PER_ADDRESS, fds, &k);
    assert_int_equal(stats_of(srv).stranger_connections, PER_ADDRESS);
    assert_int_equal(stats_of(srv).connections_refused, PER_ADDRESS);
    /* All addresses together get the table less its reserve (MAX / 4). */
    for (int a = 1; a < FROM; a++) {
        char from[32];
        snprintf(from, sizeof(from), "127.0.0.%d", 2 + a);
        flood_from(srv, from, host, port, 2 * PER_ADDRESS, fds, &k);
    }
    ftc__heal_server_stats flooded = stats_of(srv);
    print_message("held %llu, refused %llu\n",
                  (unsigned long long)flooded.stranger_connections,
                  (unsigned long long)flooded.connections_refused);
    assert_int_equal(flooded.stranger_connections, MAX - MAX / 4);
    /* A fresh address too is refused now. */
    flood_from(srv, "127.0.0.99", host, port, 1, fds, &k);
    assert_int_equal(stats_of(srv).connections_refused,
                     flooded.connections_refused + 1);

    /* The healer: every fetch lands, while the flood is held. */
    healer h;
    pthread_t t;
    healer_start(&h, &src, &t);
    TK_WAIT_UNTIL(atomic_load(&h.fetched) >= 3 || atomic_load(&h.rc) != 0,
                  20000);
    healer_stop(&h, t);
    assert_int_equal(stats_of(srv).stranger_connections, MAX - MAX / 4);
    for (int i = 0; i < k; i++) {
        close(fds[i]);
    }
    source_stop(&src);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flood_leaves_room_for_the_healers),
        cmocka_unit_test(hostile_streams_during_a_fetch),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
