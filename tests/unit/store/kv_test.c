/* The store state: values, add parsing, compare_set cases, waits and their
 * wake-ups, cancel, queues, barriers, watches and byte accounting. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "store/server/kv.h"
#include "store_kit.h"
#include "testkit.h"

/* What the hooks saw. */
static ftc__kv_client *readied[16];
static int nready;
static struct event {
    ftc__kv_client *c;
    int type;
    char key[32], old[32], now[32];
} events[16];
static int nevents;

static void on_ready(void *ctx, ftc__kv_client *c)
{
    (void)ctx;
    assert_true(nready < 16);
    readied[nready++] = c;
}

static void copy_str(char *out, ftc__wire_str s)
{
    assert_true(s.len < 32);
    memcpy(out, s.p, s.len);
    out[s.len] = '\0';
}

static void on_watch(void *ctx, ftc__kv_client *c, int type, ftc__wire_str key,
                     ftc__wire_str old, ftc__wire_str now)
{
    (void)ctx;
    assert_true(nevents < 16);
    struct event *e = &events[nevents++];
    e->c = c;
    e->type = type;
    copy_str(e->key, key);
    copy_str(e->old, old);
    copy_str(e->now, now);
}

static const ftc__kv_hooks hooks = {on_ready, on_watch};

static ftc__kv *new_kv(uint64_t max_bytes)
{
    nready = 0;
    nevents = 0;
    ftc__kv *kv = ftc__kv_new(&hooks, NULL, max_bytes);
    assert_non_null(kv);
    return kv;
}

static ftc__wire_str S(const char *s)
{
    ftc__wire_str w = {(const uint8_t *)s, strlen(s)};
    return w;
}

static void expect_val(ftc__kv *kv, const char *key, const char *want)
{
    const ftc__kv_value *v = ftc__kv_get(kv, S(key));
    if (want == NULL) {
        assert_null(v);
        return;
    }
    assert_non_null(v);
    assert_int_equal(v->len, strlen(want));
    assert_memory_equal(v->data, want, v->len);
}

/* A key list as a request carries it: u64 length + bytes per key. */
typedef struct keylist {
    ftc__buf b;
    uint64_t n;
} keylist;

static keylist *keys_of(keylist *kl, const char *const *keys, size_t n)
{
    ftc__buf_init(&kl->b, 1 << 16);
    for (size_t i = 0; i < n; i++) {
        sr_str(&kl->b, keys[i], strlen(keys[i]));
    }
    kl->n = n;
    return kl;
}

static int wait_on(ftc__kv *kv, ftc__kv_client *c, const char *const *keys,
                   size_t n)
{
    keylist kl;
    keys_of(&kl, keys, n);
    int rc = ftc__kv_wait(kv, c, ftc__buf_begin(&kl.b), kl.n);
    ftc__buf_free(&kl.b);
    return rc;
}

static int check_keys(ftc__kv *kv, const char *const *keys, size_t n)
{
    keylist kl;
    keys_of(&kl, keys, n);
    int rc = ftc__kv_check(kv, ftc__buf_begin(&kl.b), kl.n);
    ftc__buf_free(&kl.b);
    return rc;
}

static void set_get_delete(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    expect_val(kv, "/a", NULL);
    TK_OK(ftc__kv_set(kv, S("/a"), S("one")));
    expect_val(kv, "/a", "one");
    TK_OK(ftc__kv_set(kv, S("/a"), S("three")));
    expect_val(kv, "/a", "three");
    TK_OK(ftc__kv_set(kv, S("/empty"), S("")));
    expect_val(kv, "/empty", "");
    assert_int_equal(ftc__kv_num_keys(kv), 2);
    assert_int_equal(ftc__kv_bytes(kv), 2 + 5 + 6 + 0);
    assert_int_equal(ftc__kv_delete(kv, S("/a")), 1);
    assert_int_equal(ftc__kv_delete(kv, S("/a")), 0);
    expect_val(kv, "/a", NULL);
    assert_int_equal(ftc__kv_num_keys(kv), 1);
    assert_int_equal(ftc__kv_bytes(kv), 6);
    ftc__kv_free(kv);
}

static void add_parses_like_stoll(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    int64_t r;
    TK_OK(ftc__kv_add(kv, S("init/"), 1, &r));
    assert_true(r == 1);
    TK_OK(ftc__kv_add(kv, S("init/"), -4, &r));
    assert_true(r == -3);
    expect_val(kv, "init/", "-3");
    /* blanks, sign, trailing junk: std::stoll accepts them */
    const struct {
        const char *text;
        int64_t want;
    } ok[] = {{" \t\n12ab", 12},
              {"+7", 7},
              {"-0", 0},
              {"0042", 42},
              {"9223372036854775807", INT64_MAX},
              {"-9223372036854775808", INT64_MIN}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        TK_OK(ftc__kv_set(kv, S("/n"), S(ok[i].text)));
        TK_OK(ftc__kv_add(kv, S("/n"), 0, &r));
        assert_true(r == ok[i].want);
    }
    /* a NUL ends the number like std::stoll's c_str() */
    const uint8_t nul[] = {'5', 0, '9'};
    ftc__wire_str with_nul = {nul, 3};
    TK_OK(ftc__kv_set(kv, S("/n"), with_nul));
    TK_OK(ftc__kv_add(kv, S("/n"), 1, &r));
    assert_true(r == 6);
    /* not numbers: refused, value unchanged */
    const char *bad[] = {"",
                         "abc",
                         "- 1",
                         "+",
                         " ",
                         "x12",
                         "9223372036854775808",
                         "-9223372036854775809"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        TK_OK(ftc__kv_set(kv, S("/n"), S(bad[i])));
        TK_EXPECT(ftc__kv_add(kv, S("/n"), 1, &r), FTC_EINVAL);
        expect_val(kv, "/n", bad[i]);
    }
    /* int64 overflow wraps as PyTorch's addition does */
    TK_OK(ftc__kv_set(kv, S("/n"), S("9223372036854775807")));
    TK_OK(ftc__kv_add(kv, S("/n"), 1, &r));
    assert_true(r == INT64_MIN);
    expect_val(kv, "/n", "-9223372036854775808");
    ftc__kv_free(kv);
}

static void compare_set_four_cases(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__wire_str reply;
    /* missing, expected not empty: no change, replies expected */
    TK_OK(ftc__kv_compare_set(kv, S("/cs"), S("x"), S("y"), &reply));
    assert_int_equal(reply.len, 1);
    assert_memory_equal(reply.p, "x", 1);
    expect_val(kv, "/cs", NULL);
    /* missing, expected empty: set, replies desired */
    TK_OK(ftc__kv_compare_set(kv, S("/cs"), S(""), S("first"), &reply));
    assert_int_equal(reply.len, 5);
    assert_memory_equal(reply.p, "first", 5);
    expect_val(kv, "/cs", "first");
    /* present, equal: replaced, replies the new value */
    TK_OK(ftc__kv_compare_set(kv, S("/cs"), S("first"), S("second"), &reply));
    assert_int_equal(reply.len, 6);
    assert_memory_equal(reply.p, "second", 6);
    expect_val(kv, "/cs", "second");
    /* present, different: unchanged, replies the current value */
    TK_OK(ftc__kv_compare_set(kv, S("/cs"), S("first"), S("third"), &reply));
    assert_int_equal(reply.len, 6);
    assert_memory_equal(reply.p, "second", 6);
    expect_val(kv, "/cs", "second");
    /* present with an empty value, expected empty: equal */
    TK_OK(ftc__kv_set(kv, S("/e"), S("")));
    TK_OK(ftc__kv_compare_set(kv, S("/e"), S(""), S("z"), &reply));
    expect_val(kv, "/e", "z");
    ftc__kv_free(kv);
}

static void wait_and_wakes(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, b;
    ftc__kv_client_init(&a);
    ftc__kv_client_init(&b);
    const char *ab[] = {"/a", "/b"};
    /* nothing to wait for */
    assert_int_equal(wait_on(kv, &a, NULL, 0), 1);
    /* two keys: each write ticks one off */
    assert_int_equal(wait_on(kv, &a, ab, 2), 0);
    assert_int_equal(a.awaited, 2);
    TK_OK(ftc__kv_set(kv, S("/a"), S("1")));
    assert_int_equal(nready, 0);
    int64_t r;
    TK_OK(ftc__kv_add(kv, S("/b"), 5, &r));
    assert_int_equal(nready, 1);
    assert_ptr_equal(readied[0], &a);
    /* present now: no parking */
    assert_int_equal(wait_on(kv, &a, ab, 2), 1);
    /* append, compare_set and queue push wake too */
    const char *c1[] = {"/c"}, *d1[] = {"/d"}, *q1[] = {"/q"};
    assert_int_equal(wait_on(kv, &a, c1, 1), 0);
    TK_OK(ftc__kv_append(kv, S("/c"), S("x")));
    assert_int_equal(nready, 2);
    assert_int_equal(wait_on(kv, &a, d1, 1), 0);
    ftc__wire_str reply;
    TK_OK(ftc__kv_compare_set(kv, S("/d"), S("nope"), S("v"), &reply));
    assert_int_equal(nready, 2); /* no change, no wake */
    TK_OK(ftc__kv_compare_set(kv, S("/d"), S(""), S("v"), &reply));
    assert_int_equal(nready, 3);
    assert_int_equal(wait_on(kv, &b, q1, 1), 0);
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("item")));
    assert_int_equal(nready, 4);
    assert_ptr_equal(readied[3], &b);
    /* the same key twice counts twice and is satisfied by one write */
    const char *ee[] = {"/e", "/e"};
    assert_int_equal(wait_on(kv, &a, ee, 2), 0);
    assert_int_equal(a.awaited, 2);
    TK_OK(ftc__kv_set(kv, S("/e"), S("1")));
    assert_int_equal(nready, 5);
    /* a delete after registering does not affect the wait */
    const char *f1[] = {"/f"};
    assert_int_equal(wait_on(kv, &a, f1, 1), 0);
    TK_OK(ftc__kv_set(kv, S("/f"), S("1")));
    assert_int_equal(ftc__kv_delete(kv, S("/f")), 1);
    assert_int_equal(nready, 6);
    ftc__kv_free(kv);
}

/* Parking on one key whose slot exists allocates nothing (the client's
 * own first registration), again and again, and a watch does not take
 * that registration away. */
static void parking_allocates_nothing(void **state)
{
    (void)state;
    ftc__kv_client cl[2]; /* cl[1] also watches the key */
    for (int i = 0; i < 2; i++) {
        ftc__kv_client_init(&cl[i]);
    }
    ftc__kv *kv = new_kv(1 << 20);
    TK_OK(ftc__kv_watch(kv, &cl[1], S("/x")));
    keylist kl;
    keys_of(&kl, (const char *const[]){"/x"}, 1);
    for (int round = 0; round < 3; round++) {
        int rc[2];
        ftc__alloc_fail_after(0);
        for (int i = 0; i < 2; i++) {
            rc[i] = ftc__kv_wait(kv, &cl[i], ftc__buf_begin(&kl.b), kl.n);
        }
        ftc__alloc_fail_after(-1);
        assert_int_equal(rc[0], 0);
        assert_int_equal(rc[1], 0);
        TK_OK(ftc__kv_set(kv, S("/x"), S("v")));
        assert_int_equal(nready, 2 * (round + 1));
        assert_int_equal(ftc__kv_delete(kv, S("/x")), 1);
    }
    ftc__buf_free(&kl.b);
    for (int i = 0; i < 2; i++) {
        ftc__kv_client_forget(kv, &cl[i]);
    }
    assert_int_equal(ftc__kv_overhead(kv), 0);
    ftc__kv_free(kv);
}

static void cancel_wait(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a;
    ftc__kv_client_init(&a);
    const char *k[] = {"/k", "/other"};
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 0);
    assert_int_equal(wait_on(kv, &a, k, 2), 0);
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 1);
    assert_int_equal(a.awaited, 0);
    TK_OK(ftc__kv_set(kv, S("/k"), S("v")));
    TK_OK(ftc__kv_set(kv, S("/other"), S("v")));
    assert_int_equal(nready, 0);
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 0);
    /* a completed wait has nothing left to cancel */
    const char *z[] = {"/z"};
    assert_int_equal(wait_on(kv, &a, z, 1), 0);
    TK_OK(ftc__kv_set(kv, S("/z"), S("v")));
    assert_int_equal(nready, 1);
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 0);
    ftc__kv_free(kv);
}

static void queues(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    const char *q[] = {"/q"};
    assert_int_equal(check_keys(kv, q, 1), 0);
    assert_true(ftc__kv_queue_len(kv, S("/q")) == 0);
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("one")));
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("two")));
    assert_true(ftc__kv_queue_len(kv, S("/q")) == 2);
    /* a non-empty queue is present for CHECK, but not a map key */
    assert_int_equal(check_keys(kv, q, 1), 1);
    expect_val(kv, "/q", NULL);
    assert_int_equal(ftc__kv_num_keys(kv), 0);
    assert_int_equal(ftc__kv_bytes(kv), 2 + 3 + 3);
    assert_int_equal(ftc__kv_delete(kv, S("/q")), 0);
    int64_t size;
    ftc__kv_value *item;
    ftc__kv_queue_pop(kv, S("/q"), &size, &item);
    assert_true(size == 2);
    assert_memory_equal(item->data, "one", 3);
    ftc__kv_value_unref(item);
    ftc__kv_queue_pop(kv, S("/q"), &size, &item);
    assert_true(size == 1);
    assert_memory_equal(item->data, "two", 3);
    ftc__kv_value_unref(item);
    ftc__kv_queue_pop(kv, S("/q"), &size, &item);
    assert_true(size == 0);
    assert_null(item);
    assert_int_equal(check_keys(kv, q, 1), 0);
    assert_int_equal(ftc__kv_bytes(kv), 0);
    /* a map value and a queue under one key live side by side */
    TK_OK(ftc__kv_set(kv, S("/q"), S("v")));
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("i")));
    assert_int_equal(ftc__kv_bytes(kv), 2 + 1 + 1);
    ftc__kv_free(kv);
}

/* One push wakes one waiter: the first whose wait it completes. */
static void queue_push_wakes_one(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, b, c;
    ftc__kv_client_init(&a);
    ftc__kv_client_init(&b);
    ftc__kv_client_init(&c);
    const char *qx[] = {"/q", "/x"}, *q[] = {"/q"};
    assert_int_equal(wait_on(kv, &a, qx, 2), 0); /* needs /x too */
    assert_int_equal(wait_on(kv, &b, q, 1), 0);
    assert_int_equal(wait_on(kv, &c, q, 1), 0);
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("1")));
    assert_int_equal(nready, 1);
    assert_ptr_equal(readied[0], &b);
    assert_int_equal(a.awaited, 1); /* /q counted present for a */
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("2")));
    assert_int_equal(nready, 2);
    assert_ptr_equal(readied[1], &c);
    TK_OK(ftc__kv_set(kv, S("/x"), S("v")));
    assert_int_equal(nready, 3);
    assert_ptr_equal(readied[2], &a);
    ftc__kv_free(kv);
}

static void barrier(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, b, c, w;
    ftc__kv_client_init(&a);
    ftc__kv_client_init(&b);
    ftc__kv_client_init(&c);
    ftc__kv_client_init(&w);
    /* a plain WAIT on the key is released by the first arrival */
    const char *k[] = {"/bar"};
    assert_int_equal(wait_on(kv, &w, k, 1), 0);
    assert_int_equal(ftc__kv_barrier(kv, &a, S("/bar"), 3), 0);
    assert_int_equal(nready, 1);
    assert_ptr_equal(readied[0], &w);
    assert_int_equal(ftc__kv_barrier(kv, &b, S("/bar"), 3), 0);
    expect_val(kv, "/bar", "2");
    assert_int_equal(nready, 1);
    assert_int_equal(ftc__kv_barrier(kv, &c, S("/bar"), 3), 1);
    assert_int_equal(nready, 3);
    assert_ptr_equal(readied[1], &a);
    assert_ptr_equal(readied[2], &b);
    expect_val(kv, "/bar", "3");
    /* a cancelled barrier waiter is not released later */
    assert_int_equal(ftc__kv_barrier(kv, &a, S("/b2"), 2), 0);
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 1);
    assert_int_equal(ftc__kv_barrier(kv, &b, S("/b2"), 2), 1);
    assert_int_equal(nready, 3);
    /* a counter that is not a number */
    TK_OK(ftc__kv_set(kv, S("/b3"), S("junk")));
    TK_EXPECT(ftc__kv_barrier(kv, &a, S("/b3"), 2), FTC_EINVAL);
    assert_int_equal(a.awaited, 0);
    ftc__kv_free(kv);
}

/* Takes and checks the answer a done CONTROL_BARRIER carries. */
static void expect_outcome(ftc__kv_client *c, int64_t arrived, const char *want)
{
    assert_int_equal(c->control, 1);
    assert_true(c->arrived == arrived);
    if (want == NULL) {
        assert_null(c->outcome);
    } else {
        assert_non_null(c->outcome);
        assert_int_equal(c->outcome->len, strlen(want));
        assert_memory_equal(c->outcome->data, want, c->outcome->len);
    }
    ftc__kv_value_unref(c->outcome);
    c->outcome = NULL;
    c->control = 0;
}

/* CONTROL_BARRIER writes c10d's keys, releases every waiter of
 * last_members (its own kind and plain WAITs) when the last rank comes,
 * and answers later arrivals at once with what last_members holds. */
static void control_barrier(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, b, c, d, w;
    ftc__kv_client *all[] = {&a, &b, &c, &d, &w};
    for (int i = 0; i < 5; i++) {
        ftc__kv_client_init(all[i]);
    }
    const char *last[] = {"/cb/last_members"};
    assert_int_equal(wait_on(kv, &w, last, 1), 0);
    assert_int_equal(ftc__kv_control_barrier(kv, &a, S("/cb"), 2, 3), 0);
    assert_int_equal(a.awaited, 1);
    assert_true(a.arrived == 1);
    expect_val(kv, "/cb/2", "joined");
    expect_val(kv, "/cb/num_members", "1");
    assert_int_equal(ftc__kv_control_barrier(kv, &b, S("/cb"), 0, 3), 0);
    assert_int_equal(nready, 0);
    assert_int_equal(ftc__kv_control_barrier(kv, &c, S("/cb"), 1, 3), 1);
    expect_val(kv, "/cb/last_members", "<val_ignored>");
    expect_val(kv, "/cb/num_members", "3");
    assert_int_equal(nready, 3);
    assert_ptr_equal(readied[0], &w);
    assert_ptr_equal(readied[1], &a);
    assert_ptr_equal(readied[2], &b);
    expect_outcome(&a, 1, "<val_ignored>");
    expect_outcome(&b, 2, "<val_ignored>");
    expect_outcome(&c, 3, "<val_ignored>");
    /* one more arrival than the world: answered at once */
    assert_int_equal(ftc__kv_control_barrier(kv, &d, S("/cb"), 0, 3), 1);
    expect_outcome(&d, 4, "<val_ignored>");
    /* abandoned: whoever waits gets the marker, and so does the last
     * arrival, whose compare_set changes nothing */
    nready = 0;
    assert_int_equal(ftc__kv_control_barrier(kv, &a, S("/ab"), 0, 2), 0);
    ftc__wire_str reply;
    TK_OK(ftc__kv_compare_set(kv, S("/ab/last_members"), S(""), S("gone"),
                              &reply));
    assert_int_equal(nready, 1);
    expect_outcome(&a, 1, "gone");
    assert_int_equal(ftc__kv_control_barrier(kv, &b, S("/ab"), 1, 2), 1);
    expect_outcome(&b, 2, "gone");
    expect_val(kv, "/ab/last_members", "gone");
    /* too many arrivals and no last_members: at once, no value */
    int64_t r;
    TK_OK(ftc__kv_add(kv, S("/ov/num_members"), 5, &r));
    assert_int_equal(ftc__kv_control_barrier(kv, &a, S("/ov"), 0, 3), 1);
    expect_outcome(&a, 6, NULL);
    /* a counter that is not a number changes nothing */
    TK_OK(ftc__kv_set(kv, S("/nn/num_members"), S("junk")));
    TK_EXPECT(ftc__kv_control_barrier(kv, &a, S("/nn"), 0, 2), FTC_EINVAL);
    assert_int_equal(a.awaited, 0);
    assert_int_equal(a.control, 0);
    expect_val(kv, "/nn/0", NULL);
    /* cancelled: not released later */
    nready = 0;
    assert_int_equal(ftc__kv_control_barrier(kv, &a, S("/cc"), 0, 2), 0);
    assert_int_equal(ftc__kv_cancel_wait(kv, &a), 1);
    assert_int_equal(a.control, 0);
    assert_int_equal(ftc__kv_control_barrier(kv, &b, S("/cc"), 1, 2), 1);
    expect_outcome(&b, 2, "<val_ignored>");
    assert_int_equal(nready, 0);
    for (int i = 0; i < 5; i++) {
        ftc__kv_client_forget(kv, all[i]);
    }
    ftc__kv_free(kv);
}

/* c10d ranks doing the barrier with plain ops (ADD, SET, SET
 * last_members) and CONTROL_BARRIER ranks share one barrier. */
static void control_barrier_with_plain_ops(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, w;
    ftc__kv_client_init(&a);
    ftc__kv_client_init(&w);
    int64_t n;
    /* rank 0 (c10d) first: ADD, SET its key, WAIT */
    TK_OK(ftc__kv_add(kv, S("/m/num_members"), 1, &n));
    assert_true(n == 1);
    TK_OK(ftc__kv_set(kv, S("/m/0"), S("joined")));
    const char *last[] = {"/m/last_members"};
    assert_int_equal(wait_on(kv, &w, last, 1), 0);
    /* rank 1 (ftc) waits */
    assert_int_equal(ftc__kv_control_barrier(kv, &a, S("/m"), 1, 3), 0);
    /* rank 2 (c10d) is the last: ADD returns 3, SET last_members */
    TK_OK(ftc__kv_add(kv, S("/m/num_members"), 1, &n));
    assert_true(n == 3);
    TK_OK(ftc__kv_set(kv, S("/m/2"), S("joined")));
    assert_int_equal(nready, 0);
    TK_OK(ftc__kv_set(kv, S("/m/last_members"), S("<val_ignored>")));
    assert_int_equal(nready, 2);
    expect_outcome(&a, 2, "<val_ignored>");
    ftc__kv_client_forget(kv, &a);
    ftc__kv_client_forget(kv, &w);
    ftc__kv_free(kv);
}

static void watches(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a;
    ftc__kv_client_init(&a);
    TK_OK(ftc__kv_watch(kv, &a, S("/w")));
    TK_OK(ftc__kv_set(kv, S("/w"), S("1")));
    int64_t r;
    TK_OK(ftc__kv_add(kv, S("/w"), 1, &r));
    ftc__wire_str reply;
    TK_OK(ftc__kv_compare_set(kv, S("/w"), S("9"), S("x"), &reply));
    TK_OK(ftc__kv_compare_set(kv, S("/w"), S("2"), S("x"), &reply));
    TK_OK(ftc__kv_append(kv, S("/w"), S("y")));
    assert_int_equal(ftc__kv_delete(kv, S("/w")), 1);
    TK_OK(ftc__kv_set(kv, S("/other"), S("1")));
    const struct {
        int type;
        const char *old, *now;
    } want[] = {{FTC__WATCH_KEY_CREATED, "", "1"},
                {FTC__WATCH_KEY_UPDATED, "1", "2"},
                {FTC__WATCH_KEY_UPDATED, "2", "x"},
                {FTC__WATCH_KEY_UPDATED, "x", "xy"},
                {FTC__WATCH_KEY_DELETED, "xy", ""}};
    assert_int_equal(nevents, 5);
    for (int i = 0; i < 5; i++) {
        assert_ptr_equal(events[i].c, &a);
        assert_int_equal(events[i].type, want[i].type);
        assert_string_equal(events[i].key, "/w");
        assert_string_equal(events[i].old, want[i].old);
        assert_string_equal(events[i].now, want[i].now);
    }
    ftc__kv_client_forget(kv, &a);
    TK_OK(ftc__kv_set(kv, S("/w"), S("again")));
    assert_int_equal(nevents, 5);
    ftc__kv_free(kv);
}

/* What the state holds in all: data plus bookkeeping. */
static uint64_t held(const ftc__kv *kv)
{
    return ftc__kv_bytes(kv) + ftc__kv_overhead(kv);
}

static void total_bytes_limit(void **state)
{
    (void)state;
    /* measure one key with an 8-byte value, then allow exactly that */
    ftc__kv *probe = new_kv(UINT64_MAX);
    TK_OK(ftc__kv_set(probe, S("/a"), S("12345678")));
    uint64_t one = held(probe);
    assert_int_equal(ftc__kv_bytes(probe), 2 + 8);
    ftc__kv_free(probe);
    ftc__kv *kv = new_kv(one);
    TK_OK(ftc__kv_set(kv, S("/a"), S("12345678")));
    assert_int_equal(held(kv), one);
    TK_EXPECT(ftc__kv_set(kv, S("/b"), S("")), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "store full"));
    expect_val(kv, "/b", NULL);
    TK_EXPECT(ftc__kv_set(kv, S("/a"), S("123456789")), FTC_EMSGSIZE);
    expect_val(kv, "/a", "12345678");
    TK_EXPECT(ftc__kv_append(kv, S("/a"), S("9")), FTC_EMSGSIZE);
    TK_EXPECT(ftc__kv_queue_push(kv, S("/a"), S("")), FTC_EMSGSIZE);
    int64_t r;
    TK_EXPECT(ftc__kv_add(kv, S("/c"), 1, &r), FTC_EMSGSIZE);
    assert_int_equal(held(kv), one);
    /* replacing with a smaller value is fine at the limit */
    TK_OK(ftc__kv_set(kv, S("/a"), S("1")));
    assert_int_equal(held(kv), one - 7);
    assert_int_equal(ftc__kv_delete(kv, S("/a")), 1);
    assert_int_equal(ftc__kv_bytes(kv), 0);
    assert_int_equal(ftc__kv_overhead(kv), 0);
    ftc__kv_free(kv);
}

/* Room reserved for a value still arriving counts against the limit until
 * given back; a value built by the caller is stored without a copy. */
static void reserved_room_and_owned_values(void **state)
{
    (void)state;
    ftc__kv *probe = new_kv(UINT64_MAX);
    TK_OK(ftc__kv_set(probe, S("/a"), S("12345678")));
    uint64_t one = held(probe);
    ftc__kv_free(probe);
    ftc__kv *kv = new_kv(one);
    uint64_t room;
    TK_EXPECT(ftc__kv_reserve(kv, 2, 9, &room), FTC_EMSGSIZE);
    assert_int_equal(ftc__kv_reserved(kv), 0);
    TK_OK(ftc__kv_reserve(kv, 2, 8, &room));
    assert_int_equal(room, one);
    assert_int_equal(ftc__kv_reserved(kv), one);
    /* held for the value on its way: nothing else fits */
    TK_EXPECT(ftc__kv_set(kv, S("/b"), S("")), FTC_EMSGSIZE);
    ftc__kv_value *v = ftc__kv_value_alloc(8);
    assert_non_null(v);
    memcpy(v->data, "abcdefgh", 8);
    TK_EXPECT(ftc__kv_set_value(kv, S("/a"), v), FTC_EMSGSIZE);
    ftc__kv_unreserve(kv, room);
    assert_int_equal(ftc__kv_reserved(kv), 0);
    TK_OK(ftc__kv_set_value(kv, S("/a"), v));
    assert_ptr_equal(ftc__kv_get(kv, S("/a")), v);
    expect_val(kv, "/a", "abcdefgh");
    assert_int_equal(held(kv), one);
    ftc__kv_free(kv);
}

/* The server's charges (its buffers and queued replies) count against
 * the limit with the data; a value that leaves the map while a reply
 * still holds it stays charged until the reply lets go of it. */
static void charges_and_orphaned_values(void **state)
{
    (void)state;
    ftc__kv *probe = new_kv(UINT64_MAX);
    TK_OK(ftc__kv_set(probe, S("/a"), S("12345678")));
    uint64_t one = held(probe);
    ftc__kv_free(probe);
    ftc__kv *kv = new_kv(one + 30);
    TK_OK(ftc__kv_afford(kv, one + 30));
    TK_EXPECT(ftc__kv_afford(kv, one + 31), FTC_EMSGSIZE);
    ftc__kv_charge(kv, 30);
    assert_int_equal(ftc__kv_charged(kv), 30);
    TK_EXPECT(ftc__kv_afford(kv, one + 1), FTC_EMSGSIZE);
    assert_non_null(strstr(ftc_last_error(), "30 B of it buffers"));
    TK_OK(ftc__kv_set(kv, S("/a"), S("12345678")));
    TK_EXPECT(ftc__kv_set(kv, S("/b"), S("")), FTC_EMSGSIZE);
    ftc__kv_uncharge(kv, 30);
    assert_int_equal(ftc__kv_charged(kv), 0);
    /* A reply holds /a's value; replacing or deleting it orphans it. */
    ftc__kv_value *reply =
        ftc__kv_value_ref((ftc__kv_value *)ftc__kv_get(kv, S("/a")));
    uint64_t cost = reply->cap + sizeof(*reply);
    assert_true(cost > 30);
    TK_OK(ftc__kv_set(kv, S("/a"), S("x")));
    assert_int_equal(ftc__kv_charged(kv), cost);
    assert_int_equal(ftc__kv_delete(kv, S("/a")), 1);
    assert_int_equal(ftc__kv_charged(kv), cost);
    TK_EXPECT(ftc__kv_set(kv, S("/a"), S("12345678")), FTC_EMSGSIZE);
    ftc__kv_value_unref(reply);
    assert_int_equal(ftc__kv_charged(kv), 0);
    TK_OK(ftc__kv_set(kv, S("/a"), S("12345678")));
    /* A popped item is the caller's, charged until released. */
    assert_int_equal(ftc__kv_delete(kv, S("/a")), 1);
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("item")));
    int64_t size;
    ftc__kv_value *item;
    ftc__kv_queue_pop(kv, S("/q"), &size, &item);
    assert_int_equal(size, 1);
    assert_int_equal(ftc__kv_bytes(kv), 0);
    assert_int_equal(ftc__kv_charged(kv), item->cap + sizeof(*item));
    ftc__kv_value_unref(item);
    assert_int_equal(ftc__kv_charged(kv), 0);
    ftc__kv_free(kv);
}

/* Waits and watches hold memory too: they count against the limit, so
 * empty requests cannot exhaust the server. */
static void registrations_count_against_the_limit(void **state)
{
    (void)state;
    ftc__kv *probe = new_kv(UINT64_MAX);
    ftc__kv_client a;
    ftc__kv_client_init(&a);
    const char *k1[] = {"/w1"};
    assert_int_equal(wait_on(probe, &a, k1, 1), 0);
    uint64_t one_wait = held(probe);
    ftc__kv_client_forget(probe, &a);
    assert_int_equal(held(probe), 0);
    ftc__kv_free(probe);
    ftc__kv *kv = new_kv(2 * one_wait);
    const char *k3[] = {"/w1", "/w2", "/w3"};
    TK_EXPECT(wait_on(kv, &a, k3, 3), FTC_EMSGSIZE);
    assert_int_equal(a.awaited, 0);
    assert_true(ftc__list_empty(&a.waits));
    assert_int_equal(held(kv), 0);
    assert_int_equal(wait_on(kv, &a, k3, 2), 0);
    assert_int_equal(held(kv), 2 * one_wait);
    ftc__kv_client_forget(kv, &a);
    TK_OK(ftc__kv_watch(kv, &a, S("/w1")));
    TK_OK(ftc__kv_watch(kv, &a, S("/w2")));
    TK_EXPECT(ftc__kv_watch(kv, &a, S("/w3")), FTC_EMSGSIZE);
    ftc__kv_client_forget(kv, &a);
    assert_int_equal(held(kv), 0);
    ftc__kv_free(kv);
}

/* Everything given back: no bytes and no bookkeeping left. */
static void accounting_returns_to_zero(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    ftc__kv_client a, b;
    ftc__kv_client_init(&a);
    ftc__kv_client_init(&b);
    int64_t r;
    TK_OK(ftc__kv_set(kv, S("/s"), S("value")));
    TK_OK(ftc__kv_add(kv, S("/n"), 3, &r));
    TK_OK(ftc__kv_append(kv, S("/ap"), S("x")));
    TK_OK(ftc__kv_append(kv, S("/ap"), S("y")));
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("i")));
    TK_OK(ftc__kv_queue_push(kv, S("/s"), S("j")));
    const char *w[] = {"/x", "/s", "/y"};
    assert_int_equal(wait_on(kv, &a, w, 3), 0);
    TK_OK(ftc__kv_watch(kv, &b, S("/x")));
    TK_OK(ftc__kv_watch(kv, &b, S("/s")));
    assert_int_equal(ftc__kv_barrier(kv, &b, S("/bar"), 5), 0);
    ftc__kv_client c;
    ftc__kv_client_init(&c);
    assert_int_equal(ftc__kv_control_barrier(kv, &c, S("/cb"), 0, 2), 0);
    TK_OK(ftc__kv_set(kv, S("/x"), S("1")));
    assert_true(ftc__kv_overhead(kv) > 0);
    const char *keys[] = {
        "/s", "/n", "/ap", "/x", "/bar", "/cb/0", "/cb/num_members"};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(ftc__kv_delete(kv, S(keys[i])), 1);
    }
    const char *queues[] = {"/q", "/s"};
    for (int i = 0; i < 2; i++) {
        int64_t size;
        ftc__kv_value *item;
        ftc__kv_queue_pop(kv, S(queues[i]), &size, &item);
        assert_true(size == 1);
        ftc__kv_value_unref(item);
    }
    ftc__kv_client_forget(kv, &a);
    ftc__kv_client_forget(kv, &b);
    ftc__kv_client_forget(kv, &c);
    assert_int_equal(ftc__kv_bytes(kv), 0);
    assert_int_equal(ftc__kv_overhead(kv), 0);
    assert_int_equal(ftc__kv_num_keys(kv), 0);
    ftc__kv_free(kv);
}

/* A value a reply still references never changes under it. */
static void append_keeps_shared_values(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    TK_OK(ftc__kv_append(kv, S("/ap"), S("ab")));
    TK_OK(ftc__kv_append(kv, S("/ap"), S("cd")));
    expect_val(kv, "/ap", "abcd");
    ftc__kv_value *held =
        ftc__kv_value_ref((ftc__kv_value *)ftc__kv_get(kv, S("/ap")));
    TK_OK(ftc__kv_append(kv, S("/ap"), S("ef")));
    expect_val(kv, "/ap", "abcdef");
    assert_int_equal(held->len, 4);
    assert_memory_equal(held->data, "abcd", 4);
    ftc__kv_value_unref(held);
    for (int i = 0; i < 1000; i++) {
        TK_OK(ftc__kv_append(kv, S("/ap"), S("x")));
    }
    assert_int_equal(ftc__kv_get(kv, S("/ap"))->len, 1006);
    assert_int_equal(ftc__kv_bytes(kv), 3 + 1006);
    ftc__kv_free(kv);
}

static void count_key(void *arg, ftc__wire_str key)
{
    int *n = arg;
    assert_true(key.len == 2 && key.p[0] == '/');
    (*n)++;
}

static void list_keys(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(1 << 20);
    TK_OK(ftc__kv_set(kv, S("/a"), S("1")));
    TK_OK(ftc__kv_set(kv, S("/b"), S("1")));
    TK_OK(ftc__kv_queue_push(kv, S("/q"), S("1"))); /* not a map key */
    ftc__kv_client w;
    ftc__kv_client_init(&w);
    const char *k[] = {"/never"};
    assert_int_equal(wait_on(kv, &w, k, 1), 0); /* not a key either */
    int n = 0;
    ftc__kv_foreach_key(kv, count_key, &n);
    assert_int_equal(n, 2);
    ftc__kv_client_forget(kv, &w);
    ftc__kv_free(kv);
}

/* Many keys force the table to grow; all stay reachable. */
static void many_keys(void **state)
{
    (void)state;
    ftc__kv *kv = new_kv(UINT64_MAX);
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "/k%d", i);
        TK_OK(ftc__kv_set(kv, S(key), S(key)));
    }
    assert_int_equal(ftc__kv_num_keys(kv), 20000);
    for (int i = 0; i < 20000; i += 7) {
        snprintf(key, sizeof(key), "/k%d", i);
        expect_val(kv, key, key);
    }
    ftc__kv_free(kv);
}

/* With the Nth allocation failing, each op fails with FTC_ENOMEM and
 * leaves no half-made state; ASan proves nothing leaks. */
static void allocation_failures(void **state)
{
    (void)state;
    for (long n = 0; n < 40; n++) {
        ftc__kv *kv = new_kv(1 << 20);
        ftc__kv_client a;
        ftc__kv_client_init(&a);
        const char *k[] = {"/x", "/y", "/z"};
        keylist kl;
        keys_of(&kl, k, 3);
        ftc__alloc_fail_after(n);
        int rc1 = ftc__kv_set(kv, S("/a"), S("v"));
        int rc2 = ftc__kv_wait(kv, &a, ftc__buf_begin(&kl.b), kl.n);
        int rc3 = ftc__kv_queue_push(kv, S("/q"), S("i"));
        int rc4 = ftc__kv_watch(kv, &a, S("/w"));
        int rc5 = ftc__kv_barrier(kv, &a, S("/b"), 2);
        ftc__kv_cancel_wait(kv, &a);
        int rc6 = ftc__kv_control_barrier(kv, &a, S("/c"), 0, 2);
        ftc__alloc_fail_after(-1);
        assert_true(rc1 == 0 || rc1 == FTC_ENOMEM);
        assert_true(rc2 == 0 || rc2 == FTC_ENOMEM);
        assert_true(rc3 == 0 || rc3 == FTC_ENOMEM);
        assert_true(rc4 == 0 || rc4 == FTC_ENOMEM);
        assert_true(rc5 == 0 || rc5 == 1 || rc5 == FTC_ENOMEM);
        assert_true(rc6 == 0 || rc6 == FTC_ENOMEM);
        if (rc6 == FTC_ENOMEM) {
            assert_int_equal(a.awaited, 0);
            assert_int_equal(a.control, 0);
        }
        if (rc2 == FTC_ENOMEM) {
            assert_int_equal(a.awaited, 0);
            assert_true(ftc__list_empty(&a.waits));
        }
        ftc__kv_client_forget(kv, &a);
        ftc__kv_free(kv);
        ftc__buf_free(&kl.b);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_get_delete),
        cmocka_unit_test(add_parses_like_stoll),
        cmocka_unit_test(compare_set_four_cases),
        cmocka_unit_test(wait_and_wakes),
        cmocka_unit_test(parking_allocates_nothing),
        cmocka_unit_test(cancel_wait),
        cmocka_unit_test(queues),
        cmocka_unit_test(queue_push_wakes_one),
        cmocka_unit_test(barrier),
        cmocka_unit_test(control_barrier),
        cmocka_unit_test(control_barrier_with_plain_ops),
        cmocka_unit_test(watches),
        cmocka_unit_test(total_bytes_limit),
        cmocka_unit_test(reserved_room_and_owned_values),
        cmocka_unit_test(charges_and_orphaned_values),
        cmocka_unit_test(registrations_count_against_the_limit),
        cmocka_unit_test(accounting_returns_to_zero),
        cmocka_unit_test(append_keeps_shared_values),
        cmocka_unit_test(list_keys),
        cmocka_unit_test(many_keys),
        cmocka_unit_test(allocation_failures),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
