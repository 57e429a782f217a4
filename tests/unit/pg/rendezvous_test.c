/* ftc_pg_create through a store: threads meet under a prefix; a missing
 * rank times out naming its key; a malformed record is refused; bad
 * arguments start nothing; a group rebuilt under a new prefix works; with
 * a token, records that are not sealed for their place are refused; idle
 * strangers connected to a rank do not keep the group from forming; a
 * cancel of the store client ends a create waiting on a peer. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sock.h"
#include "pg_kit.h"

typedef struct member {
    pthread_t t;
    int rank, n;
    const char *prefix;
    const char *token;
    int64_t connect_ms;
    ftc_store_client *store; /* NULL: a client of its own */
    int rc;
    char msg[512];
    int sum;
    atomic_bool done;
} member;

static void *member_main(void *p)
{
    member *m = p;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.host = "127.0.0.1";
    o.connect_timeout_ms = m->connect_ms;
    o.token = m->token;
    ftc_pg *pg = NULL;
    m->rc = m->store != NULL
                ? ftc_pg_create(m->store, m->prefix, m->rank, m->n, &o, &pg)
                : pgt_create(pgt_store(), m->prefix, m->rank, m->n, &o, &pg);
    if (m->rc == 0) {
        int v = m->rank + 1;
        ftc_tensor t = ftc_tensor_cpu(&v, 1, FTC_DTYPE_I32);
        ftc_work *w;
        m->rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
        m->rc = m->rc ? m->rc : pgt_wait(w);
        m->sum = v;
    }
    snprintf(m->msg, sizeof(m->msg), "%s", ftc_last_error());
    ftc_pg_destroy(pg);
    atomic_store(&m->done, true);
    return NULL;
}

/* Starts `present` of n ranks under prefix and joins them. */
static void meet(member *ms, int n, int present, const char *prefix,
                 int64_t connect_ms)
{
    pgt_store(); /* started here, before any thread asks for it */
    for (int i = 0; i < present; i++) {
        ms[i] = (member){
            .rank = i, .n = n, .prefix = prefix, .connect_ms = connect_ms};
        pthread_create(&ms[i].t, NULL, member_main, &ms[i]);
    }
    for (int i = 0; i < present; i++) {
        pthread_join(ms[i].t, NULL);
    }
}

static void ranks_meet_under_a_prefix(void **state)
{
    (void)state;
    member ms[4];
    const char *prefixes[] = {"job/pg0", "job/pg1"}; /* a rebuild */
    for (int k = 0; k < 2; k++) {
        meet(ms, 4, 4, prefixes[k], tk_ms(20000));
        for (int i = 0; i < 4; i++) {
            if (ms[i].rc != 0) {
                fail_msg("rank %d: %s", i, ms[i].msg);
            }
            assert_int_equal(ms[i].sum, 10);
        }
    }
}

static void a_missing_rank_times_out_by_key(void **state)
{
    (void)state;
    member ms[3];
    meet(ms, 3, 2, "job/missing", tk_ms(500));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ms[i].rc, FTC_ETIMEDOUT);
        assert_non_null(strstr(ms[i].msg, "job/missing/pg/rank/2"));
        assert_non_null(strstr(ms[i].msg, "rendezvous"));
    }
}

static void a_malformed_address_is_refused(void **state)
{
    (void)state;
    ftc_store_client *c;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    TK_OK(ftc_store_client_set(c, "job/bad/pg/rank/1", "garbage", 7, 5000));
    member m = {
        .rank = 0, .n = 2, .prefix = "job/bad", .connect_ms = tk_ms(5000)};
    member_main(&m);
    assert_int_equal(m.rc, FTC_EPROTO);
    assert_non_null(strstr(m.msg, "rank 1 published 'garbage'"));
    /* A host key longer than 16 hex digits, and a nonce followed by
     * something other than one. */
    static const char *const bad[] = {
        "127.0.0.1:9|0123456789abcdef|0123456789abcdef0123456789abcdef",
        "127.0.0.1:9|0123456789abcdefx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char prefix[32], key[64];
        snprintf(prefix, sizeof(prefix), "job/bad%zu", i);
        snprintf(key, sizeof(key), "%s/pg/rank/1", prefix);
        TK_OK(ftc_store_client_set(c, key, bad[i], strlen(bad[i]), 5000));
        member b = {
            .rank = 0, .n = 2, .prefix = prefix, .connect_ms = tk_ms(5000)};
        member_main(&b);
        assert_int_equal(b.rc, FTC_EPROTO);
        assert_non_null(strstr(b.msg, "rank 1 published '127.0.0.1:9|"));
    }
    ftc_pg *pg = (ftc_pg *)&m;
    TK_EXPECT(ftc_pg_create(NULL, "p", 0, 1, NULL, &pg), FTC_EINVAL);
    assert_null(pg);
    TK_EXPECT(ftc_pg_create(c, "", 0, 1, NULL, &pg), FTC_EINVAL);
    TK_EXPECT(ftc_pg_create(c, "p", 2, 2, NULL, &pg), FTC_EINVAL);
    ftc_store_client_close(c);
}

static void *member_thread(void *p)
{
    return member_main(p);
}

/* With a token every rank's record is sealed, bound to the prefix, its
 * rank, the group id and epoch: a record planted or changed in the store,
 * or a real record copied to another rank's key, is refused with
 * FTC_EAUTH naming the rank, and so is a sealed record read by a rank
 * without the token. */
static void tampered_records_are_refused(void **state)
{
    (void)state;
    ftc_store_client *c;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    member ok[2];
    for (int i = 0; i < 2; i++) {
        ok[i] = (member){.rank = i,
                         .n = 2,
                         .prefix = "job/sealed",
                         .token = "rdv-secret",
                         .connect_ms = tk_ms(20000)};
        pthread_create(&ok[i].t, NULL, member_thread, &ok[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(ok[i].t, NULL);
        TK_OK(ok[i].rc);
        assert_int_equal(ok[i].sum, 3);
    }
    /* Planted: an address with no seal. */
    TK_OK(ftc_store_client_set(c, "job/planted/pg/rank/1",
                               "127.0.0.1:9|0123456789abcdef", 28, 5000));
    member m = {.rank = 0,
                .n = 2,
                .prefix = "job/planted",
                .token = "rdv-secret",
                .connect_ms = tk_ms(5000)};
    member_main(&m);
    assert_int_equal(m.rc, FTC_EAUTH);
    assert_non_null(strstr(m.msg, "rank 1's record under 'job/planted' is "
                                  "not sealed with this group's token"));
    /* Moved: rank 0's own sealed record, copied as rank 1's. */
    member mover = {.rank = 0,
                    .n = 2,
                    .prefix = "job/moved",
                    .token = "rdv-secret",
                    .connect_ms = tk_ms(10000)};
    pthread_create(&mover.t, NULL, member_thread, &mover);
    void *v = NULL;
    size_t len = 0;
    TK_OK(ftc_store_client_get(c, "job/moved/pg/rank/0", &v, &len, 10000));
    TK_OK(ftc_store_client_set(c, "job/moved/pg/rank/1", v, len, 5000));
    pthread_join(mover.t, NULL);
    assert_int_equal(mover.rc, FTC_EAUTH);
    assert_non_null(strstr(mover.msg, "rank 1's record"));
    /* Sealed, read by a rank without the token. */
    char sealed[256];
    int n = snprintf(sealed, sizeof(sealed), "%.*s", (int)len, (char *)v);
    TK_OK(ftc_store_client_set(c, "job/untokened/pg/rank/1", sealed, (size_t)n,
                               5000));
    ftc_free(v);
    member bare = {.rank = 0,
                   .n = 2,
                   .prefix = "job/untokened",
                   .connect_ms = tk_ms(5000)};
    member_main(&bare);
    assert_int_equal(bare.rc, FTC_EAUTH);
    assert_non_null(strstr(bare.msg, "sealed its record"));
    ftc_store_client_close(c);
}

/* Idle connections to a rank's listening address while the group forms
 * (strangers who connect and send nothing) do not crowd out the group's
 * dialers: the group forms and computes, with the token on. */
static void idle_strangers_do_not_stop_the_group(void **state)
{
    (void)state;
    enum { N = 4, IDLE = 40 };
    ftc_store_client *c;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &c));
    member ms[N];
    for (int i = 0; i < N; i++) {
        ms[i] = (member){.rank = i,
                         .n = N,
                         .prefix = "job/idle",
                         .token = "rdv-secret",
                         .connect_ms = tk_ms(20000)};
    }
    /* Rank 0 accepts every other rank's connections: it goes first, and
     * the strangers connect to it once its address is published. */
    pthread_create(&ms[0].t, NULL, member_thread, &ms[0]);
    void *v = NULL;
    size_t len = 0;
    TK_OK(ftc_store_client_get(c, "job/idle/pg/rank/0", &v, &len, 10000));
    char host[64];
    int port = 0;
    assert_int_equal(sscanf(v, "%63[^:]:%d|", host, &port), 2);
    ftc_free(v);
    int idle[IDLE];
    for (int i = 0; i < IDLE; i++) {
        TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(tk_ms(5000)),
                                NULL, &idle[i]));
    }
    for (int i = 1; i < N; i++) {
        pthread_create(&ms[i].t, NULL, member_thread, &ms[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(ms[i].t, NULL);
        if (ms[i].rc != 0) {
            fail_msg("rank %d: %s", i, ms[i].msg);
        }
        assert_int_equal(ms[i].sum, N * (N + 1) / 2);
    }
    for (int i = 0; i < IDLE; i++) {
        close(idle[i]);
    }
    ftc_store_client_close(c);
}

/* Cancels m's store client until its create returns (a cancel that
 * finds no store call in progress is dropped when the next one starts). */
static bool cancel_once_more(member *m)
{
    ftc_store_client_cancel(m->store);
    return atomic_load(&m->done);
}

/* The other rank's record names a socket of the test's that listens and
 * never speaks: rank 0 waits for its dial (accepting), rank 1 for the
 * answer to its HELLO (dialing). Cancelling the store client the create
 * was given ends either wait with FTC_ECANCELED (the manager cancels a
 * build this way when the lighthouse reports a member dead). */
static void a_cancel_ends_the_wait_for_a_silent_peer(void **state)
{
    (void)state;
    int lfd = -1, port = 0;
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 8, &lfd, &port));
    ftc_store_client *planter;
    TK_OK(ftc_store_client_connect(pgt_store(), NULL, &planter));
    const char *prefixes[] = {"job/cancel_accepting", "job/cancel_dialing"};
    for (int rank = 0; rank < 2; rank++) {
        char key[128], record[64];
        snprintf(key, sizeof(key), "%s/pg/rank/%d", prefixes[rank], 1 - rank);
        int n = snprintf(record, sizeof(record),
                         "127.0.0.1:%d|0123456789abcdef", port);
        TK_OK(ftc_store_client_set(planter, key, record, (size_t)n, 5000));
        if (rank == 1) {
            /* Rank 0's part of the group id (8 bytes). */
            snprintf(key, sizeof(key), "%s/backend/group", prefixes[rank]);
            TK_OK(ftc_store_client_set(planter, key, "01234567", 8, 5000));
        }
        member cc = {.rank = rank,
                     .n = 2,
                     .prefix = prefixes[rank],
                     .connect_ms = 600000}; /* only the cancel ends it */
        TK_OK(ftc_store_client_connect(pgt_store(), NULL, &cc.store));
        pthread_create(&cc.t, NULL, member_thread, &cc);
        /* Its own record is out: it reached the multi_get or the mesh. */
        snprintf(key, sizeof(key), "%s/pg/rank/%d", prefixes[rank], rank);
        void *v = NULL;
        size_t len = 0;
        TK_OK(ftc_store_client_get(planter, key, &v, &len, tk_ms(10000)));
        ftc_free(v);
        int dialer = -1;
        if (rank == 1) {
            /* Its HELLO is here: it is in the mesh (waiting for the answer,
             * or dialing its next channel). */
            TK_OK(ftc__sock_wait(lfd, POLLIN, ftc__deadline_in_ms(tk_ms(10000)),
                                 NULL));
            dialer = accept(lfd, NULL, NULL);
            assert_true(dialer >= 0);
            char hello[16];
            TK_OK(ftc__sock_recv_all(dialer, hello, sizeof(hello),
                                     ftc__deadline_in_ms(tk_ms(10000)), NULL));
        }
        TK_WAIT_UNTIL(cancel_once_more(&cc), 10000);
        pthread_join(cc.t, NULL);
        if (cc.rc != FTC_ECANCELED ||
            (rank == 1 && strstr(cc.msg, "rank 0") == NULL)) {
            fail_msg("rank %d: %d %s", rank, cc.rc, cc.msg);
        }
        if (dialer >= 0) {
            close(dialer);
        }
        ftc_store_client_close(cc.store);
    }
    ftc_store_client_close(planter);
    close(lfd);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_strangers_do_not_stop_the_group),
        cmocka_unit_test(a_cancel_ends_the_wait_for_a_silent_peer),
        cmocka_unit_test(ranks_meet_under_a_prefix),
        cmocka_unit_test(a_missing_rank_times_out_by_key),
        cmocka_unit_test(a_malformed_address_is_refused),
        cmocka_unit_test(tampered_records_are_refused),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
