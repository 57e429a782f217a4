/* The healing server under hostile streams while a healer pulls a real
 * state from it: 300 connections held open (a third of them stalled in
 * the middle of a request line), garbage bytes, and requests announcing a
 * terabyte body (answered 413 at once, the body never read). Fetches run
 * back to back on their own thread for the whole attack and every one
 * must land bit-exact. */
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
    float *want = malloc(NX * sizeof(float));
    for (size_t i = 0; i < NX; i++) {
        want[i] = (float)i * 0.5f - 3.0f;
    }
    ftc__heal_state st;
    ftc__heal_state_init(&st);
    ftc__heal_buf buf;
    int64_t dims[] = {(int64_t)NX};
    TK_OK(ftc__heal_buf_set(&buf, "x", FTC_DTYPE_F32, dims, 1, 4));
    TK_OK(ftc__heal_state_add(&st, &buf, want));
    ftc__heal_snapshot *snap;
    TK_OK(ftc__heal_snapshot_take(&st, 7, 3, CHUNK, 1, &snap));
    /* Room for the held connections next to the healer's: what is under
     * test is that they disturb nobody, not the connection limit. */
    ftc__heal_server_opts o = {0};
    o.max_connections = 1024;
    ftc__heal_server *srv;
    TK_OK(ftc__heal_server_start(&srv, &o));
    ftc__heal_server_publish(srv, snap);
    const char *addr = ftc__heal_server_address(srv);
    char host[64];
    int port;
    TK_OK(ftc__addr_split(addr, -1, host, sizeof(host), &port));

    healer h = {.addr = addr, .want = want};
    h.x = malloc(NX * sizeof(float));
    ftc__heal_state_init(&h.layout);
    TK_OK(ftc__heal_state_add(&h.layout, &buf, h.x));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, heal_loop, &h), 0);
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
    atomic_store(&h.stop, true);
    pthread_join(t, NULL);
    if (atomic_load(&h.rc) != 0) {
        fail_msg("fetch %d failed: %s", atomic_load(&h.fetched), h.why);
    }
    ftc__heal_server_stats hs;
    ftc__heal_server_stats_get(srv, &hs);
    assert_int_equal(hs.refused, 3); /* the three bodies */
    printf("%d fetches of %zu B bit-exact, %d of them with %d hostile "
           "connections held\n",
           atomic_load(&h.fetched), NX * sizeof(float),
           atomic_load(&h.fetched) - before, HELD);
    ftc__heal_server_stop(srv);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&st);
    ftc__heal_state_fini(&h.layout);
    free(h.x);
    free(want);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_streams_during_a_fetch),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
