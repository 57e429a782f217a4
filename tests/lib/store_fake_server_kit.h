/* A scripted fake TCPStore server for client unit tests: a thread accepts
 * connections and runs a script of expected requests and canned replies. */
#ifndef FTC_TEST_CLIENT_FAKE_SERVER_H
#define FTC_TEST_CLIENT_FAKE_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "store/client/client_codec.h"

#define FS_MAX_FDS 64

typedef struct fs_server fs_server;
typedef void (*fs_script)(fs_server *s);

struct fs_server {
    int lfd;
    int port;
    char addr[64]; /* "127.0.0.1:PORT" for the client */
    pthread_t thread;
    fs_script script;
    void *arg;
    int fds[FS_MAX_FDS]; /* accepted so far */
    int nfds;
    int failed; /* the script saw something unexpected; see why */
    char why[512];
};

/* Listens on an ephemeral port and runs script on a thread. */
void fs_start(fs_server *s, fs_script script, void *arg);
/* Joins the script thread and fails the test if the script failed. */
void fs_finish(fs_server *s);

/* Script steps. After a failure every step is a no-op and the script's
 * connections are closed, so the client under test sees ECLOSED. */
int fs_accept(fs_server *s);
/* Accepts and answers the 2.x handshake as kind (FTC__STORE_SERVER_*). */
int fs_accept_v2(fs_server *s, int kind);
/* Reads exactly the bytes of the encoded request r, compares, resets r. */
void fs_expect_req(fs_server *s, int fd, ftc__store_req *r);
/* Reads and checks the hex bytes ("0c", "00 ce f7"). */
void fs_expect_hex(fs_server *s, int fd, const char *hex);
/* Waits until the client closed fd, failing on any byte before that. */
void fs_expect_eof(fs_server *s, int fd);
/* fs_expect_eof, then closes fd. */
void fs_end(fs_server *s, int fd);
void fs_send_hex(fs_server *s, int fd, const char *hex);
void fs_send_i64(fs_server *s, int fd, int64_t v);
void fs_send_value(fs_server *s, int fd, const void *p, size_t n);
void fs_close(int fd);
void fs_fail(fs_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Hex pairs to bytes; spaces and '|' are ignored. Returns the count. */
size_t fs_hex(const char *hex, uint8_t *out, size_t cap);
/* Joins a request's iovecs into out; returns its size. */
size_t fs_flatten(const ftc__store_req *r, uint8_t *out, size_t cap);

#endif
