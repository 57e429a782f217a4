/* The healer's chunk client against a source that answers wrongly (a
 * plain-socket fake next to a real healing server): a garbage answer, a
 * head too long, a wrong Content-Length, a connection closed before the
 * answer. Each chunk asked of the fake is fetched again from the real
 * source and the healed state is exact. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "testkit.h"

#define N 40000 /* floats */

typedef enum mode { GARBAGE, LONG_HEAD, WRONG_LENGTH, CLOSE } mode;

typedef struct fake {
    int lfd, port;
    mode how;
    const ftc__heal_snapshot *snap; /* its metadata is served as is */
    atomic_bool stop;
    pthread_t acceptor, conn[32];
    int n_conn;
    atomic_int chunk_requests;
} fake;

typedef struct conn_arg {
    fake *f;
    int fd;
} conn_arg;

static void send_text(int fd, const void *p, size_t n)
{
    ftc__sock_send_all(fd, p, n, ftc__deadline_in_ms(5000), NULL);
}

/* Answers one connection's requests until it closes. */
static void *serve_conn(void *arg)
{
    conn_arg *c = arg;
    fake *f = c->f;
    char req[4096];
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while ((end = strstr(req, "\r\n\r\n")) == NULL) {
            if (ftc__sock_wait(c->fd, POLLIN, ftc__deadline_in_ms(10000),
                               NULL) != 0) {
                goto out;
            }
            ssize_t k = recv(c->fd, req + have, sizeof(req) - 1 - have, 0);
            if (k <= 0) {
                goto out;
            }
            have += (size_t)k;
            req[have] = '\0';
        }
        bool meta = strstr(req, "/meta ") != NULL;
        size_t used = (size_t)(end + 4 - req);
        memmove(req, req + used, have - used);
        have -= used;
        req[have] = '\0';
        char head[3000];
        if (meta) {
            int n = snprintf(head, sizeof(head),
                             "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                             f->snap->meta_len);
            send_text(c->fd, head, (size_t)n);
            send_text(c->fd, f->snap->meta_bytes, f->snap->meta_len);
            continue;
        }
        atomic_fetch_add(&f->chunk_requests, 1);
        if (f->how == CLOSE) {
            goto out;
        }
        if (f->how == GARBAGE) {
            send_text(c->fd, "FOO BAR\r\n\r\n", 11);
        } else if (f->how == LONG_HEAD) {
            int n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nX: ");
            memset(head + n, 'x', 2000);
            send_text(c->fd, head, (size_t)n + 2000);
        } else {
            /* One byte more than any chunk of this test. */
            static uint8_t body[1 << 17];
            int n = snprintf(head, sizeof(head),
                             "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                             (size_t)(1 << 16) + 1);
            send_text(c->fd, head, (size_t)n);
            send_text(c->fd, body, (size_t)(1 << 16) + 1);
        }
    }
out:
    close(c->fd);
    ftc__free(c);
    return NULL;
}

static void *accept_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd p = {f->lfd, POLLIN, 0};
        if (poll(&p, 1, 20) != 1) {
            continue;
        }
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0 || f->n_conn == 32) {
            if (fd >= 0) {
                close(fd);
            }
            continue;
        }
        ftc__sock_set_nonblock(fd, 0);
        conn_arg *c = ftc__malloc(sizeof(*c));
        *c = (conn_arg){f, fd};
        assert_int_equal(
            pthread_create(&f->conn[f->n_conn++], NULL, serve_conn, c), 0);
    }
    return NULL;
}

static void heal_past(mode how)
{
    float *src = ftc__malloc(N * sizeof(float));
    float *dst = ftc__calloc(N, sizeof(float));
    for (int i = 0; i < N; i++) {
        src[i] = (float)i * 0.5f;
    }
    ftc__heal_state s, d;
    ftc__heal_state_init(&s);
    ftc__heal_state_init(&d);
    ftc__heal_buf buf;
    int64_t dims[] = {N};
    TK_OK(ftc__heal_buf_set(&buf, "w", FTC_DTYPE_F32, dims, 1, 4));
    TK_OK(ftc__heal_state_add(&s, &buf, src));
    TK_OK(ftc__heal_state_add(&d, &buf, dst));
    ftc__heal_snapshot *snap;
    TK_OK(ftc__heal_snapshot_take(&s, 5, 6, 1 << 16, 1, &snap));
    ftc__heal_server *real;
    ftc__heal_server_opts so = {0};
    TK_OK(ftc__heal_server_start(&real, &so));
    ftc__heal_server_publish(real, snap);
    static fake f;
    memset(&f, 0, sizeof(f));
    f.how = how;
    f.snap = snap;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, &f.lfd, &f.port));
    assert_int_equal(pthread_create(&f.acceptor, NULL, accept_main, &f), 0);
    char fake_addr[64];
    snprintf(fake_addr, sizeof(fake_addr), "127.0.0.1:%d", f.port);
    const char *sources[] = {fake_addr, ftc__heal_server_address(real)};
    ftc__heal_fetch fe;
    memset(&fe, 0, sizeof(fe));
    fe.sources = sources;
    fe.n_sources = 2;
    fe.step = 5;
    fe.layout = &d;
    void *dest[] = {dst};
    fe.dest = dest;
    ftc__heal_client *cli;
    TK_OK(ftc__heal_client_create(&cli));
    ftc__heal_fetch_result res;
    TK_OK(ftc__heal_client_fetch(cli, &fe, ftc__deadline_in_ms(tk_ms(20000)),
                                 &res));
    assert_memory_equal(dst, src, N * sizeof(float));
    int asked = atomic_load(&f.chunk_requests);
    assert_true(asked >= 1);
    assert_int_equal(res.refetched, (uint32_t)asked);
    /* Only a complete answer of the wrong length is a bad chunk; the
     * others are failures of the source. */
    assert_int_equal(res.bad_chunks,
                     how == WRONG_LENGTH ? (uint32_t)asked : 0u);
    ftc__heal_client_destroy(cli);
    atomic_store(&f.stop, true);
    pthread_join(f.acceptor, NULL);
    for (int i = 0; i < f.n_conn; i++) {
        pthread_join(f.conn[i], NULL);
    }
    close(f.lfd);
    ftc__heal_server_stop(real);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_state_fini(&s);
    ftc__heal_state_fini(&d);
    ftc__free(src);
    ftc__free(dst);
}

static void garbage_answer(void **state)
{
    (void)state;
    heal_past(GARBAGE);
}

static void head_too_long(void **state)
{
    (void)state;
    heal_past(LONG_HEAD);
}

static void wrong_length(void **state)
{
    (void)state;
    heal_past(WRONG_LENGTH);
}

static void closed_before_answering(void **state)
{
    (void)state;
    heal_past(CLOSE);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(garbage_answer),
        cmocka_unit_test(head_too_long),
        cmocka_unit_test(wrong_length),
        cmocka_unit_test(closed_before_answering),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
