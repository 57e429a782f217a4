/* What another process needs to reach the same store as a client handle:
 * the server's address, the handle's options and its view prefix. The
 * Baby backend's child (src/pg/baby/) reconnects with it. */
#ifndef FTC_STORE_CLIENT_ENDPOINT_H
#define FTC_STORE_CLIENT_ENDPOINT_H

#include "ftc/store.h"

/* Longest view prefix an endpoint carries, with its NUL. */
#define FTC__STORE_VIEW_MAX 512
/* Longest token a client takes, with its NUL. */
#define FTC__STORE_TOKEN_MAX 1024

typedef struct ftc__store_endpoint {
    char host[FTC_HOST_MAX];
    int port;
    ftc_store_client_opts opts;       /* opts.token: NULL, see token */
    char view[FTC__STORE_VIEW_MAX];   /* "" for a connection itself */
    char token[FTC__STORE_TOKEN_MAX]; /* "" for none */
} ftc__store_endpoint;

/* Fills out from client. FTC_EMISUSE for a non-client, FTC_EINVAL when
 * the view's prefix is longer than FTC__STORE_VIEW_MAX - 1. */
int ftc__store_client_endpoint(const ftc_store_client *client,
                               ftc__store_endpoint *out);

/* The descriptor that becomes readable when ftc_store_client_cancel is
 * called on client (or a view of its connection), until its next call:
 * another layer waiting on something the store call started can watch it
 * too. -1 for a non-client. */
int ftc__store_client_cancel_fd(const ftc_store_client *client);

/* Connects to ep, then makes its view when it has one; *out is the view
 * (closing it does not close the connection: see *conn) or the
 * connection, and *conn the connection to close last. */
int ftc__store_client_reach(const ftc__store_endpoint *ep,
                            ftc_store_client **conn, ftc_store_client **out);

#endif
