/* Message protection on the tcp data plane (docs/protocol.md "Message
 * protection"): the tags and the cipher themselves, and a relay between
 * two ranks that changes one byte of an allreduce's data. Protected
 * (tagged or encrypted), the group fails on both ranks with FTC_EAUTH
 * naming the peer; unprotected (the control), the same relay corrupts the
 * result and nobody notices. Encrypted, the relay sees none of the data
 * it sees when messages are only tagged. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "pg/tcp/tcp_int.h"
#include "pg/tcp/protect.h"
#include "pg/tcp/wire.h"
#include "pg_kit.h"

/* -------------------------------------------------------------- the tags */

static void tags_bind_everything(void **state)
{
    (void)state;
    uint8_t token_key[32] = {7};
    uint8_t tx[32], rx[32], tx_peer[32], rx_peer[32], other[32], unused[32];
    ftc__protect_keys(token_key, 11, 3, 0, 1, 0, 5, 6, tx, rx);
    ftc__protect_keys(token_key, 11, 3, 1, 0, 0, 5, 6, tx_peer, rx_peer);
    /* What one side sends, the other receives with the same key. */
    assert_memory_equal(tx, rx_peer, 32);
    assert_memory_equal(rx, tx_peer, 32);
    assert_memory_not_equal(tx, rx, 32);
    /* Another channel, group or epoch: another key. */
    ftc__protect_keys(token_key, 11, 3, 0, 1, FTC__PGW_SIDE, 5, 6, other,
                      unused);
    assert_memory_not_equal(tx, other, 32);
    ftc__protect_keys(token_key, 12, 3, 0, 1, 0, 5, 6, other, unused);
    assert_memory_not_equal(tx, other, 32);
    ftc__protect_keys(token_key, 11, 4, 0, 1, 0, 5, 6, other, unused);
    assert_memory_not_equal(tx, other, 32);
    /* Another connection of the same group, epoch and ranks: other nonces,
     * other keys. */
    ftc__protect_keys(token_key, 11, 3, 0, 1, 0, 7, 6, other, unused);
    assert_memory_not_equal(tx, other, 32);
    ftc__protect_keys(token_key, 11, 3, 0, 1, 0, 5, 8, other, unused);
    assert_memory_not_equal(tx, other, 32);

    uint8_t hdr[FTC__PGW_HDR] = {1, 2, 3};
    uint8_t payload[1000];
    for (size_t i = 0; i < sizeof(payload); i++) {
        payload[i] = (uint8_t)(i * 7);
    }
    uint8_t tag[16], again[16];
    ftc__protect_tag(tx, 5, hdr, sizeof(hdr), payload, sizeof(payload), tag);
    /* In pieces, as a receiver checks it, it is the same tag. */
    ftc__protect_mac m;
    ftc__protect_begin(&m, rx_peer, 5, hdr, sizeof(hdr));
    ftc__protect_add(&m, payload, 300);
    ftc__protect_add(&m, payload + 300, 700);
    assert_true(ftc__protect_check(&m, tag));
    /* One bit of the payload or header, the message's number or the key
     * changed: another tag. */
    payload[999] ^= 1;
    ftc__protect_tag(tx, 5, hdr, sizeof(hdr), payload, sizeof(payload), again);
    assert_memory_not_equal(tag, again, 16);
    payload[999] ^= 1;
    hdr[40] ^= 1;
    ftc__protect_tag(tx, 5, hdr, sizeof(hdr), payload, sizeof(payload), again);
    assert_memory_not_equal(tag, again, 16);
    hdr[40] ^= 1;
    ftc__protect_tag(tx, 6, hdr, sizeof(hdr), payload, sizeof(payload), again);
    assert_memory_not_equal(tag, again, 16);
    ftc__protect_tag(rx, 5, hdr, sizeof(hdr), payload, sizeof(payload), again);
    assert_memory_not_equal(tag, again, 16);
    ftc__protect_begin(&m, rx_peer, 5, hdr, sizeof(hdr));
    ftc__protect_add(&m, payload, 999);
    assert_false(ftc__protect_check(&m, tag)); /* a byte dropped */
}

/* The cipher: its stream depends on the key and the message's number,
 * crypting at block offsets in pieces gives the bytes of one pass, and
 * crypting twice gives the payload back. */
static void cipher_in_pieces(void **state)
{
    (void)state;
    uint8_t key[32] = {9}, other_key[32] = {10};
    enum { LEN = 5 * FTC__PROTECT_BLOCK + 17 };
    uint8_t plain[LEN], once[LEN], pieces[LEN], back[LEN], other[LEN];
    for (size_t i = 0; i < LEN; i++) {
        plain[i] = (uint8_t)(i * 13 + 1);
    }
    ftc__protect_crypt(key, 3, 0, plain, once, LEN);
    assert_memory_not_equal(plain, once, LEN);
    ftc__protect_crypt(key, 3, 0, plain, pieces, 2 * FTC__PROTECT_BLOCK);
    ftc__protect_crypt(
        key, 3, 2 * FTC__PROTECT_BLOCK, plain + 2 * FTC__PROTECT_BLOCK,
        pieces + 2 * FTC__PROTECT_BLOCK, LEN - 2 * FTC__PROTECT_BLOCK);
    assert_memory_equal(once, pieces, LEN);
    memcpy(back, once, LEN);
    ftc__protect_crypt(key, 3, 0, back, back, LEN); /* in place */
    assert_memory_equal(back, plain, LEN);
    ftc__protect_crypt(key, 4, 0, plain, other, LEN);
    assert_memory_not_equal(once, other, LEN);
    ftc__protect_crypt(other_key, 3, 0, plain, other, LEN);
    assert_memory_not_equal(once, other, LEN);
    /* Block 0 keyed the tag: the payload's stream starts after it. */
    uint8_t zeros[FTC__PROTECT_BLOCK] = {0}, stream[FTC__PROTECT_BLOCK];
    uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {3};
    crypto_stream_chacha20_ietf(stream, sizeof(stream), nonce, key);
    ftc__protect_crypt(key, 3, 0, zeros, zeros, sizeof(zeros));
    assert_memory_not_equal(zeros, stream, sizeof(stream));
}

/* ------------------------------------------------------------- the relay */

/* Sits between rank 1 and rank 0: accepts rank 1's connections (its
 * collective stream first, then its side channel) and forwards each to
 * rank 0, flipping one bit of the first collective message's payload on
 * its way from rank 1 to rank 0. */
typedef struct relay {
    int lfd;
    int port;
    const char *to; /* rank 0's address */
    int flip_conn;  /* 0: the collective stream; 1: the side channel */
    size_t flip_at; /* offset in that stream from rank 1 */
    bool no_flip;   /* forward everything unchanged */
    bool record;    /* keep what rank 1 sends in seen (freed by the test) */
    atomic_int stop;
    pthread_t t;
    int flipped;
    /* record: every byte rank 1 sent on its collective stream. */
    uint8_t *seen;
    size_t seen_len;
} relay;

static void *relay_main(void *arg)
{
    relay *r = arg;
    enum { CONNS = 2 };
    int from[CONNS], to[CONNS];
    size_t up[CONNS] = {0}; /* bytes forwarded from rank 1 */
    int n = 0;
    while (n < CONNS && !atomic_load(&r->stop)) {
        struct pollfd p = {.fd = r->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        from[n] = accept(r->lfd, NULL, NULL);
        char host[FTC_HOST_MAX];
        int port;
        TK_OK(ftc__addr_split(r->to, -1, host, sizeof(host), &port));
        TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(5000), NULL,
                                &to[n]));
        TK_OK(ftc__sock_set_nonblock(to[n], 0));
        n++;
    }
    /* Each direction is forwarded until its end of stream, which is passed
     * on as a half-close: a rank's last bytes on one connection are not
     * lost because another connection closed first. */
    uint8_t buf[65536];
    bool open[2 * CONNS];
    int nopen = 2 * n;
    for (int i = 0; i < 2 * n; i++) {
        open[i] = true;
    }
    while (nopen > 0 && !atomic_load(&r->stop)) {
        struct pollfd p[2 * CONNS];
        for (int i = 0; i < 2 * n; i++) {
            int fd = i % 2 == 0 ? from[i / 2] : to[i / 2];
            p[i] = (struct pollfd){.fd = open[i] ? fd : -1, .events = POLLIN};
        }
        if (poll(p, (nfds_t)(2 * n), 50) <= 0) {
            continue;
        }
        for (int i = 0; i < 2 * n; i++) {
            if (p[i].revents == 0) {
                continue;
            }
            int c = i / 2, upward = i % 2 == 0;
            int dest = upward ? to[c] : from[c];
            ssize_t k = recv(p[i].fd, buf, sizeof(buf), 0);
            if (k <= 0) {
                open[i] = false;
                nopen--;
                shutdown(dest, SHUT_WR);
                continue;
            }
            if (!r->no_flip && upward && c == r->flip_conn &&
                up[c] <= r->flip_at && r->flip_at < up[c] + (size_t)k) {
                buf[r->flip_at - up[c]] ^= 0x40;
                r->flipped = 1;
            }
            if (upward) {
                up[c] += (size_t)k;
            }
            if (r->record && upward && c == 0) {
                r->seen = realloc(r->seen, r->seen_len + (size_t)k);
                assert_non_null(r->seen);
                memcpy(r->seen + r->seen_len, buf, (size_t)k);
                r->seen_len += (size_t)k;
            }
            ftc__sock_send_all(dest, buf, (size_t)k, ftc__deadline_in_ms(5000),
                               NULL);
        }
    }
    for (int i = 0; i < n; i++) {
        close(from[i]);
        close(to[i]);
    }
    return NULL;
}

typedef struct member {
    ftc__pg_listener l;
    const char *addrs[2];
    int rank;
    int protect;
    int p2p; /* a send of this many floats (<= N) from rank 1 to rank 0
              * instead of the allreduce */
    int rc;
    int wrong; /* elements of the result that are not the sum */
    char msg[512];
} member;

/* Large enough for the ring schedule: the rank that did not receive the
 * changed message waits for the other's next one and hears the abort. */
#define N 65536

static void *member_main(void *p)
{
    member *m = p;
    ftc_pg_opts o;
    ftc_pg_opts_init(&o);
    o.connect_timeout_ms = tk_ms(5000);
    o.timeout_ms = tk_ms(10000);
    o.token = "relay-test-secret";
    o.protect = m->protect;
    o.transport = FTC_PG_TRANSPORT_TCP; /* the relay sees the data */
    ftc_pg *pg = NULL;
    m->rc = ftc__pg_create_from_peers(&pg, &m->l, m->addrs, NULL, m->rank, 2,
                                      42, NULL, &o);
    float *x = malloc(N * sizeof(float));
    if (m->rc == 0 && x != NULL && m->p2p) {
        for (int i = 0; i < m->p2p; i++) {
            x[i] = m->rank == 1 ? (float)i : -1.0f;
        }
        ftc_tensor t = ftc_tensor_cpu(x, (size_t)m->p2p, FTC_DTYPE_F32);
        ftc_work *w;
        m->rc = m->rank == 1 ? ftc_pg_send(pg, &t, 0, 7, NULL, &w)
                             : ftc_pg_recv(pg, &t, 1, 7, NULL, &w);
        m->rc = m->rc ? m->rc : pgt_wait(w);
        for (int i = 0; i < m->p2p; i++) {
            m->wrong += x[i] != (float)i;
        }
    } else if (m->rc == 0 && x != NULL) {
        for (int i = 0; i < N; i++) {
            x[i] = (float)(i + m->rank);
        }
        ftc_tensor t = ftc_tensor_cpu(x, N, FTC_DTYPE_F32);
        ftc_work *w;
        m->rc = ftc_pg_allreduce(pg, &t, &t, FTC_OP_SUM, NULL, &w);
        m->rc = m->rc ? m->rc : pgt_wait(w);
        for (int i = 0; i < N; i++) {
            m->wrong += x[i] != (float)(2 * i + 1);
        }
    }
    free(x);
    snprintf(m->msg, sizeof(m->msg), "%s", ftc_last_error());
    ftc_pg_destroy(pg);
    return NULL;
}

/* One allreduce (or p2p message) of two ranks, rank 1 reaching rank 0
 * through the relay. */
static void through_relay(int protect, int p2p, member m[2], relay *r)
{
    for (int i = 0; i < 2; i++) {
        m[i] = (member){.rank = i, .protect = protect, .p2p = p2p};
        TK_OK(ftc__pg_listen("127.0.0.1", &m[i].l));
    }
    TK_OK(ftc__sock_listen("127.0.0.1", 0, 16, &r->lfd, &r->port));
    TK_OK(ftc__sock_set_nonblock(r->lfd, 0));
    char relay_addr[64];
    snprintf(relay_addr, sizeof(relay_addr), "127.0.0.1:%d", r->port);
    r->to = m[0].l.addr;
    /* The first message's payload: after the HELLO (header, body, MAC),
     * on a collective stream the shared-memory answer (a header: no
     * lane), and the message's header. */
    size_t answer = p2p != 0 ? 0 : FTC__PGW_HDR;
    r->flip_at =
        FTC__PGW_HDR + FTC__PGW_HELLO_BODY + 32 + answer + FTC__PGW_HDR + 5;
    r->flip_conn = p2p != 0;
    atomic_init(&r->stop, 0);
    pthread_create(&r->t, NULL, relay_main, r);
    m[0].addrs[0] = m[0].l.addr;
    m[0].addrs[1] = m[1].l.addr;
    m[1].addrs[0] = relay_addr;
    m[1].addrs[1] = m[1].l.addr;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, member_main, &m[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&r->stop, 1);
    pthread_join(r->t, NULL);
    close(r->lfd);
}

/* The relay changes a byte of an allreduce's first message under
 * protection `protect`: both ranks fail with FTC_EAUTH naming rank 1. */
static void assert_detected_on_every_rank(int protect)
{
    member m[2];
    relay r = {0};
    through_relay(protect, 0, m, &r);
    assert_true(r.flipped);
    for (int i = 0; i < 2; i++) {
        if (m[i].rc != FTC_EAUTH ||
            strstr(m[i].msg, "failed its authentication check") == NULL ||
            strstr(m[i].msg, "rank 1") == NULL) {
            fail_msg("rank %d: %s: %s", i, ftc_err_name(m[i].rc), m[i].msg);
        }
    }
}

static void relay_detected_on_every_rank(void **state)
{
    (void)state;
    assert_detected_on_every_rank(FTC_PG_PROTECT_MAC);
}

/* A small p2p message on the side channel (tagged before it goes, one
 * system call) changed on the way: the receiver fails, and the sender
 * hears why in its next operation at the latest. */
static void relay_on_the_side_channel(void **state)
{
    (void)state;
    member m[2];
    relay r = {0};
    through_relay(FTC_PG_PROTECT_MAC, 16, m, &r);
    assert_true(r.flipped);
    if (m[0].rc != FTC_EAUTH ||
        strstr(m[0].msg, "failed its authentication check") == NULL) {
        fail_msg("rank 0: %s: %s", ftc_err_name(m[0].rc), m[0].msg);
    }
    /* The send completed once written: rank 1 cannot know yet. */
    TK_OK(m[1].rc);
    member ctl[2];
    relay r2 = {0};
    through_relay(FTC_PG_PROTECT_OFF, 16, ctl, &r2);
    TK_OK(ctl[0].rc);
    assert_int_equal(ctl[0].wrong, 1);
}

/* The control: without protection the relay's change goes unnoticed and
 * the result is wrong (so the test above can fail). */
static void unprotected_relay_corrupts_silently(void **state)
{
    (void)state;
    member m[2];
    relay r = {0};
    through_relay(FTC_PG_PROTECT_OFF, 0, m, &r);
    assert_true(r.flipped);
    TK_OK(m[0].rc);
    TK_OK(m[1].rc);
    /* The element rank 0 reduced with the changed value, allgathered. */
    assert_int_equal(m[0].wrong, 1);
    assert_int_equal(m[1].wrong, 1);
}

/* Encrypted, a changed byte fails the group on both ranks as a tagged
 * one does (the tag covers the ciphertext), on the collective streams and
 * on the side channel. */
static void encrypted_relay_detected(void **state)
{
    (void)state;
    assert_detected_on_every_rank(FTC_PG_PROTECT_ENCRYPT);
    member m[2];
    relay r = {0};
    through_relay(FTC_PG_PROTECT_ENCRYPT, 16, m, &r);
    assert_true(r.flipped);
    assert_int_equal(m[0].rc, FTC_EAUTH);
}

/* Whether the relay saw 16 bytes of the data rank 1 holds or the sum
 * both end with, at a few places of the tensor. */
static bool relay_saw_data(const relay *r)
{
    static const size_t at[] = {1000, N / 2 + 1000, N - 8};
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
        float mine[4], sum[4];
        for (size_t i = 0; i < 4; i++) {
            mine[i] = (float)(at[k] + i + 1);
            sum[i] = (float)(2 * (at[k] + i) + 1);
        }
        if (memmem(r->seen, r->seen_len, mine, sizeof(mine)) != NULL ||
            memmem(r->seen, r->seen_len, sum, sizeof(sum)) != NULL) {
            return true;
        }
    }
    return false;
}

/* Encrypted, the allreduce is right and the relay (changing nothing) sees
 * none of the data; only tagged (the control), it sees it. */
static void encrypted_data_unseen(void **state)
{
    (void)state;
    static const int modes[] = {FTC_PG_PROTECT_MAC, FTC_PG_PROTECT_ENCRYPT};
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
        int protect = modes[k];
        member m[2];
        relay r = {.no_flip = true, .record = true};
        through_relay(protect, 0, m, &r);
        assert_false(r.flipped);
        for (int i = 0; i < 2; i++) {
            TK_OK(m[i].rc);
            assert_int_equal(m[i].wrong, 0);
        }
        assert_true(r.seen_len > N * sizeof(float) / 2);
        assert_int_equal(relay_saw_data(&r), protect == FTC_PG_PROTECT_MAC);
        free(r.seen);
    }
}

/* AUTO (the default) protects connections between hosts only: on
 * loopback the relay's change goes unnoticed, as with OFF. */
static void auto_trusts_this_host(void **state)
{
    (void)state;
    member m[2];
    relay r = {0};
    through_relay(FTC_PG_PROTECT_AUTO, 0, m, &r);
    assert_true(r.flipped);
    TK_OK(m[0].rc);
    TK_OK(m[1].rc);
    assert_int_equal(m[0].wrong, 1);
}

/* Two ranks connected directly, rank 0 with protection p0 and rank 1
 * with p1, the allreduce or (p2p > 0) that many floats sent. */
static void directly(int p0, int p1, int p2p, member m[2])
{
    for (int i = 0; i < 2; i++) {
        m[i] = (member){.rank = i, .protect = i == 0 ? p0 : p1, .p2p = p2p};
        TK_OK(ftc__pg_listen("127.0.0.1", &m[i].l));
    }
    for (int i = 0; i < 2; i++) {
        m[i].addrs[0] = m[0].l.addr;
        m[i].addrs[1] = m[1].l.addr;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, member_main, &m[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
}

/* Ranks that disagree on protection are refused at the handshake. */
static void protection_must_agree(void **state)
{
    (void)state;
    member m[2];
    directly(FTC_PG_PROTECT_MAC, FTC_PG_PROTECT_OFF, 0, m);
    assert_int_equal(m[1].rc, FTC_EPROTO);
    assert_non_null(strstr(m[1].msg, "message protection differs"));
    assert_int_not_equal(m[0].rc, 0);
}

/* Encrypting and only tagging do not mix either; the reason names both. */
static void encryption_must_agree(void **state)
{
    (void)state;
    member m[2];
    directly(FTC_PG_PROTECT_ENCRYPT, FTC_PG_PROTECT_MAC, 0, m);
    assert_int_equal(m[1].rc, FTC_EPROTO);
    if (strstr(m[1].msg, "message protection differs") == NULL ||
        strstr(m[1].msg, "encrypts") == NULL ||
        strstr(m[1].msg, "tags (no encryption)") == NULL) {
        fail_msg("rank 1: %s", m[1].msg);
    }
    assert_int_not_equal(m[0].rc, 0);
}

/* Encrypted p2p messages of every shape arrive intact: one float, a frame
 * sent whole (<= 4 KiB) and one just over, and several 64 KiB ciphertext
 * windows (N floats). */
static void encrypted_messages_of_every_shape(void **state)
{
    (void)state;
    static const int sizes[] = {1, 1024, 1025, 20000, N};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        member m[2];
        directly(FTC_PG_PROTECT_ENCRYPT, FTC_PG_PROTECT_ENCRYPT, sizes[k], m);
        for (int i = 0; i < 2; i++) {
            if (m[i].rc != 0 || m[i].wrong != 0) {
                fail_msg("%d floats, rank %d: %s, %d wrong: %s", sizes[k], i,
                         ftc_err_name(m[i].rc), m[i].wrong, m[i].msg);
            }
        }
    }
}

/* Tags or encryption asked for by name without a token fail the create
 * with a reason, rather than sending in the clear. */
static void protection_needs_a_token(void **state)
{
    (void)state;
    unsetenv("FTC_TOKEN"); /* the options' NULL token would read it */
    static const int modes[] = {FTC_PG_PROTECT_MAC, FTC_PG_PROTECT_ENCRYPT};
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
        int protect = modes[k];
        ftc_pg_opts o;
        ftc_pg_opts_init(&o);
        o.protect = protect;
        ftc__pg_listener l;
        TK_OK(ftc__pg_listen("127.0.0.1", &l));
        const char *addrs[1] = {l.addr};
        ftc_pg *pg = NULL;
        assert_int_equal(
            ftc__pg_create_from_peers(&pg, &l, addrs, NULL, 0, 1, 43, NULL, &o),
            FTC_EINVAL);
        assert_null(pg);
        assert_non_null(strstr(ftc_last_error(), "needs a token"));
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tags_bind_everything),
        cmocka_unit_test(cipher_in_pieces),
        cmocka_unit_test(relay_detected_on_every_rank),
        cmocka_unit_test(unprotected_relay_corrupts_silently),
        cmocka_unit_test(relay_on_the_side_channel),
        cmocka_unit_test(auto_trusts_this_host),
        cmocka_unit_test(protection_must_agree),
        cmocka_unit_test(encryption_must_agree),
        cmocka_unit_test(encrypted_relay_detected),
        cmocka_unit_test(encrypted_data_unseen),
        cmocka_unit_test(encrypted_messages_of_every_shape),
        cmocka_unit_test(protection_needs_a_token),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
