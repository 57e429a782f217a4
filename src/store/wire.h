/* The server's request decoder for both TCPStore dialects: pure (no I/O, no
 * allocation) and resumable, so a request split at any byte costs no re-scan.
 * Every length and count is checked against the limits before the caller
 * can allocate anything for it. Byte layouts: docs/protocol.md. */
#ifndef FTC_STORE_WIRE_H
#define FTC_STORE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "store/opcodes.h"

/* Dialects, numbered like ftc_store_dialect in ftc/store.h. */
enum { FTC__WIRE_V2 = 0, FTC__WIRE_V1 = 1 };

/* Results of ftc__wire_decode (errors are negative FTC_E codes). */
enum { FTC__WIRE_MORE = 0, FTC__WIRE_DONE = 1 };

typedef struct ftc__wire_limits {
    uint64_t max_key_bytes;
    uint64_t max_value_bytes;
    uint64_t max_keys;          /* items of CHECK/WAIT/MULTI_* */
    uint64_t max_request_bytes; /* one whole request */
    uint64_t max_world;         /* CONTROL_BARRIER world size */
} ftc__wire_limits;

/* CONTROL_BARRIER derives keys from its key by appending at most this many
 * bytes ("/last_members"; a rank "/<r>" is shorter since r < max_world
 * < 2^31), so its key must be that much shorter than max_key_bytes. */
#define FTC__WIRE_DERIVED_SUFFIX_MAX 13
/* Never more than this world size, whatever max_world says. */
#define FTC__WIRE_WORLD_CEILING INT32_MAX

/* Bytes of AUTH_HELLO's nonce and AUTH_PROOF's MAC (no length field). */
#define FTC__WIRE_RAW_BYTES 32

/* A borrowed byte range. */
typedef struct ftc__wire_str {
    const uint8_t *p;
    size_t len;
} ftc__wire_str;

/* A complete request. Its byte ranges point into the caller's buffer and
 * are valid while that buffer is unchanged. */
typedef struct ftc__wire_req {
    ftc__store_op op;
    size_t size;        /* bytes of the whole request, query byte included */
    ftc__wire_str key;  /* ops with one key; AUTH_*'s 32 bytes */
    ftc__wire_str val;  /* SET/APPEND/QUEUE_PUSH value; COMPARE_SET expected */
    ftc__wire_str val2; /* COMPARE_SET desired */
    int64_t num;        /* ADD delta; BARRIER and CONTROL_BARRIER world size */
    int64_t num2;       /* CONTROL_BARRIER rank */
    uint32_t u32;       /* PING nonce; VALIDATE magic */
    uint64_t count;     /* CHECK/WAIT/MULTI_GET keys; MULTI_SET pairs */
    const uint8_t *items; /* the first item; walk with ftc__wire_next_str */
} ftc__wire_req;

/* Where decoding of the current request stopped. */
typedef struct ftc__wire_decoder {
    int dialect;
    ftc__store_op op; /* FTC__OP_INVALID until the query byte is read */
    uint8_t field;    /* next field of the op's fixed part */
    uint8_t ifield;   /* next field of the current item */
    size_t pos;       /* bytes of the request fully parsed */
    size_t items_pos; /* offset of the first item */
    uint64_t count;   /* items announced */
    uint64_t done;    /* items fully parsed */
    size_t off[3];    /* offsets of the fixed strings, for the views */
    size_t len[3];
    int64_t num;
    int64_t num2;
    uint8_t nnum; /* i64 fields parsed: the first is num, the second num2 */
    uint32_t u32;
    uint64_t str_len; /* length of the string it stopped in; UINT64_MAX:
                         it did not stop inside a string */
    const char *tag;  /* after an error: a stable log tag */
} ftc__wire_decoder;

void ftc__wire_decoder_init(ftc__wire_decoder *d, int dialect);

/* Decodes the request that starts at buf[0], given the len bytes received
 * so far. Returns FTC__WIRE_DONE with *req filled (the decoder is then
 * ready for the next request, which starts at buf[req->size]);
 * FTC__WIRE_MORE with *need set to how many bytes of this request must be
 * present before another call can make progress; or FTC_EPROTO (unknown
 * query type) / FTC_EMSGSIZE (a length or count over a limit) with
 * ftc_last_error() and d->tag set; a CONTROL_BARRIER whose world size is
 * not in 1..max_world or whose rank is not in 0..world-1 fails with
 * FTC_EMSGSIZE or FTC_EPROTO (tag store.badvalue). Between calls the bytes may
 * move but the ones already passed must not change. */
int ftc__wire_decode(ftc__wire_decoder *d, const uint8_t *buf, size_t len,
                     const ftc__wire_limits *lim, ftc__wire_req *req,
                     size_t *need);

/* When decoding of a SET stopped for more bytes inside its value (whose
 * length is known), returns 1 with the key (a view into buf, the bytes the
 * last ftc__wire_decode call saw), the offset of the value's first byte
 * from the request's start and its length: the value is the request's
 * last field, so a caller may receive it somewhere else and finish the
 * request itself (then it re-initialises the decoder). Else 0. */
int ftc__wire_pending_set(const ftc__wire_decoder *d, const uint8_t *buf,
                          ftc__wire_str *key, size_t *value_off,
                          uint64_t *value_len);

/* When decoding stopped for more bytes after the first field of an op
 * whose first field is its key (every one-key op), returns 1 with that key
 * (a view into buf, as ftc__wire_pending_set). Else 0. */
int ftc__wire_pending_key(const ftc__wire_decoder *d, const uint8_t *buf,
                          ftc__wire_str *key);
/* Whether op carries items (CHECK, WAIT, MULTI_GET, MULTI_SET). */
int ftc__wire_has_items(ftc__store_op op);

/* Reads the string at *cursor (u64 length, bytes) inside a request that
 * ftc__wire_decode completed, and advances the cursor past it. MULTI_SET
 * items are two strings: key, then value. */
void ftc__wire_next_str(const uint8_t **cursor, ftc__wire_str *out);

/* Tells a connection's dialect from its first bytes: FTC__WIRE_V2 when they
 * are the 2.x VALIDATE frame (00 CE F7 85 3C), FTC__WIRE_V1 as soon as they
 * cannot be, -1 while too few bytes have arrived to tell. */
int ftc__wire_detect(const uint8_t *buf, size_t len);

#endif
