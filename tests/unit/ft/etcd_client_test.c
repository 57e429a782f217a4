/* The etcd client (src/ft/lighthouse/etcd.c) against fake etcd endpoints
 * (libmicrohttpd answering what each case sets) and none at all: bad
 * endpoint lists, unreachable endpoints, answers that are not etcd's,
 * values that are not base64 or too long, etcd's own errors, and an
 * endpoint that cannot serve (gRPC UNAVAILABLE) handing over to the next.
 * What the client sends is checked too (keys in base64, the compares). */
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ft/lighthouse/etcd.h"
#include "testkit.h"

/* One fake endpoint: answers every POST with status and body, and keeps
 * the last request's path and body. */
typedef struct fake {
    struct MHD_Daemon *mhd;
    int port;
    pthread_mutex_t mu;
    unsigned status;
    char body[1024];
    char last_path[128], last_body[2048];
    int requests;
} fake;

typedef struct req_body {
    char data[2048];
    size_t len;
} req_body;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **ptr)
{
    (void)method;
    (void)version;
    fake *f = cls;
    req_body *b = *ptr;
    if (b == NULL) {
        *ptr = calloc(1, sizeof(req_body));
        return *ptr != NULL ? MHD_YES : MHD_NO;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        if (b->len + n < sizeof(b->data)) {
            memcpy(b->data + b->len, upload, n);
            b->len += n;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&f->mu);
    snprintf(f->last_path, sizeof(f->last_path), "%s", url);
    snprintf(f->last_body, sizeof(f->last_body), "%.*s", (int)b->len, b->data);
    f->requests++;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(f->body), f->body, MHD_RESPMEM_MUST_COPY);
    unsigned status = f->status;
    pthread_mutex_unlock(&f->mu);
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static void on_done(void *cls, struct MHD_Connection *c, void **ptr,
                    enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    free(*ptr);
    *ptr = NULL;
}

static void fake_start(fake *f)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                              on_request, f, MHD_OPTION_NOTIFY_COMPLETED,
                              on_done, NULL, MHD_OPTION_END);
    assert_non_null(f->mhd);
    f->port = MHD_get_daemon_info(f->mhd, MHD_DAEMON_INFO_BIND_PORT)->port;
}

static void fake_say(fake *f, unsigned status, const char *body)
{
    pthread_mutex_lock(&f->mu);
    f->status = status;
    snprintf(f->body, sizeof(f->body), "%s", body);
    pthread_mutex_unlock(&f->mu);
}

static void fake_stop(fake *f)
{
    MHD_stop_daemon(f->mhd);
    pthread_mutex_destroy(&f->mu);
}

static ftc__etcd *client_of(const fake *a, const fake *b)
{
    char urls[128];
    int n = snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", a->port);
    if (b != NULL) {
        snprintf(urls + n, sizeof(urls) - (size_t)n, ",http://127.0.0.1:%d/",
                 b->port);
    }
    ftc__etcd *e;
    TK_OK(ftc__etcd_create(urls, 200, &e));
    return e;
}

static ftc__deadline soon(void)
{
    return ftc__deadline_in_ms(tk_ms(2000));
}

/* ----------------------------------------------------------------- tests */

static void bad_endpoint_lists_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "127.0.0.1:2379",
        "https://127.0.0.1:2379",
        "http://",
        ("http://a:1,http://a:2,http://a:3,http://a:4,http://a:5,http://a:6,"
         "http://a:7,http://a:8,http://a:9"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ftc__etcd *e = (ftc__etcd *)1;
        TK_EXPECT(ftc__etcd_create(bad[i], 100, &e), FTC_EINVAL);
        assert_null(e);
    }
    ftc__etcd *e = (ftc__etcd *)1;
    TK_EXPECT(ftc__etcd_create("http://a:1", 0, &e), FTC_EINVAL);
    TK_OK(ftc__etcd_create("http://a:1,http://b:2/", 100, &e));
    ftc__etcd_destroy(e);
}

static void nobody_answers_by_the_deadline(void **state)
{
    (void)state;
    ftc__etcd *e;
    /* Port 1 on loopback refuses at once: the client keeps trying both
     * until the deadline, then names the last failure. */
    TK_OK(ftc__etcd_create("http://127.0.0.1:1,http://127.0.0.1:1", 100, &e));
    ftc__etcd_kv kv;
    int64_t t0 = tk_now_ms();
    TK_EXPECT(ftc__etcd_get(e, "k", ftc__deadline_in_ms(300), &kv),
              FTC_ETIMEDOUT);
    assert_true(tk_now_ms() - t0 >= 290);
    assert_non_null(strstr(ftc_last_error(), "127.0.0.1:1"));
    ftc__etcd_destroy(e);
}

static void answers_that_are_not_etcds(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    ftc__etcd *e = client_of(&f, NULL);
    ftc__etcd_kv kv;
    int64_t id = 0, ttl = 0;
    fake_say(&f, 200, "<html>not etcd</html>");
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPROTO);
    fake_say(&f, 200, "[1, 2]");
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPROTO);
    /* A lease without an ID. */
    fake_say(&f, 200, "{\"TTL\":\"5\"}");
    TK_EXPECT(ftc__etcd_lease_grant(e, 5, soon(), &id), FTC_EPROTO);
    /* Values that are not base64, or longer than a value may be. */
    fake_say(&f, 200, "{\"kvs\":[{\"key\":\"aw==\",\"value\":\"!!!\"}]}");
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPROTO);
    char big[800];
    snprintf(big, sizeof(big), "{\"kvs\":[{\"value\":\"%0*d\"}]}", 400, 0);
    memset(strchr(big, '0'), 'A', 400);
    fake_say(&f, 200, big);
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPROTO);
    fake_say(&f, 200, "{\"kvs\":\"no\"}");
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPROTO);
    /* A keepalive of a lease etcd no longer has: no TTL in the result. */
    fake_say(&f, 200, "{\"result\":{\"ID\":\"7\"}}");
    ttl = 9;
    TK_OK(ftc__etcd_lease_keepalive(e, 7, soon(), &ttl));
    assert_int_equal(ttl, 0);
    ftc__etcd_destroy(e);
    fake_stop(&f);
}

static void etcd_errors_carry_its_words(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    ftc__etcd *e = client_of(&f, NULL);
    fake_say(&f, 400,
             "{\"error\":\"etcdserver: too many operations\",\"code\":3}");
    ftc__etcd_kv kv;
    TK_EXPECT(ftc__etcd_get(e, "k", soon(), &kv), FTC_EPEER);
    assert_non_null(strstr(ftc_last_error(), "too many operations"));
    /* Revoking a lease etcd does not have is done, not an error. */
    fake_say(&f, 404,
             "{\"error\":\"etcdserver: requested lease not found\","
             "\"code\":5}");
    TK_OK(ftc__etcd_lease_revoke(e, 42, soon()));
    ftc__etcd_destroy(e);
    fake_stop(&f);
}

static void an_endpoint_that_cannot_serve_hands_over(void **state)
{
    (void)state;
    static fake a, b;
    fake_start(&a);
    fake_start(&b);
    ftc__etcd *e = client_of(&a, &b);
    fake_say(&a, 503, "{\"error\":\"etcdserver: no leader\",\"code\":14}");
    fake_say(&b, 200,
             "{\"kvs\":[{\"key\":\"aw==\",\"create_revision\":\"12\","
             "\"mod_revision\":\"13\",\"lease\":\"99\",\"value\":"
             "\"aGVsbG8=\"}]}");
    ftc__etcd_kv kv;
    TK_OK(ftc__etcd_get(e, "ftc/x", soon(), &kv));
    assert_true(kv.found);
    assert_string_equal(kv.value, "hello");
    assert_int_equal(kv.create_revision, 12);
    assert_int_equal(kv.mod_revision, 13);
    assert_int_equal(kv.lease, 99);
    assert_int_equal(a.requests, 1);
    /* The key went out in base64 to /v3/kv/range. */
    assert_string_equal(b.last_path, "/v3/kv/range");
    assert_non_null(strstr(b.last_body, "\"ZnRjL3g=\""));
    /* The next call starts where the last one was answered. */
    TK_OK(ftc__etcd_get(e, "ftc/x", soon(), &kv));
    assert_int_equal(a.requests, 1);
    /* Absent: found false. */
    fake_say(&b, 200, "{\"header\":{}}");
    TK_OK(ftc__etcd_get(e, "ftc/x", soon(), &kv));
    assert_false(kv.found);
    /* A stream's error (lease keepalive) comes as an object, with HTTP
     * 200: UNAVAILABLE hands over too, anything else is etcd's word. */
    fake_say(&b, 200,
             "{\"error\":{\"grpc_code\":14,\"http_code\":503,"
             "\"message\":\"etcdserver: no leader\"}}");
    fake_say(&a, 200, "{\"result\":{\"ID\":\"7\",\"TTL\":\"4\"}}");
    int64_t ttl = 0;
    TK_OK(ftc__etcd_lease_keepalive(e, 7, soon(), &ttl));
    assert_int_equal(ttl, 4);
    fake_say(&a, 200,
             "{\"error\":{\"grpc_code\":9,\"message\":\"etcdserver: "
             "lease expired\"}}");
    TK_EXPECT(ftc__etcd_lease_keepalive(e, 7, soon(), &ttl), FTC_EPEER);
    assert_non_null(strstr(ftc_last_error(), "lease expired"));
    ftc__etcd_destroy(e);
    fake_stop(&a);
    fake_stop(&b);
}

static void transactions_say_what_they_compare(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    ftc__etcd *e = client_of(&f, NULL);
    /* Lost: the holder is read from the failure branch's range. */
    fake_say(&f, 200,
             "{\"responses\":[{\"response_range\":{\"kvs\":[{\"value\":"
             "\"MTAuMC4wLjE6Mjk1MTA=\",\"create_revision\":\"5\"}]}}]}");
    bool won = true;
    int64_t rev = 0;
    ftc__etcd_kv holder;
    TK_OK(ftc__etcd_put_if_absent(e, "p/leader", "me", 77, soon(), &won, &rev,
                                  &holder));
    assert_false(won);
    assert_string_equal(holder.value, "10.0.0.1:29510");
    assert_int_equal(holder.create_revision, 5);
    json_error_t err;
    json_t *sent = json_loads(f.last_body, 0, &err);
    assert_non_null(sent);
    json_t *cmp = json_array_get(json_object_get(sent, "compare"), 0);
    assert_string_equal(json_string_value(json_object_get(cmp, "target")),
                        "CREATE");
    assert_string_equal(
        json_string_value(json_object_get(cmp, "create_revision")), "0");
    json_t *put = json_object_get(
        json_array_get(json_object_get(sent, "success"), 0), "request_put");
    assert_string_equal(json_string_value(json_object_get(put, "lease")), "77");
    assert_string_equal(json_string_value(json_object_get(put, "value")),
                        "bWU=");
    json_decref(sent);
    /* Won: the revision of the put. */
    fake_say(&f, 200, "{\"header\":{\"revision\":\"31\"},\"succeeded\":true}");
    TK_OK(ftc__etcd_put_if_absent(e, "p/leader", "me", 77, soon(), &won, &rev,
                                  NULL));
    assert_true(won);
    assert_int_equal(rev, 31);
    /* Guarded: both compares, the guard's creation and the key's last
     * change. */
    bool done = true;
    fake_say(&f, 200, "{\"header\":{\"revision\":\"32\"}}");
    TK_OK(ftc__etcd_put_guarded(e, "p/leader", 31, "p/epochs", 0, "4096",
                                soon(), &done));
    assert_false(done);
    sent = json_loads(f.last_body, 0, &err);
    json_t *cmps = json_object_get(sent, "compare");
    assert_int_equal(json_array_size(cmps), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(cmps, 0), "create_revision")),
                        "31");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(cmps, 1), "mod_revision")),
                        "0");
    json_decref(sent);
    ftc__etcd_destroy(e);
    fake_stop(&f);
}

typedef struct listed {
    char keys[4][64], values[4][64];
    int n;
} listed;

static int note_key(void *arg, const char *key, const ftc__etcd_kv *kv)
{
    listed *l = arg;
    if (l->n == 4) {
        return ftc__seterr(FTC_EMSGSIZE, "more than 4 keys");
    }
    snprintf(l->keys[l->n], sizeof(l->keys[0]), "%s", key);
    snprintf(l->values[l->n++], sizeof(l->values[0]), "%s", kv->value);
    return 0;
}

/* A list is a range from the prefix to the prefix with its last byte one
 * higher, with a limit; keys and values come back decoded, each callback
 * can stop the walk, and a record that is not base64 is left out. A guarded
 * write compares only the guard and carries puts and deletes in order. */
static void lists_and_guarded_writes(void **state)
{
    (void)state;
    static fake f;
    fake_start(&f);
    ftc__etcd *e = client_of(&f, NULL);
    /* "p/jobs/a" = "1", "p/jobs/b" = "2". */
    fake_say(&f, 200,
             "{\"kvs\":[{\"key\":\"cC9qb2JzL2E=\",\"value\":\"MQ==\"},"
             "{\"key\":\"cC9qb2JzL2I=\",\"value\":\"Mg==\"}],\"more\":true}");
    listed l = {.n = 0};
    bool more = false;
    TK_OK(ftc__etcd_list(e, "p/jobs/", 2, soon(), note_key, &l, &more));
    assert_true(more);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.keys[1], "p/jobs/b");
    assert_string_equal(l.values[1], "2");
    json_error_t err;
    json_t *sent = json_loads(f.last_body, 0, &err);
    assert_non_null(sent);
    /* base64 of "p/jobs/" and "p/jobs0". */
    assert_string_equal(json_string_value(json_object_get(sent, "key")),
                        "cC9qb2JzLw==");
    assert_string_equal(json_string_value(json_object_get(sent, "range_end")),
                        "cC9qb2JzMA==");
    assert_string_equal(json_string_value(json_object_get(sent, "limit")), "2");
    json_decref(sent);
    l.n = 3;
    TK_EXPECT(ftc__etcd_list(e, "p/jobs/", 2, soon(), note_key, &l, &more),
              FTC_EMSGSIZE);
    /* A record that cannot be read is left out, not the others. */
    fake_say(&f, 200,
             "{\"kvs\":[{\"key\":\"!!\",\"value\":\"MQ==\"},"
             "{\"key\":\"cC9qb2JzL2E=\",\"value\":\"!!\"},"
             "{\"key\":\"cC9qb2JzL2I=\",\"value\":\"Mg==\"}]}");
    l.n = 0;
    TK_OK(ftc__etcd_list(e, "p/jobs/", 3, soon(), note_key, &l, &more));
    assert_int_equal(l.n, 1);
    assert_string_equal(l.keys[0], "p/jobs/b");
    TK_EXPECT(ftc__etcd_list(e, "", 2, soon(), note_key, &l, &more),
              FTC_EINVAL);

    fake_say(&f, 200, "{\"succeeded\":true}");
    ftc__etcd_op ops[] = {{"p/jobs/a", "{\"step\":3}"}, {"p/jobs/b", NULL}};
    bool done = false;
    TK_OK(ftc__etcd_write_guarded(e, "p/leader", 31, ops, 2, soon(), &done));
    assert_true(done);
    sent = json_loads(f.last_body, 0, &err);
    json_t *cmps = json_object_get(sent, "compare");
    assert_int_equal(json_array_size(cmps), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(cmps, 0), "create_revision")),
                        "31");
    json_t *writes = json_object_get(sent, "success");
    assert_non_null(json_object_get(json_array_get(writes, 0), "request_put"));
    assert_non_null(
        json_object_get(json_array_get(writes, 1), "request_delete_range"));
    json_decref(sent);
    fake_say(&f, 200, "{\"succeeded\":false}");
    TK_OK(ftc__etcd_write_guarded(e, "p/leader", 31, ops, 1, soon(), &done));
    assert_false(done);
    ftc__etcd_destroy(e);
    fake_stop(&f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_endpoint_lists_are_refused),
        cmocka_unit_test(nobody_answers_by_the_deadline),
        cmocka_unit_test(answers_that_are_not_etcds),
        cmocka_unit_test(etcd_errors_carry_its_words),
        cmocka_unit_test(an_endpoint_that_cannot_serve_hands_over),
        cmocka_unit_test(transactions_say_what_they_compare),
        cmocka_unit_test(lists_and_guarded_writes),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
