/* The client's side of the store's token handshake (docs/protocol.md
 * "Authentication"): the server proves it knows the token before the
 * client does, so a client never hands a proof to an impostor, and a
 * client with a token refuses any server that cannot prove it (one with
 * another token or none, PyTorch's). */
#include <string.h>

#include "store/client/client_int.h"

static const char server_label[] = FTC__STORE_AUTH_SERVER_LABEL;
static const char client_label[] = FTC__STORE_AUTH_CLIENT_LABEL;

int ftc__store_client_auth_hello(ftc__store_conn *c,
                                 uint8_t cn[FTC__AUTH_NONCE])
{
    int rc = ftc__auth_random(cn, FTC__AUTH_NONCE);
    return rc != 0 ? rc : ftc__store_enc_auth(&c->req, FTC__OP_AUTH_HELLO, cn);
}

static int all_zero(const uint8_t *p, size_t n)
{
    uint8_t any = 0;
    for (size_t i = 0; i < n; i++) {
        any |= p[i];
    }
    return any == 0;
}

int ftc__store_client_auth_finish(ftc__store_conn *c, int kind,
                                  const uint8_t cn[FTC__AUTH_NONCE],
                                  ftc__deadline dl, const ftc__event *cancel)
{
    if (kind != FTC__STORE_SERVER_FTC) {
        return ftc__seterr(FTC_ENOTSUP,
                           "%s:%d is PyTorch's TCPStore, which cannot "
                           "authenticate, and this client has a token",
                           c->host, c->port);
    }
    uint8_t answer[FTC__AUTH_NONCE + FTC__AUTH_MAC];
    int rc = ftc__store_conn_recv_raw(c, answer, sizeof(answer), dl);
    if (rc == FTC_ECLOSED) {
        return ftc__seterr(FTC_EAUTH,
                           "the store at %s:%d closed the connection at "
                           "AUTH_HELLO: an ftc store from before "
                           "authentication cannot check this client's token",
                           c->host, c->port);
    }
    if (rc != 0) {
        return rc;
    }
    if (all_zero(answer, sizeof(answer))) {
        return ftc__seterr(FTC_EAUTH,
                           "the store at %s:%d has no token and this client "
                           "has one: refusing a server that cannot prove "
                           "who it is",
                           c->host, c->port);
    }
    uint8_t nonces[2 * FTC__AUTH_NONCE];
    memcpy(nonces, cn, FTC__AUTH_NONCE);
    memcpy(nonces + FTC__AUTH_NONCE, answer, FTC__AUTH_NONCE);
    if (!ftc__auth_verify(c->key, (const uint8_t *)server_label,
                          sizeof(server_label), nonces, sizeof(nonces),
                          answer + FTC__AUTH_NONCE)) {
        return ftc__seterr(FTC_EAUTH,
                           "the store at %s:%d did not prove it knows the "
                           "token (its token differs from this client's)",
                           c->host, c->port);
    }
    uint8_t proof[FTC__AUTH_MAC];
    ftc__auth_mac(c->key, (const uint8_t *)client_label, sizeof(client_label),
                  nonces, sizeof(nonces), proof);
    rc = ftc__store_enc_auth(&c->req, FTC__OP_AUTH_PROOF, proof);
    rc = rc != 0 ? rc : ftc__store_conn_send(c, dl, cancel);
    uint64_t verdict = 1;
    rc = rc != 0 ? rc : ftc__store_conn_recv_uint(c, 1, &verdict, dl);
    if (rc == FTC_ECLOSED || (rc == 0 && verdict != 0)) {
        return ftc__seterr(FTC_EAUTH,
                           "the store at %s:%d refused this client's token",
                           c->host, c->port);
    }
    return rc;
}
