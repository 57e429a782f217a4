/* Store client requests, encoded without I/O: each op becomes the bytes of
 * one TCPStore query in the chosen dialect, plus the pure reply checks. */
#ifndef FTC_STORE_CLIENT_CODEC_H
#define FTC_STORE_CLIENT_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/buf.h"
#include "ftc/store.h"
#include "store/opcodes.h"
#include "store/wire.h"

/* Values at least this long are sent from the caller's memory (an iovec)
 * instead of being copied into the request buffer. */
#define FTC__STORE_COPY_MAX 4096

/* A borrowed span of caller memory spliced into the request at byte `at`
 * of the buffer. */
typedef struct ftc__store_ext {
    size_t at;
    const void *p;
    size_t n;
} ftc__store_ext;

/* One or more pipelined queries. The caller's values must stay valid until
 * the request is sent. */
typedef struct ftc__store_req {
    int dialect;
    ftc__buf buf;
    ftc__store_ext *ext;
    size_t next;
    size_t ext_cap;
} ftc__store_req;

void ftc__store_req_init(ftc__store_req *r, int dialect);
void ftc__store_req_free(ftc__store_req *r);
/* Empties the request, keeping its allocations. */
void ftc__store_req_reset(ftc__store_req *r);
/* Total bytes on the wire. */
size_t ftc__store_req_size(const ftc__store_req *r);
/* Fills up to cap iovecs with the bytes from offset *seg (a segment index,
 * advanced); returns how many were filled. Segment 2i is buffer bytes,
 * 2i+1 is ext[i]; a request has 2 * next + 1 segments. */
int ftc__store_req_iov(const ftc__store_req *r, size_t *seg, struct iovec *iov,
                       int cap);

/* Query encoders. A key goes on the wire as "/" + key, or as
 * "/" + prefix + "/" + key when prefix is not NULL (PrefixStore). They
 * fail with FTC_ENOTSUP when the dialect lacks the op, FTC_ENOMEM or
 * FTC_EMSGSIZE; after a failure the request holds a partial query and
 * must be reset. */
/* SET, APPEND, QUEUE_PUSH: op key value. */
int ftc__store_enc_key_value(ftc__store_req *r, ftc__store_op op,
                             const char *prefix, const char *key,
                             const void *value, size_t len);
/* GET, DELETE_KEY, QUEUE_POP, QUEUE_LEN: op key. */
int ftc__store_enc_key(ftc__store_req *r, ftc__store_op op, const char *prefix,
                       const char *key);
/* CHECK, WAIT, MULTI_GET: op u64 n, n keys. */
int ftc__store_enc_keys(ftc__store_req *r, ftc__store_op op, const char *prefix,
                        const char *const *keys, size_t n);
/* GETNUMKEYS, CANCEL_WAIT: the op byte alone. */
int ftc__store_enc_bare(ftc__store_req *r, ftc__store_op op);
int ftc__store_enc_add(ftc__store_req *r, const char *prefix, const char *key,
                       int64_t delta);
int ftc__store_enc_compare_set(ftc__store_req *r, const char *prefix,
                               const char *key, const void *expected,
                               size_t expected_len, const void *desired,
                               size_t desired_len);
/* CONTROL_BARRIER (2.x, ftc servers): key, world size, rank. */
int ftc__store_enc_control_barrier(ftc__store_req *r, const char *prefix,
                                   const char *key, int64_t world_size,
                                   int64_t rank);
int ftc__store_enc_multi_set(ftc__store_req *r, const char *prefix,
                             const char *const *keys,
                             const ftc_store_value *values, size_t n);
/* VALIDATE (magic) then PING (nonce): the 2.x handshake. */
int ftc__store_enc_handshake(ftc__store_req *r, uint32_t nonce);
int ftc__store_enc_ping(ftc__store_req *r, uint32_t nonce);

/* Server kinds told apart by the PING probe. */
enum {
    FTC__STORE_SERVER_UNKNOWN = 0, /* V1: no probe */
    FTC__STORE_SERVER_TORCH = 1,   /* echoes the nonce */
    FTC__STORE_SERVER_FTC = 2,     /* answers ~nonce: strict FIFO replies */
};

/* A probe nonce: the tag and 20 random bits. */
uint32_t ftc__store_probe_nonce(uint64_t random);
/* Which server answered reply to nonce; -1 if none (not a TCPStore). An
 * ftc server answers ~nonce, or ~nonce with FTC__STORE_PROBE_LOCKED
 * flipped when it wants a token this connection has not shown. */
int ftc__store_probe_kind(uint32_t nonce, uint32_t reply);
/* 1 if reply is the locked answer of an ftc server. */
int ftc__store_probe_locked(uint32_t nonce, uint32_t reply);

/* AUTH_HELLO (ftc servers): the client's nonce. */
int ftc__store_enc_auth(ftc__store_req *r, ftc__store_op op,
                        const uint8_t bytes[FTC__WIRE_RAW_BYTES]);

/* Checks a reply's length field against the client's limit before anything
 * is allocated: 0 or FTC_EMSGSIZE naming what the value was for. */
int ftc__store_check_len(uint64_t len, size_t max, const char *what);

#endif
