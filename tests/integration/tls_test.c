/* TLS on the HTTP planes (docs/security.md), with certificates openssl
 * makes for this run: a client that trusts the server's certificate (as
 * its CA, which for a self-signed one is pinning it) reaches the
 * lighthouse and the healing servers over https, state arriving bit for
 * bit through both the metadata (libcurl) and the chunk (GnuTLS) paths; a
 * certificate of another key, of another name, or none trusted, is
 * refused with FTC_EAUTH and the server goes on serving; and a token never
 * goes in clear text to another host unless the caller says insecure. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/base_int.h"
#include "base/sock.h"
#include "ft/heal/heal.h"
#include "ft/heal/heal_client_int.h"
#include "ft/heal/heal_tls.h"
#include "ftc/ftc.h"
#include "testkit.h"

#define TOKEN "tls-test-token-0123456789abcdef"

static char good_cert[512], good_key[512];   /* IP:127.0.0.1, localhost */
static char other_cert[512], other_key[512]; /* the same names, another key */
static char far_cert[512], far_key[512];     /* IP:127.0.0.2 only */

/* A self-signed P-256 certificate for san, in the test's scratch folder. */
static void make_cert(const char *name, const char *san, char *cert, char *key)
{
    snprintf(cert, 512, "%s/%s.pem", tk_tmpdir(), name);
    snprintf(key, 512, "%s/%s.key", tk_tmpdir(), name);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt "
             "ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=%s "
             "-addext subjectAltName=%s -keyout %s -out %s 2>/dev/null",
             name, san, key, cert);
    assert_int_equal(system(cmd), 0);
}

static int make_certs(void **state)
{
    (void)state;
    make_cert("good", "IP:127.0.0.1,DNS:localhost", good_cert, good_key);
    make_cert("other", "IP:127.0.0.1,DNS:localhost", other_cert, other_key);
    make_cert("far", "IP:127.0.0.2", far_cert, far_key);
    return 0;
}

/* ---------------------------------------------------------- lighthouse */

static ftc_lighthouse *lighthouse(const char *cert, const char *key, char *url,
                                  size_t cap)
{
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    o.token = TOKEN;
    o.tls_cert = cert;
    o.tls_key = key;
    ftc_lighthouse *lh = NULL;
    TK_OK(ftc_lighthouse_create(&o, &lh));
    snprintf(url, cap, "https://127.0.0.1:%d", ftc_lighthouse_port(lh));
    return lh;
}

/* A heartbeat to url trusting ca (NULL: the system's CAs); its result. */
static int heartbeat(const char *url, const char *ca)
{
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.token = TOKEN;
    o.tls_ca = ca;
    o.retry_max_ms = 50;
    ftc_lighthouse_client *c = NULL;
    TK_OK(ftc_lighthouse_client_create(url, &o, &c));
    int rc = ftc_lighthouse_client_heartbeat(c, "a", tk_ms(3000), NULL);
    print_message("heartbeat %s trusting %s: %s %s\n", url,
                  ca != NULL ? ca : "the system", ftc_strerror(rc),
                  rc != 0 ? ftc_last_error() : "");
    ftc_lighthouse_client_destroy(c);
    return rc;
}

static void lighthouse_over_tls(void **state)
{
    (void)state;
    char url[128];
    ftc_lighthouse *lh = lighthouse(good_cert, good_key, url, sizeof(url));
    TK_OK(heartbeat(url, good_cert));
    /* The reads go over https too. */
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.token = TOKEN;
    o.tls_ca = good_cert;
    ftc_lighthouse_client *c = NULL;
    TK_OK(ftc_lighthouse_client_create(url, &o, &c));
    char *json = NULL;
    TK_OK(ftc_lighthouse_client_status(c, NULL, tk_ms(3000), &json));
    assert_non_null(strstr(json, "\"jobs\""));
    ftc_free(json);
    ftc_lighthouse_client_destroy(c);
    /* A certificate of another key, or none trusted: refused at once. */
    TK_EXPECT(heartbeat(url, other_cert), FTC_EAUTH);
    TK_EXPECT(heartbeat(url, NULL), FTC_EAUTH);
    /* Clear text to a TLS port gets no answer. */
    char plain[128];
    snprintf(plain, sizeof(plain), "http://%s", url + strlen("https://"));
    assert_int_not_equal(heartbeat(plain, NULL), 0);
    /* The server went on serving. */
    TK_OK(heartbeat(url, good_cert));
    ftc_lighthouse_destroy(lh);

    /* A certificate for another address, trusted, is still refused. */
    lh = lighthouse(far_cert, far_key, url, sizeof(url));
    TK_EXPECT(heartbeat(url, far_cert), FTC_EAUTH);
    ftc_lighthouse_destroy(lh);
}

static void bad_tls_options(void **state)
{
    (void)state;
    ftc_lighthouse_opts o;
    ftc_lighthouse_opts_init(&o);
    o.bind = "127.0.0.1:0";
    ftc_lighthouse *lh = NULL;
    o.tls_cert = good_cert; /* without its key */
    TK_EXPECT(ftc_lighthouse_create(&o, &lh), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "go together"));
    o.tls_key = "/nonexistent/key.pem";
    TK_EXPECT(ftc_lighthouse_create(&o, &lh), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "/nonexistent/key.pem"));
    o.tls_key = "/proc/self/cmdline"; /* not PEM */
    TK_EXPECT(ftc_lighthouse_create(&o, &lh), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "not a PEM file"));
    o.tls_key = other_key; /* PEM, but not the certificate's key */
    TK_EXPECT(ftc_lighthouse_create(&o, &lh), FTC_ESYS);
    assert_null(lh);
}

/* ---------------------------------------------------- the token's rule */

/* An IPv4 address of this host that is not loopback ("" if none). */
static void own_address(char *out, size_t cap)
{
    out[0] = '\0';
    struct ifaddrs *ifs = NULL;
    TK_OK(getifaddrs(&ifs));
    for (struct ifaddrs *i = ifs; i != NULL && out[0] == '\0';
         i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *a = (const void *)i->ifa_addr;
            if ((ntohl(a->sin_addr.s_addr) >> 24) != 127) {
                inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)cap);
            }
        }
    }
    freeifaddrs(ifs);
}

static int client_create(const char *addr, const char *token, bool insecure)
{
    ftc_lighthouse_client_opts o;
    ftc_lighthouse_client_opts_init(&o);
    o.token = token;
    o.insecure = insecure;
    ftc_lighthouse_client *c = NULL;
    int rc = ftc_lighthouse_client_create(addr, &o, &c);
    ftc_lighthouse_client_destroy(c);
    return rc;
}

static void token_never_in_clear_to_another_host(void **state)
{
    (void)state;
    /* 203.0.113.0/24 is TEST-NET-3 (documentation only), not this host. */
    assert_false(ftc__addr_this_host("203.0.113.7"));
    TK_EXPECT(client_create("203.0.113.7:29510", TOKEN, false), FTC_EINVAL);
    assert_non_null(strstr(ftc_last_error(), "clear text"));
    TK_EXPECT(client_create("http://203.0.113.7:29510", TOKEN, false),
              FTC_EINVAL);
    TK_OK(client_create("https://203.0.113.7:29510", TOKEN, false));
    TK_OK(client_create("203.0.113.7:29510", TOKEN, true));
    TK_OK(client_create("203.0.113.7:29510", NULL, false));
    TK_OK(client_create("127.0.0.1:29510", TOKEN, false));
    TK_OK(client_create("[::1]:29510", TOKEN, false));
    TK_OK(client_create("localhost:29510", TOKEN, false));
    char mine[64], addr[96];
    own_address(mine, sizeof(mine));
    print_message("this host's own address: '%s'\n", mine);
    if (mine[0] != '\0') {
        /* Bytes to the host's own address never reach a wire. */
        snprintf(addr, sizeof(addr), "%s:29510", mine);
        TK_OK(client_create(addr, TOKEN, false));
    }

    /* The healing client refuses such a source before any byte. */
    ftc__heal_client *cli = NULL;
    TK_OK(ftc__heal_client_create(&cli));
    TK_EXPECT(ftc__heal_token_may_go(cli, "203.0.113.7:4000"), FTC_EINVAL);
    TK_OK(ftc__heal_token_may_go(cli, "https://203.0.113.7:4000"));
    TK_OK(ftc__heal_token_may_go(cli, "127.0.0.1:4000"));
    ftc__heal_state st;
    ftc__heal_state_init(&st);
    const char *far = "203.0.113.7:4000";
    ftc__heal_fetch f = {.sources = &far,
                         .n_sources = 1,
                         .step = 1,
                         .layout = &st,
                         .token = TOKEN};
    ftc__heal_fetch_result res;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc__heal_client_fetch(cli, &f, ftc__deadline_in_ms(60000), &res),
              FTC_EINVAL);
    assert_true(tk_now_ms() - t0 < 30000); /* refused, not waited out */
    TK_OK(ftc__heal_client_tls(cli, NULL, true));
    TK_OK(ftc__heal_token_may_go(cli, "203.0.113.7:4000"));
    ftc__heal_client_destroy(cli);
}

/* ------------------------------------------------------------- healing */

#define N_FLOATS 300000 /* 1.2 MB: several 256 KiB chunks per source */

typedef struct healing {
    float src[N_FLOATS], dst[N_FLOATS];
    ftc__heal_state st;
    ftc__heal_snapshot *snap;
    ftc__heal_server *srv[2];
    const char *addr[2];
} healing;

static healing *healing_new(const char *cert, const char *key)
{
    healing *h = ftc__calloc(1, sizeof(*h));
    for (int i = 0; i < N_FLOATS; i++) {
        h->src[i] = (float)i * 0.25f - 7.0f;
        h->dst[i] = -1.0f;
    }
    ftc__heal_state_init(&h->st);
    ftc__heal_buf buf;
    int64_t dims[] = {N_FLOATS};
    TK_OK(ftc__heal_buf_set(&buf, "params", 0, dims, 1, 4));
    TK_OK(ftc__heal_state_add(&h->st, &buf, h->src));
    TK_OK(ftc__heal_snapshot_take(&h->st, 3, 9, 256 << 10, 1, &h->snap));
    for (int i = 0; i < 2; i++) {
        ftc__heal_server_opts o = {
            .token = TOKEN, .tls_cert = cert, .tls_key = key};
        TK_OK(ftc__heal_server_start(&h->srv[i], &o));
        h->addr[i] = ftc__heal_server_address(h->srv[i]);
        ftc__heal_server_publish(h->srv[i], h->snap);
    }
    return h;
}

static void healing_free(healing *h)
{
    for (int i = 0; i < 2; i++) {
        ftc__heal_server_stop(h->srv[i]);
    }
    ftc__heal_snapshot_unref(h->snap);
    ftc__heal_state_fini(&h->st);
    ftc__free(h);
}

static int fetch_trusting(healing *h, const char *ca,
                          ftc__heal_fetch_result *res)
{
    ftc__heal_client *cli = NULL;
    TK_OK(ftc__heal_client_create(&cli));
    TK_OK(ftc__heal_client_tls(cli, ca, false));
    void *dest[] = {h->dst};
    ftc__heal_fetch f = {.sources = h->addr,
                         .n_sources = 2,
                         .step = 3,
                         .layout = &h->st,
                         .dest = dest,
                         .token = TOKEN};
    int rc =
        ftc__heal_client_fetch(cli, &f, ftc__deadline_in_ms(tk_ms(20000)), res);
    print_message("fetch trusting %s: %s %s\n", ca != NULL ? ca : "the system",
                  ftc_strerror(rc), rc != 0 ? ftc_last_error() : "");
    ftc__heal_client_destroy(cli);
    return rc;
}

static void healing_over_tls(void **state)
{
    (void)state;
    healing *h = healing_new(good_cert, good_key);
    assert_int_equal(strncmp(h->addr[0], "https://127.0.0.1:", 18), 0);
    ftc__heal_fetch_result res;
    TK_EXPECT(fetch_trusting(h, other_cert, &res), FTC_EAUTH);
    TK_EXPECT(fetch_trusting(h, NULL, &res), FTC_EAUTH);
    for (int i = 0; i < N_FLOATS; i++) {
        h->dst[i] = -1.0f; /* nothing is trusted from a refused fetch */
    }
    TK_OK(fetch_trusting(h, good_cert, &res));
    assert_memory_equal(h->src, h->dst, sizeof(h->src));
    assert_true(res.chunks >= 4);
    assert_int_equal(res.sources, 2);
    assert_int_equal(res.refetched, 0);
    healing_free(h);

    /* Trusted, but named for another address: refused at the metadata. */
    h = healing_new(far_cert, far_key);
    TK_EXPECT(fetch_trusting(h, far_cert, &res), FTC_EAUTH);
    healing_free(h);
}

/* The chunk connections' own handshake (GnuTLS) checks the certificate
 * as the metadata's (libcurl) does. */
static int chunk_handshake(const char *addr, const char *ca)
{
    bool tls;
    const char *hostport = ftc__heal_source_hostport(addr, &tls);
    assert_true(tls);
    char host[64];
    int port;
    TK_OK(ftc__addr_split(hostport, 0, host, sizeof(host), &port));
    int fd = -1;
    ftc__deadline dl = ftc__deadline_in_ms(tk_ms(5000));
    TK_OK(ftc__sock_connect(host, port, dl, NULL, &fd));
    ftc__heal_trust *trust = NULL;
    TK_OK(ftc__heal_trust_load(ca, &trust));
    ftc__heal_tls *t = NULL;
    int rc = ftc__heal_tls_open(fd, host, trust, dl, NULL, &t);
    print_message("chunk handshake trusting %s: %s %s\n", ca, ftc_strerror(rc),
                  rc != 0 ? ftc_last_error() : "");
    if (rc == 0) {
        /* One chunk's request and answer through the session. */
        char req[256];
        int n = snprintf(req, sizeof(req),
                         "GET /v1/heal/3/chunk/0 HTTP/1.1\r\nHost: %s\r\n"
                         "Authorization: Bearer " TOKEN "\r\n\r\n",
                         hostport);
        TK_OK(ftc__heal_tls_send_all(t, req, (size_t)n, dl, NULL));
        char head[16] = {0};
        ssize_t k = -1;
        while (k < 0 && !ftc__deadline_expired(dl)) {
            ftc__sock_wait(fd, POLLIN, dl, NULL);
            k = ftc__heal_tls_recv(t, head, sizeof(head) - 1);
        }
        assert_true(k >= 12);
        assert_int_equal(strncmp(head, "HTTP/1.1 200", 12), 0);
    }
    ftc__heal_tls_close(t);
    ftc__heal_trust_free(trust);
    close(fd);
    return rc;
}

static void chunk_connections_check_the_certificate(void **state)
{
    (void)state;
    healing *h = healing_new(good_cert, good_key);
    TK_OK(chunk_handshake(h->addr[0], good_cert));
    TK_EXPECT(chunk_handshake(h->addr[0], other_cert), FTC_EAUTH);
    assert_non_null(strstr(ftc_last_error(), "refused"));
    healing_free(h);
    h = healing_new(far_cert, far_key);
    TK_EXPECT(chunk_handshake(h->addr[0], far_cert), FTC_EAUTH);
    healing_free(h);
    /* A trust file without a certificate is refused when loaded. */
    ftc__heal_trust *trust = NULL;
    TK_EXPECT(ftc__heal_trust_load(good_key, &trust), FTC_EINVAL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lighthouse_over_tls),
        cmocka_unit_test(bad_tls_options),
        cmocka_unit_test(token_never_in_clear_to_another_host),
        cmocka_unit_test(healing_over_tls),
        cmocka_unit_test(chunk_connections_check_the_certificate),
    };
    (void)argc;
    (void)argv;
    return tk_run_group(tests, make_certs, NULL);
}
