/* The healing transfer over real HTTP on loopback: striping over several
 * sources, corrupt chunks and sources that die mid-transfer recovered from
 * another source, "not yet" answers retried, and every refusal exact. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/heal/heal.h"
#include "testkit.h"

#define NSRC 3
#define NA 50000 /* floats in buffer "a" */
#define NB 777   /* doubles in buffer "b" */

/* One replica's state: two buffers and a counter. */
typedef struct replica {
    ftc__heal_state st;
    float a[NA];
    double b[NB];
    int64_t c;
    void *dest[3];
} replica;

static void replica_init(replica *r, float seed)
{
    ftc__heal_state_init(&r->st);
    for (int i = 0; i < NA; i++) {
        r->a[i] = seed + (float)i * 0.001f;
    }
    for (int i = 0; i < NB; i++) {
        r->b[i] = (double)seed * 1e6 - i;
    }
    r->c = (int64_t)seed;
    ftc__heal_buf buf;
    int64_t da[] = {NA}, db[] = {7, 111};
    TK_OK(ftc__heal_buf_set(&buf, "params", 0, da, 1, 4));
    TK_OK(ftc__heal_state_add(&r->st, &buf, r->a));
    TK_OK(ftc__heal_buf_set(&buf, "momentum", 1, db, 2, 8));
    TK_OK(ftc__heal_state_add(&r->st, &buf, r->b));
    TK_OK(ftc__heal_buf_set(&buf, "count", 7, NULL, 0, 8));
    TK_OK(ftc__heal_state_add(&r->st, &buf, &r->c));
    r->dest[0] = r->a;
    r->dest[1] = r->b;
    r->dest[2] = &r->c;
}

static void assert_same_state(const replica *x, const replica *y)
{
    assert_memory_equal(x->a, y->a, sizeof(x->a));
    assert_memory_equal(x->b, y->b, sizeof(x->b));
    assert_int_equal(x->c, y->c);
}

/* NSRC servers, each serving a snapshot of the same state at step 7. */
typedef struct world {
    replica src;
    replica dst;
    ftc__heal_server *srv[NSRC];
    const char *addr[NSRC];
    char addr_text[NSRC][64];
    ftc__heal_snapshot *snap;
    ftc__heal_client *cli;
} world;

static world *world_new(uint64_t chunk_bytes, const char *token)
{
    world *w = ftc__calloc(1, sizeof(*w));
    replica_init(&w->src, 3.0f);
    replica_init(&w->dst, -1.0f);
    TK_OK(ftc__heal_snapshot_take(&w->src.st, 7, 21, chunk_bytes, 1, &w->snap));
    for (int i = 0; i < NSRC; i++) {
        ftc__heal_server_opts o = {0};
        o.token = token;
        TK_OK(ftc__heal_server_start(&w->srv[i], &o));
        snprintf(w->addr_text[i], sizeof(w->addr_text[i]), "%s",
                 ftc__heal_server_address(w->srv[i]));
        w->addr[i] = w->addr_text[i];
        ftc__heal_server_publish(w->srv[i], w->snap);
    }
    TK_OK(ftc__heal_client_create(&w->cli));
    return w;
}

static void world_free(world *w)
{
    for (int i = 0; i < NSRC; i++) {
        ftc__heal_server_stop(w->srv[i]);
    }
    ftc__heal_snapshot_unref(w->snap);
    ftc__heal_client_destroy(w->cli);
    ftc__heal_state_fini(&w->src.st);
    ftc__heal_state_fini(&w->dst.st);
    ftc__free(w);
}

static ftc__heal_fetch fetch_of(world *w, size_t n_sources)
{
    ftc__heal_fetch f;
    memset(&f, 0, sizeof(f));
    f.sources = w->addr;
    f.n_sources = n_sources;
    f.step = 7;
    f.layout = &w->dst.st;
    f.dest = w->dst.dest;
    return f;
}

static int run_fetch(world *w, const ftc__heal_fetch *f, int64_t ms,
                     ftc__heal_fetch_result *res)
{
    return ftc__heal_client_fetch(w->cli, f, ftc__deadline_in_ms(tk_ms(ms)),
                                  res);
}

/* A fetch from the first n sources that must succeed with the source's
 * state in place. */
static ftc__heal_fetch_result fetch_ok(world *w, size_t n)
{
    ftc__heal_fetch f = fetch_of(w, n);
    ftc__heal_fetch_result res;
    TK_OK(run_fetch(w, &f, 10000, &res));
    assert_same_state(&w->src, &w->dst);
    return res;
}

/* Chunks served by source i of NSRC when chunk c starts at source c %
 * NSRC. */
static uint32_t share(const world *w, uint32_t i)
{
    uint32_t n = w->snap->meta.n_chunks;
    return n / NSRC + (i < n % NSRC);
}

static uint64_t chunks_served(ftc__heal_server *s)
{
    ftc__heal_server_stats st;
    ftc__heal_server_stats_get(s, &st);
    return st.chunks_served;
}

static void striped_over_every_source(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_fetch_result res = fetch_ok(w, NSRC);
    assert_int_equal(res.step, 7);
    assert_int_equal(res.batches_committed, 21);
    assert_int_equal(res.bytes, w->src.st.total);
    assert_int_equal(res.chunks, w->snap->meta.n_chunks);
    assert_int_equal(res.refetched, 0);
    /* Chunk i comes from source i % NSRC: every source served its share
     * and its metadata once. */
    for (uint32_t i = 0; i < NSRC; i++) {
        ftc__heal_server_stats st;
        ftc__heal_server_stats_get(w->srv[i], &st);
        assert_int_equal(st.chunks_served, share(w, i));
        assert_int_equal(st.meta_served, 1);
    }
    world_free(w);
}

static void corrupt_chunk_is_fetched_again(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_server_inject(w->srv[2], FTC__HEAL_FAULT_CORRUPT, 5);
    ftc__heal_fetch_result res = fetch_ok(w, NSRC);
    assert_int_equal(res.bad_chunks, 1);
    assert_int_equal(res.refetched, 1);
    /* Chunk 5 was asked again, from the next source (0). */
    assert_int_equal(chunks_served(w->srv[0]), share(w, 0) + 1);
    world_free(w);
}

static void source_dying_mid_transfer(void **state)
{
    (void)state;
    world *w = world_new(64 * 1024, NULL);
    /* Source 1 closes every chunk answer half-way, as a process killed
     * while sending would; the others take over its chunks. */
    ftc__heal_server_inject(w->srv[1], FTC__HEAL_FAULT_CUT_ALL, 0);
    ftc__heal_fetch_result res = fetch_ok(w, NSRC);
    assert_true(res.refetched >= 1);
    assert_int_equal(res.bad_chunks, 0);
    /* Once it failed twice in a row it was not asked again: at most one
     * chunk per stream before each failure. */
    assert_true(chunks_served(w->srv[1]) <= 8);
    world_free(w);
}

static void source_stopped_before_the_fetch(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_server_stop(w->srv[1]);
    w->srv[1] = NULL;
    ftc__heal_fetch_result res = fetch_ok(w, NSRC);
    /* It did not answer its metadata request, so no chunk was asked of
     * it. */
    assert_int_equal(res.sources, NSRC - 1);
    assert_int_equal(res.refetched, 0);
    world_free(w);
}

/* Source 2's state differs in part (as DiLoCo's local parameters do
 * between replicas): its metadata says so, and the chunks it differs in
 * are fetched from the others only, none of them bad. */
static void partly_different_source(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    replica other;
    replica_init(&other, 3.0f);
    other.a[46000] += 1.0f; /* chunk 11 differs (16 KiB chunks) */
    ftc__heal_snapshot *snap;
    TK_OK(ftc__heal_snapshot_take(&other.st, 7, 21, 16 * 1024, 1, &snap));
    ftc__heal_server_publish(w->srv[2], snap);
    ftc__heal_snapshot_unref(snap);
    ftc__heal_fetch_result res = fetch_ok(w, NSRC);
    assert_int_equal(res.bad_chunks, 0);
    assert_int_equal(res.refetched, 0);
    assert_int_equal(res.sources, NSRC);
    assert_int_equal(chunks_served(w->srv[2]), share(w, 2) - 1);
    ftc__heal_state_fini(&other.st);
    world_free(w);
}

/* The snapshot of one chunk differs from its checksum at every source:
 * refused after each source was tried twice. */
static void chunk_bad_everywhere(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    w->snap->copy[16 * 1024 * 3 + 5] ^= 0xff;
    ftc__heal_fetch f = fetch_of(w, NSRC);
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 10000, &res), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "chunk 3"));
    assert_int_equal(res.bad_chunks, 2 * NSRC + 1);
    world_free(w);
}

static void every_source_dead(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    for (int i = 0; i < NSRC; i++) {
        ftc__heal_server_inject(w->srv[i], FTC__HEAL_FAULT_CUT_ALL, 0);
    }
    ftc__heal_fetch f = fetch_of(w, NSRC);
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 10000, &res), FTC_EPEER);
    assert_non_null(strstr(ftc_last_error(), "every source failed"));
    world_free(w);
}

static void wrong_step_times_out_with_reason(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_fetch f = fetch_of(w, 2);
    f.step = 8;
    ftc__heal_fetch_result res;
    int64_t t0 = tk_now_ms();
    /* Long enough for a loaded machine to get several 404 answers (the
     * reason) before the deadline. */
    TK_EXPECT(run_fetch(w, &f, 1000, &res), FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 < tk_ms(4000));
    assert_non_null(strstr(ftc_last_error(), "no snapshot of step 8"));
    world_free(w);
}

static void layout_mismatch_is_refused(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_state other;
    ftc__heal_state_init(&other);
    ftc__heal_buf buf;
    int64_t d[] = {NA};
    TK_OK(ftc__heal_buf_set(&buf, "params", 0, d, 1, 4));
    TK_OK(ftc__heal_state_add(&other, &buf, w->dst.a));
    ftc__heal_fetch f = fetch_of(w, NSRC);
    f.layout = &other;
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 5000, &res), FTC_EPROTO);
    assert_non_null(strstr(ftc_last_error(), "layout differs"));
    ftc__heal_state_fini(&other);
    world_free(w);
}

static void metadata_over_the_limit(void **state)
{
    (void)state;
    world *w = world_new(64, NULL); /* many chunks: a long metadata */
    ftc__heal_fetch f = fetch_of(w, 1);
    f.max_meta_bytes = 4096;
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 5000, &res), FTC_EMSGSIZE);
    world_free(w);
}

static void token_required(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, "s3cret");
    ftc__heal_fetch f = fetch_of(w, NSRC);
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 5000, &res), FTC_EAUTH);
    f.token = "wrong";
    TK_EXPECT(run_fetch(w, &f, 5000, &res), FTC_EAUTH);
    f.token = "s3cret";
    TK_OK(run_fetch(w, &f, 5000, &res));
    assert_same_state(&w->src, &w->dst);
    world_free(w);
}

/* A source that has not taken its snapshot yet answers 404; the client
 * asks again until it is there. */
typedef struct bg_fetch {
    world *w;
    ftc__heal_fetch f;
    ftc__heal_fetch_result res;
    int rc;
} bg_fetch;

static void *bg_run(void *arg)
{
    bg_fetch *b = arg;
    b->rc = run_fetch(b->w, &b->f, 10000, &b->res);
    return NULL;
}

static uint64_t refused(ftc__heal_server *s)
{
    ftc__heal_server_stats st;
    ftc__heal_server_stats_get(s, &st);
    return st.refused;
}

static void snapshot_published_later(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    for (int i = 0; i < NSRC; i++) {
        ftc__heal_server_publish(w->srv[i], NULL);
    }
    bg_fetch b = {w, fetch_of(w, NSRC), {0}, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_run, &b), 0);
    TK_WAIT_UNTIL(refused(w->srv[2]) >= 1, 5000);
    for (int i = 0; i < NSRC; i++) {
        ftc__heal_server_publish(w->srv[i], w->snap);
    }
    pthread_join(t, NULL);
    TK_OK(b.rc);
    assert_same_state(&w->src, &w->dst);
    world_free(w);
}

static void abort_from_another_thread(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    ftc__heal_server_publish(w->srv[0], NULL);
    bg_fetch b = {w, fetch_of(w, 1), {0}, -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, bg_run, &b), 0);
    TK_WAIT_UNTIL(refused(w->srv[0]) >= 1, 5000);
    int64_t t0 = tk_now_ms();
    ftc__heal_client_abort(w->cli);
    pthread_join(t, NULL);
    assert_int_equal(b.rc, FTC_ECANCELED);
    assert_true(tk_now_ms() - t0 < tk_ms(1000));
    /* Sticky until cleared; then the client works again. */
    ftc__heal_server_publish(w->srv[0], w->snap);
    ftc__heal_fetch f = fetch_of(w, 1);
    ftc__heal_fetch_result res;
    TK_EXPECT(run_fetch(w, &f, 5000, &res), FTC_ECANCELED);
    ftc__heal_client_clear_abort(w->cli);
    TK_OK(run_fetch(w, &f, 5000, &res));
    world_free(w);
}

/* A state of no bytes (nothing registered on either side, or only
 * zero-byte buffers) is served and fetched: metadata only, no chunk. */
static void empty_state_is_fetched(void **state)
{
    (void)state;
    ftc__heal_state src, dst;
    ftc__heal_state_init(&src);
    ftc__heal_state_init(&dst);
    ftc__heal_server *srv;
    ftc__heal_server_opts o = {0};
    TK_OK(ftc__heal_server_start(&srv, &o));
    const char *addr[] = {ftc__heal_server_address(srv)};
    ftc__heal_client *cli;
    TK_OK(ftc__heal_client_create(&cli));
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* the same with two zero-byte buffers */
            ftc__heal_buf buf;
            int64_t d0[] = {0}, d2[] = {5, 0};
            TK_OK(ftc__heal_buf_set(&buf, "none", FTC_DTYPE_F32, d0, 1, 4));
            TK_OK(ftc__heal_state_add(&src, &buf, NULL));
            TK_OK(ftc__heal_state_add(&dst, &buf, NULL));
            TK_OK(ftc__heal_buf_set(&buf, "flat", FTC_DTYPE_I64, d2, 2, 8));
            TK_OK(ftc__heal_state_add(&src, &buf, NULL));
            TK_OK(ftc__heal_state_add(&dst, &buf, NULL));
        }
        ftc__heal_snapshot *snap;
        TK_OK(ftc__heal_snapshot_lend(&src, 3, 5, 1024, 1, &snap));
        ftc__heal_server_publish(srv, snap);
        void *dest[2] = {NULL, NULL};
        const ftc__heal_fetch f = {.sources = addr,
                                   .n_sources = 1,
                                   .step = 3,
                                   .layout = &dst,
                                   .dest = dest};
        ftc__heal_fetch_result res;
        TK_OK(ftc__heal_client_fetch(cli, &f, ftc__deadline_in_ms(tk_ms(5000)),
                                     &res));
        assert_int_equal(res.step, 3);
        assert_int_equal(res.batches_committed, 5);
        assert_int_equal(res.bytes, 0);
        assert_int_equal(res.chunks, 0);
        ftc__heal_snapshot_unref(snap);
    }
    ftc__heal_client_destroy(cli);
    ftc__heal_server_stop(srv);
    ftc__heal_state_fini(&src);
    ftc__heal_state_fini(&dst);
}

/* Hostile or wrong requests get exact statuses and change nothing. A
 * request is sent with method (NULL: GET) and body (NULL: none). */
static long http_status(const char *addr, const char *path, const char *method,
                        const char *body)
{
    char url[512];
    snprintf(url, sizeof(url), "http://%s%s", addr, path);
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    FILE *sink = fopen("/dev/null", "w");
    curl_easy_setopt(e, CURLOPT_WRITEDATA, sink);
    if (body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    }
    if (method != NULL) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    long status = 0;
    if (curl_easy_perform(e) == CURLE_OK) {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    }
    fclose(sink);
    curl_easy_cleanup(e);
    return status;
}

static long get_status(const char *addr, const char *path)
{
    return http_status(addr, path, NULL, NULL);
}

static void hostile_requests(void **state)
{
    (void)state;
    world *w = world_new(16 * 1024, NULL);
    const char *a = w->addr[0];
    assert_int_equal(get_status(a, "/v1/heal/7/meta"), 200);
    assert_int_equal(get_status(a, "/v1/heal/7/chunk/0"), 200);
    assert_int_equal(http_status(a, "/v1/heal/7/meta", "POST", ""), 405);
    assert_int_equal(http_status(a, "/v1/heal/7/meta", "PUT", NULL), 405);
    /* No heal request has a body: any is refused, whatever the route. */
    assert_int_equal(http_status(a, "/v1/heal/7/meta", "POST", "x"), 413);
    assert_int_equal(http_status(a, "/v1/heal/7/meta", "GET", "x"), 413);
    assert_int_equal(
        http_status(a, "/v1/heal/7/release?replica=r", "POST", "x"), 413);
    static const char *const not_found[] = {
        "/",
        "/v1/heal/-7/meta",
        "/v1/heal/7/chunk/99999",
        "/v1/heal/7/chunk/1x",
        "/v1/heal/99999999999999999999999/meta",
        "/v1/heal/7/meta/",
        "/v1/heal/6/meta",
    };
    for (size_t i = 0; i < sizeof(not_found) / sizeof(not_found[0]); i++) {
        assert_int_equal(get_status(a, not_found[i]), 404);
    }
    /* The server still serves a whole transfer. */
    ftc__heal_fetch f = fetch_of(w, 1);
    ftc__heal_fetch_result res;
    TK_OK(run_fetch(w, &f, 5000, &res));
    assert_same_state(&w->src, &w->dst);
    world_free(w);
}

static void bad_server_options(void **state)
{
    (void)state;
    ftc__heal_server *s = (ftc__heal_server *)1;
    ftc__heal_server_opts o = {0};
    o.port = 70000;
    TK_EXPECT(ftc__heal_server_start(&s, &o), FTC_EINVAL);
    assert_null(s);
    o.port = 0;
    o.token = "";
    TK_EXPECT(ftc__heal_server_start(&s, &o), FTC_EINVAL);
    o.token = NULL;
    o.host = "203.0.113.1"; /* not an address of this host */
    assert_int_not_equal(ftc__heal_server_start(&s, &o), 0);
    assert_null(s);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(striped_over_every_source),
        cmocka_unit_test(corrupt_chunk_is_fetched_again),
        cmocka_unit_test(source_dying_mid_transfer),
        cmocka_unit_test(source_stopped_before_the_fetch),
        cmocka_unit_test(partly_different_source),
        cmocka_unit_test(chunk_bad_everywhere),
        cmocka_unit_test(every_source_dead),
        cmocka_unit_test(wrong_step_times_out_with_reason),
        cmocka_unit_test(layout_mismatch_is_refused),
        cmocka_unit_test(metadata_over_the_limit),
        cmocka_unit_test(token_required),
        cmocka_unit_test(snapshot_published_later),
        cmocka_unit_test(abort_from_another_thread),
        cmocka_unit_test(empty_state_is_fetched),
        cmocka_unit_test(hostile_requests),
        cmocka_unit_test(bad_server_options),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
