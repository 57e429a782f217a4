/* `ftc store`: runs the TCPStore-compatible key-value server until SIGINT
 * or SIGTERM, or with --self-check starts one, talks to it and exits. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base_int.h"
#include "cli_args.h"
#include "cli_token.h"
#include "cmd.h"
#include "ftc/ftc.h"

#define MAX_OPEN_PREFIXES 64

typedef struct store_args {
    ftc_store_server_opts server;
    const char *token_file;
    const char *open[MAX_OPEN_PREFIXES];
    int n_open;
    int insecure;
    int self_check;
} store_args;

#define SIZE_OPTION(name, member, text)                                        \
    {                                                                          \
        name, FTC__CLI_SIZE, FTC__CLI_FIELD(store_args, server.member),        \
            .min = 0, .max = INT64_MAX, .metavar = "N", .help = text           \
    }

static const ftc__cli_option options[] = {
    {"port", FTC__CLI_INT, FTC__CLI_FIELD(store_args, server.port), .min = 0,
     .max = 65535, .metavar = "P",
     .help = "port to listen on; 0 picks a free one and prints it"},
    {"bind", FTC__CLI_STRING, FTC__CLI_FIELD(store_args, server.bind_host),
     .metavar = "ADDR", .help = "address to bind; * for every interface",
     .default_text = "every interface with a token, else 127.0.0.1"},
    {"token-file", FTC__CLI_STRING, FTC__CLI_FIELD(store_args, token_file),
     .metavar = "PATH",
     .help = "shared secret (else $FTC_TOKEN): every client authenticates "
             "with it"},
    {"open-prefix", FTC__CLI_REPEAT, FTC__CLI_ARRAY(store_args, open, n_open),
     .metavar = "PREFIX",
     .help = "keys that clients without the token (PyTorch's) may use, "
             "e.g. torch/ (repeat; needs a token)"},
    {"insecure", FTC__CLI_FLAG, FTC__CLI_FIELD(store_args, insecure),
     .help = "serve a non-loopback address without a token (anyone who "
             "reaches it can read and write every key)"},
    {"backlog", FTC__CLI_INT, FTC__CLI_FIELD(store_args, server.backlog),
     .min = 1, .max = 1 << 30, .metavar = "N", .help = "listen backlog",
     .default_text = "the kernel's maximum"},
    SIZE_OPTION("max-key-bytes", max_key_bytes, "longest key"),
    SIZE_OPTION("max-value-bytes", max_value_bytes, "largest value"),
    SIZE_OPTION("max-keys-per-request", max_keys_per_request,
                "keys in one CHECK/WAIT/MULTI_*"),
    SIZE_OPTION("max-request-bytes", max_request_bytes, "one whole request"),
    SIZE_OPTION("max-total-bytes", max_total_bytes,
                "all keys, values and queues"),
    SIZE_OPTION("max-connections", max_connections, "open connections"),
    SIZE_OPTION("max-output-bytes", max_output_bytes,
                "unsent replies per connection before it is dropped"),
    SIZE_OPTION("max-strangers-per-address", max_strangers_per_address,
                "with a token: connections from one address not yet "
                "authenticated (the next closes its oldest)"),
    {"self-check", FTC__CLI_FLAG, FTC__CLI_FIELD(store_args, self_check),
     .help = "start a server on 127.0.0.1, run a few requests of both "
             "dialects against it, print them, exit"},
};

static const ftc__cli_command command = {
    .name = "store",
    .usage = "[--port P] [--bind ADDR] [--token-file PATH] "
             "[--open-prefix P]... [limits...]\n"
             "       ftc store --self-check",
    .about = "Serves PyTorch TCPStore clients (1.13 and 2.x dialects on one\n"
             "port) and ftc clients until SIGINT or SIGTERM.\n",
    .notes = "Sizes take a K, M or G suffix (powers of 1024). FTC_LOG=info\n"
             "logs connections refused and clients dropped; see\n"
             "docs/operations.md for sizing (ulimit -n for big jobs).\n",
    FTC__CLI_OPTIONS(options),
};

/* ----------------------------------------------------------- self-check */

typedef struct probe_conn {
    int fd;
    ftc__buf out;
} probe_conn;

static int probe_open(probe_conn *c, int port, int v2)
{
    ftc__buf_init(&c->out, 1 << 16);
    int rc = ftc__sock_connect("127.0.0.1", port, ftc__deadline_in_ms(5000),
                               NULL, &c->fd);
    if (rc == 0 && v2) {
        ftc__buf_append_u8(&c->out, 0); /* VALIDATE */
        ftc__buf_append_u32le(&c->out, 0x3C85F7CEu);
    }
    return rc;
}

static void probe_close(probe_conn *c)
{
    close(c->fd);
    ftc__buf_free(&c->out);
}

static int probe_send(probe_conn *c)
{
    int rc = ftc__sock_send_all(c->fd, ftc__buf_begin(&c->out),
                                ftc__buf_size(&c->out),
                                ftc__deadline_in_ms(5000), NULL);
    ftc__buf_reset(&c->out);
    return rc;
}

static int probe_recv(probe_conn *c, void *p, size_t n)
{
    return ftc__sock_recv_all(c->fd, p, n, ftc__deadline_in_ms(5000), NULL);
}

static int64_t probe_i64(probe_conn *c, int *rc)
{
    uint8_t raw[8] = {0};
    if (*rc == 0) {
        *rc = probe_recv(c, raw, 8);
    }
    return (int64_t)ftc__get_u64le(raw);
}

/* Reads a string reply into text (truncated, NUL-terminated). */
static void probe_str(probe_conn *c, char *text, size_t cap, int *rc)
{
    uint64_t n = (uint64_t)probe_i64(c, rc);
    text[0] = '\0';
    if (*rc != 0 || n >= cap) {
        *rc = *rc != 0 ? *rc : FTC_EPROTO;
        return;
    }
    *rc = probe_recv(c, text, (size_t)n);
    text[n] = '\0';
}

static uint8_t probe_u8(probe_conn *c, int *rc)
{
    uint8_t v = 0xFF;
    if (*rc == 0) {
        *rc = probe_recv(c, &v, 1);
    }
    return v;
}

static int report(const char *what, int ok, const char *detail)
{
    printf("  %-34s %s%s%s\n", what, ok ? "ok" : "FAILED", detail ? "  " : "",
           detail ? detail : "");
    return ok ? 0 : 1;
}

/* Query bytes: 2.x SET=1 GET=3 ADD=4 CHECK=5 WAIT=6 GETNUMKEYS=7
 * DELETE=8 CANCEL_WAIT=12 PING=13; 1.13 ADD=3 GET=2 WAIT=5. */
static void put_key_op(ftc__buf *b, uint8_t op, const char *key)
{
    ftc__buf_append_u8(b, op);
    ftc__buf_append_str(b, key, strlen(key));
}

static int check_v2(int port)
{
    probe_conn c;
    int rc = probe_open(&c, port, 1);
    int failures = 0;
    char text[64], detail[96];
    /* the ftc probe: a 0xF7Cxxxxx nonce comes back complemented */
    ftc__buf_append_u8(&c.out, 13);
    ftc__buf_append_u32le(&c.out, 0xF7C0FFEEu);
    put_key_op(&c.out, 1, "/self-check");
    ftc__buf_append_str(&c.out, "hello", 5);
    put_key_op(&c.out, 3, "/self-check");
    put_key_op(&c.out, 4, "/counter");
    ftc__buf_append_u64le(&c.out, (uint64_t)-3);
    put_key_op(&c.out, 4, "/counter");
    ftc__buf_append_u64le(&c.out, 10);
    rc = rc == 0 ? probe_send(&c) : rc;
    uint8_t raw[4] = {0};
    if (rc == 0) {
        rc = probe_recv(&c, raw, 4);
    }
    uint32_t pong = ftc__get_u32le(raw);
    failures += report("2.x PING probe (is it ftc?)", pong == ~0xF7C0FFEEu,
                       pong == ~0xF7C0FFEEu ? "answered as ftc" : NULL);
    probe_str(&c, text, sizeof(text), &rc);
    snprintf(detail, sizeof(detail), "\"%s\"", text);
    failures += report("2.x SET then GET", strcmp(text, "hello") == 0, detail);
    int64_t a = probe_i64(&c, &rc), b = probe_i64(&c, &rc);
    snprintf(detail, sizeof(detail), "%lld, %lld", (long long)a, (long long)b);
    failures += report("2.x ADD -3, ADD 10", a == -3 && b == 7, detail);
    /* WAIT on a missing key parks; CANCEL_WAIT answers it */
    ftc__buf_append_u8(&c.out, 6);
    ftc__buf_append_u64le(&c.out, 1);
    ftc__buf_append_str(&c.out, "/missing", 8);
    ftc__buf_append_u8(&c.out, 12);
    ftc__buf_append_u8(&c.out, 7);
    rc = rc == 0 ? probe_send(&c) : rc;
    uint8_t canceled = probe_u8(&c, &rc);
    failures += report("2.x WAIT missing key + CANCEL_WAIT", canceled == 1,
                       canceled == 1 ? "WAIT_CANCELED" : NULL);
    int64_t nkeys = probe_i64(&c, &rc);
    snprintf(detail, sizeof(detail), "%lld", (long long)nkeys);
    failures += report("2.x GETNUMKEYS", nkeys == 2, detail);
    probe_close(&c);
    return rc != 0 ? 1 : failures;
}

static int check_v1(int port)
{
    probe_conn c, idle;
    int rc = probe_open(&c, port, 0);
    int rc_idle = probe_open(&idle, port, 0); /* 1.13's silent 2nd conn */
    int failures = 0;
    char text[64], detail[96];
    put_key_op(&c.out, 3, "init/");
    ftc__buf_append_u64le(&c.out, 1);
    ftc__buf_append_u8(&c.out, 5); /* WAIT + GET, as 1.13's get() does */
    ftc__buf_append_u64le(&c.out, 1);
    ftc__buf_append_str(&c.out, "/self-check", 11);
    put_key_op(&c.out, 2, "/self-check");
    put_key_op(&c.out, 8, "/self-check");
    rc = rc == 0 ? probe_send(&c) : rc;
    int64_t workers = probe_i64(&c, &rc);
    snprintf(detail, sizeof(detail), "%lld", (long long)workers);
    failures += report("1.13 ADD init/ 1", workers == 1, detail);
    uint8_t ready = probe_u8(&c, &rc);
    probe_str(&c, text, sizeof(text), &rc);
    snprintf(detail, sizeof(detail), "\"%s\" (set over 2.x)", text);
    failures += report("1.13 WAIT + GET",
                       ready == 0 && strcmp(text, "hello") == 0, detail);
    int64_t deleted = probe_i64(&c, &rc);
    failures += report("1.13 DELETE_KEY", deleted == 1, NULL);
    probe_close(&c);
    if (rc_idle == 0) {
        probe_close(&idle);
    }
    return rc != 0 || rc_idle != 0 ? 1 : failures;
}

static int self_check(void)
{
    ftc_store_server_opts o;
    ftc_store_server_opts_init(&o);
    o.bind_host = "127.0.0.1";
    ftc_store_server *srv;
    int rc = ftc_store_server_create(&o, &srv);
    if (rc != 0) {
        fprintf(stderr, "ftc store: %s\n", ftc_last_error());
        return 1;
    }
    int port = ftc_store_server_port(srv);
    printf("ftc store self-check: server on 127.0.0.1:%d\n", port);
    int failures = check_v2(port);
    failures += check_v1(port);
    ftc_store_server_stats st;
    ftc_store_server_stats_get(srv, &st);
    ftc_store_server_destroy(srv);
    printf("  server stopped cleanly; %llu requests, %llu protocol errors\n",
           (unsigned long long)st.requests,
           (unsigned long long)st.protocol_errors);
    printf("self-check %s\n", failures == 0 ? "passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}

/* -------------------------------------------------------------- serving */

int ftc__cmd_store(int argc, char **argv)
{
    store_args a = {.self_check = 0};
    ftc_store_server_opts_init(&a.server);
    a.server.port = 29500;
    int rc = ftc__cli_parse(&command, &a, argc, argv, NULL);
    if (rc != FTC__CLI_PARSED) {
        return rc;
    }
    if (a.self_check) {
        return self_check();
    }
    ftc_store_server_opts o = a.server;
    static char token[FTC__CLI_TOKEN_MAX];
    if (ftc__cli_token("store", a.token_file, token, sizeof(token), &o.token) !=
        0) {
        return 2;
    }
    if (ftc__cli_open_bind("store", o.bind_host, o.token, a.insecure) != 0) {
        return 2;
    }
    o.open_prefixes = a.open;
    o.n_open_prefixes = (size_t)a.n_open;
    /* Signals are taken synchronously by this thread; the server's thread
     * has them blocked. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    ftc_store_server *srv;
    rc = ftc_store_server_create(&o, &srv);
    if (rc != 0) {
        fprintf(stderr, "ftc store: %s\n", ftc_last_error());
        return 1;
    }
    const char *where =
        o.bind_host == NULL
            ? (o.token != NULL ? "every interface" : "127.0.0.1")
        : o.bind_host[0] == '\0' || strcmp(o.bind_host, "*") == 0
            ? "every interface"
            : o.bind_host;
    printf("ftc store: listening on %s port %d (%s)\n", where,
           ftc_store_server_port(srv),
           o.token != NULL ? "token required" : "no token");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    ftc_store_server_stats st;
    ftc_store_server_stats_get(srv, &st);
    ftc_store_server_destroy(srv);
    printf("ftc store: %s, stopped (%llu requests served, %llu keys)\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM",
           (unsigned long long)st.requests, (unsigned long long)st.keys);
    return 0;
}
