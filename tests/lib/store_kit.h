/* Raw TCPStore frames and sockets for the store server's tests: an encoder
 * with its own table of query bytes (independent of src/store, so a wrong
 * table there cannot hide behind the same mistake here) and a blocking
 * client whose every read has a deadline. Failures fail the cmocka test. */
#ifndef FTC_TESTS_STORE_RAW_H
#define FTC_TESTS_STORE_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "store/opcodes.h"

enum { SR_V2 = 0, SR_V1 = 1 };

/* The query byte of op in a dialect (the PyTorch tables); -1 if none. */
int sr_opbyte(int dialect, ftc__store_op op);

/* Frame encoders: each appends one request to b (initialised by the
 * caller with a large max). Keys and values are C strings unless a length
 * is given. */
void sr_u8(ftc__buf *b, uint8_t v);
void sr_u32(ftc__buf *b, uint32_t v);
void sr_u64(ftc__buf *b, uint64_t v);
void sr_str(ftc__buf *b, const void *p, size_t n);
void sr_op(ftc__buf *b, int dialect, ftc__store_op op);
void sr_validate(ftc__buf *b);
/* GET, DELETE_KEY, WATCH_KEY, QUEUE_POP, QUEUE_LEN. */
void sr_key(ftc__buf *b, int dialect, ftc__store_op op, const char *key);
/* SET, APPEND, QUEUE_PUSH. */
void sr_kv(ftc__buf *b, int dialect, ftc__store_op op, const char *key,
           const void *val, size_t len);
void sr_set(ftc__buf *b, int dialect, const char *key, const char *val);
void sr_add(ftc__buf *b, int dialect, const char *key, int64_t delta);
void sr_cas(ftc__buf *b, int dialect, const char *key, const char *expected,
            const char *desired);
/* CHECK, WAIT, MULTI_GET. */
void sr_keys(ftc__buf *b, int dialect, ftc__store_op op,
             const char *const *keys, size_t n);
void sr_multi_set(ftc__buf *b, const char *const *keys, const char *const *vals,
                  size_t n);
void sr_ping(ftc__buf *b, uint32_t nonce);
void sr_barrier(ftc__buf *b, const char *key, int64_t world_size);
void sr_control_barrier(ftc__buf *b, const char *key, int64_t world_size,
                        int64_t rank);
/* GETNUMKEYS, CANCEL_WAIT, LIST_KEYS. */
void sr_bare(ftc__buf *b, int dialect, ftc__store_op op);

/* A blocking connection to 127.0.0.1:port. */
typedef struct sr_conn {
    int fd;
    int dialect;
} sr_conn;

/* Connects; a V2 connection sends VALIDATE first. */
void sr_connect(sr_conn *c, int port, int dialect);
/* Connects and sends nothing (not even VALIDATE). */
void sr_connect_bare(sr_conn *c, int port);
void sr_close(sr_conn *c);
void sr_send(sr_conn *c, const void *p, size_t n);
/* Sends b's bytes and empties b. */
void sr_flush(sr_conn *c, ftc__buf *b);

/* Reads exactly n bytes within tk_ms(timeout_ms): 0, FTC_ETIMEDOUT or
 * FTC_ECLOSED (the server closed or reset the connection). */
int sr_read(sr_conn *c, void *p, size_t n, int64_t timeout_ms);
uint8_t sr_read_u8(sr_conn *c);
uint32_t sr_read_u32(sr_conn *c);
int64_t sr_read_i64(sr_conn *c);
/* Reads a u64-length string; returns a NUL-terminated copy (free()). */
char *sr_read_str(sr_conn *c, size_t *len);
/* Reads a string and asserts it equals want. */
void sr_expect_str(sr_conn *c, const char *want);
/* Asserts the server closes the connection within tk_ms(timeout_ms). */
void sr_expect_closed(sr_conn *c, int64_t timeout_ms);
/* Asserts nothing arrives for ms (a bounded check that a reply is held). */
void sr_expect_quiet(sr_conn *c, int64_t ms);

#endif
