/* Lending the live buffers over real HTTP: a healer reads them with no
 * copy, releases end the lending (only the expected healers', only for its
 * step), a bound ends it with a copy for late healers, a reader that
 * stopped reading is cut so that the owner may write again, a release
 * that came before its step was lent counts, and a closing owner never
 * waits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "ft/heal/heal_server_int.h"
#include "testkit.h"

/* Two buffers: chunks of 64 KiB span both. */
#define NA (100 * 1000)
#define NB 3333

typedef struct replica {
    ftc__heal_state st;
    float *a;
    double b[NB];
    void *dest[2];
} replica;

static void replica_init(replica *r, size_t na, float seed)
{
    ftc__heal_state_init(&r->st);
    r->a = ftc__calloc(na, sizeof(float));
    for (size_t i = 0; i < na; i++) {
        r->a[i] = seed + (float)i;
    }
    for (int i = 0; i < NB; i++) {
        r->b[i] = (double)seed - i;
    }
    ftc__heal_buf buf;
    int64_t da[] = {(int64_t)na}, db[] = {NB};
    TK_OK(ftc__heal_buf_set(&buf, "a", 0, da, 1, 4));
    TK_OK(ftc__heal_state_add(&r->st, &buf, r->a));
    TK_OK(ftc__heal_buf_set(&buf, "b", 1, db, 1, 8));
    TK_OK(ftc__heal_state_add(&r->st, &buf, r->b));
    r->dest[0] = r->a;
    r->dest[1] = r->b;
}

static void replica_fini(replica *r)
{
    ftc__heal_state_fini(&r->st);
    ftc__free(r->a);
}

/* A source lending its state of step 7 to healers "h1" and "h2". */
typedef struct world {
    replica src, dst;
    size_t na;
    ftc__heal_server *srv;
    const char *addr;
    ftc__heal_client *cli;
} world;

static world *world_new(size_t na, uint64_t chunk_bytes, const char *token)
{
    world *w = ftc__calloc(1, sizeof(*w));
    w->na = na;
    replica_init(&w->src, na, 3.0f);
    replica_init(&w->dst, na, -1.0f);
    ftc__heal_server_opts o = {0};
    o.token = token;
    TK_OK(ftc__heal_server_start(&w->srv, &o));
    w->addr = ftc__heal_server_address(w->srv);
    ftc__heal_snapshot *lent;
    TK_OK(ftc__heal_snapshot_lend(&w->src.st, 7, 21, chunk_bytes, 2, &lent));
    const char *healers[] = {"h1", "h2"};
    TK_OK(ftc__heal_server_lend(w->srv, lent, healers, 2));
    ftc__heal_snapshot_unref(lent);
    TK_OK(ftc__heal_client_create(&w->cli));
    return w;
}

static void world_free(world *w)
{
    ftc__heal_server_stop(w->srv);
    ftc__heal_client_destroy(w->cli);
    replica_fini(&w->src);
    replica_fini(&w->dst);
    ftc__free(w);
}

static int fetch(world *w, const char *token, int64_t ms)
{
    ftc__heal_fetch f;
    memset(&f, 0, sizeof(f));
    f.sources = &w->addr;
    f.n_sources = 1;
    f.step = 7;
    f.layout = &w->dst.st;
    f.dest = w->dst.dest;
    f.token = token;
    ftc__heal_fetch_result res;
    return ftc__heal_client_fetch(w->cli, &f, ftc__deadline_in_ms(tk_ms(ms)),
                                  &res);
}

static void assert_same(const world *w)
{
    assert_memory_equal(w->src.a, w->dst.a, w->na * sizeof(float));
    assert_memory_equal(w->src.b, w->dst.b, sizeof(w->src.b));
}

static size_t release(world *w, int64_t step, const char *id, const char *token)
{
    return ftc__heal_client_release(w->cli, &w->addr, 1, step, id, token,
                                    ftc__deadline_in_ms(tk_ms(5000)));
}

static ftc__heal_server_stats stats(ftc__heal_server *s)
{
    ftc__heal_server_stats st;
    ftc__heal_server_stats_get(s, &st);
    return st;
}

static void healers_release_the_lent_state(void **state)
{
    (void)state;
    world *w = world_new(NA, 64 * 1024, "tok");
    TK_OK(fetch(w, "tok", 10000));
    assert_same(w);
    /* Without the token, for another step, or twice: no release. */
    assert_int_equal(release(w, 7, "h1", NULL), 0);
    assert_int_equal(release(w, 6, "h1", "tok"), 0);
    assert_int_equal(release(w, 7, "h1", "tok"), 1);
    assert_int_equal(release(w, 7, "h1", "tok"), 1);
    assert_int_equal(release(w, 7, "stranger", "tok"), 1);
    assert_int_equal(stats(w->srv).releases, 1);
    assert_false(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(20)));
    /* The second healer was lost (the lighthouse said so). */
    ftc__heal_server_release(w->srv, "h2");
    assert_true(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(0)));
    ftc__heal_server_reclaim(w->srv, NULL, ftc__deadline_in_ms(tk_ms(5000)));
    ftc__heal_server_stats st = stats(w->srv);
    assert_int_equal(st.releases, 2);
    assert_int_equal(st.cuts, 0);
    /* Nothing is served any more, and releases are refused. */
    TK_EXPECT(fetch(w, "tok", 300), FTC_ETIMEDOUT);
    assert_int_equal(release(w, 7, "h2", "tok"), 0);
    world_free(w);
}

/* Lends step of w's source to the healers named (ids), after ending any
 * lending before it. */
static void lend_again(world *w, int64_t step, const char *const *ids, size_t n)
{
    ftc__heal_server_reclaim(w->srv, NULL, ftc__deadline_in_ms(tk_ms(5000)));
    ftc__heal_snapshot *lent;
    TK_OK(ftc__heal_snapshot_lend(&w->src.st, step, 21, 64 * 1024, 2, &lent));
    TK_OK(ftc__heal_server_lend(w->srv, lent, ids, n));
    ftc__heal_snapshot_unref(lent);
}

/* A healer that finished with its other sources releases this one before
 * it lent that step (it was still rebuilding its group): the release is
 * remembered and counted when the step is lent, so the round does not
 * wait for it until the lending's bound. Older steps are refused; at most
 * FTC__HEAL_EARLY_MAX are kept, the oldest dropped. */
static void early_release_counts_when_its_step_is_lent(void **state)
{
    (void)state;
    world *w = world_new(NA, 64 * 1024, NULL); /* lends step 7 */
    assert_int_equal(release(w, 8, "h1", NULL), 1);
    assert_int_equal(release(w, 8, "h1", NULL), 1); /* once is enough */
    assert_int_equal(release(w, 6, "h1", NULL), 0);
    assert_int_equal(stats(w->srv).releases, 0); /* 7's healers: none */
    const char *both[] = {"h1", "h2"};
    lend_again(w, 8, both, 2);
    assert_int_equal(stats(w->srv).releases, 1);
    assert_false(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(20)));
    assert_int_equal(release(w, 8, "h2", NULL), 1);
    assert_true(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(0)));
    /* Step 8 was lent: a release of it is no longer early. */
    ftc__heal_server_reclaim(w->srv, NULL, ftc__deadline_in_ms(tk_ms(5000)));
    assert_int_equal(release(w, 8, "h3", NULL), 0);
    /* One more than the bound for step 9: the first one is dropped. */
    char id[32];
    for (int i = 0; i <= FTC__HEAL_EARLY_MAX; i++) {
        snprintf(id, sizeof(id), "e%d", i);
        ftc__heal_server_stats st = stats(w->srv);
        assert_true(ftc__heal_lend_release(w->srv, 9, id));
        assert_int_equal(stats(w->srv).releases, st.releases);
    }
    snprintf(id, sizeof(id), "e%d", FTC__HEAL_EARLY_MAX);
    const char *ends[] = {"e0", id};
    lend_again(w, 9, ends, 2);
    assert_int_equal(stats(w->srv).releases, 3);
    assert_false(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(20)));
    ftc__heal_server_release(w->srv, "e0");
    assert_true(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(0)));
    world_free(w);
}

/* The lending's bound passes before a healer is done: its owner serves a
 * copy instead and writes its buffers; a late fetch gets the copy. */
static void late_healer_gets_a_copy(void **state)
{
    (void)state;
    world *w = world_new(NA, 64 * 1024, NULL);
    assert_false(ftc__heal_server_lend_wait(w->srv, ftc__deadline_in_ms(10)));
    ftc__heal_snapshot *copy;
    TK_OK(ftc__heal_snapshot_take(&w->src.st, 7, 21, 64 * 1024, 1, &copy));
    ftc__heal_server_reclaim(w->srv, copy, ftc__deadline_in_ms(tk_ms(5000)));
    ftc__heal_snapshot_unref(copy);
    replica before;
    replica_init(&before, NA, 3.0f);
    w->src.a[5] = 1e9f;
    w->src.b[NB - 1] = -1e9;
    TK_OK(fetch(w, NULL, 10000));
    assert_memory_equal(before.a, w->dst.a, NA * sizeof(float));
    assert_memory_equal(before.b, w->dst.b, sizeof(before.b));
    assert_int_equal(stats(w->srv).cuts, 0);
    replica_fini(&before);
    world_free(w);
}

/* A connection asks for a 16 MiB chunk of the lent state and never reads
 * it: the reclaim cuts it at its deadline, after which the owner may
 * write; the server serves again afterwards. */
static void stalled_reader_is_cut(void **state)
{
    (void)state;
    size_t na = (size_t)8 << 20; /* 32 MiB */
    world *w = world_new(na, (uint64_t)16 << 20, NULL);
    char host[64];
    int port;
    TK_OK(ftc__addr_split(w->addr, -1, host, sizeof(host), &port));
    int fd;
    TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(tk_ms(5000)), NULL,
                            &fd));
    static const char req[] = "GET /v1/heal/7/chunk/0 HTTP/1.1\r\n"
                              "Host: x\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof(req) - 1, 0), sizeof(req) - 1);
    TK_WAIT_UNTIL(stats(w->srv).chunks_served == 1, 5000);
    int64_t t0 = tk_now_ms();
    ftc__heal_server_reclaim(w->srv, NULL, ftc__deadline_in_ms(100));
    assert_true(tk_now_ms() - t0 < tk_ms(2000));
    assert_int_equal(stats(w->srv).cuts, 1);
    /* The reader's connection is closed: what was sent, then the end. */
    ftc__sock_set_nonblock(fd, 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[65536];
    ssize_t n;
    size_t got = 0;
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
        got += (size_t)n;
    }
    assert_true(n == 0 || errno == ECONNRESET);
    assert_true(got < ((size_t)16 << 20));
    close(fd);
    ftc__heal_snapshot *copy;
    TK_OK(ftc__heal_snapshot_take(&w->src.st, 7, 21, 16 << 20, 2, &copy));
    ftc__heal_server_publish(w->srv, copy);
    ftc__heal_snapshot_unref(copy);
    TK_OK(fetch(w, NULL, 20000));
    assert_same(w);
    world_free(w);
}

typedef struct waiter {
    ftc__heal_server *srv;
    bool all;
} waiter;

static void *wait_never(void *arg)
{
    waiter *x = arg;
    x->all = ftc__heal_server_lend_wait(x->srv, FTC_DEADLINE_NEVER);
    return NULL;
}

static void close_ends_every_wait(void **state)
{
    (void)state;
    world *w = world_new(NA, 64 * 1024, NULL);
    waiter x = {w->srv, true};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_never, &x), 0);
    ftc__heal_server_close(w->srv);
    pthread_join(t, NULL);
    assert_false(x.all);
    /* Closing: the reclaim does not wait either; stop cuts the rest. */
    ftc__heal_server_reclaim(w->srv, NULL, FTC_DEADLINE_NEVER);
    world_free(w);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(healers_release_the_lent_state),
        cmocka_unit_test(early_release_counts_when_its_step_is_lent),
        cmocka_unit_test(late_healer_gets_a_copy),
        cmocka_unit_test(stalled_reader_is_cut),
        cmocka_unit_test(close_ends_every_wait),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
