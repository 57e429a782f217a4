/* The tcp backend's wire format: a fixed 48-byte little-endian header on
 * every message, and the connection handshake (docs/protocol.md). Pure
 * encode/decode; the engine checks headers against its own state. */
#ifndef FTC_PG_TCP_WIRE_H
#define FTC_PG_TCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTC__PGW_MAGIC 0x31435446u /* "FTC1" as little-endian bytes */
/* 2: SHM_OFFER/SHM_ANSWER after the handshake (shared-memory lanes).
 * 3: an ABORT carries the ranks its sender blames before its text. */
#define FTC__PGW_VERSION 3
#define FTC__PGW_HDR 48
#define FTC__PGW_HELLO_BODY 16
/* The largest ABORT or handshake-reject text accepted. */
#define FTC__PGW_TEXT_MAX 1024
/* ABORT frames: the header's tag counts the blamed ranks (at most
 * FTC__PGW_BLAME_MAX), its op holds FTC__PGW_ABORT_* bits, and the
 * payload is the ranks (u32 little-endian, strictly ascending, each below
 * the group size and not the sender) followed by the text. A sender that
 * blames more ranks carries the lowest FTC__PGW_BLAME_MAX of them: the
 * receiver learns a prefix of the set, never a rank outside it. */
#define FTC__PGW_BLAME_MAX 1024
#define FTC__PGW_ABORT_MAX (4 * FTC__PGW_BLAME_MAX + FTC__PGW_TEXT_MAX)
/* The failure began with an ftc_pg_abort (FTC_ECANCELED) somewhere: the
 * receiver blames only the ranks the frame names. */
#define FTC__PGW_ABORT_ON_PURPOSE 1u
/* Handshake flags (header byte 7 of HELLO and HELLO_ACK). */
#define FTC__PGW_F_MAC 1u    /* a 32-byte HMAC follows (token set) */
#define FTC__PGW_F_REJECT 2u /* HELLO_ACK: refused; the reason follows */
/* HELLO and accepting HELLO_ACK: the sender protects every message
 * (docs/protocol.md "Message protection"). */
#define FTC__PGW_F_PROTECT 4u
/* With PROTECT: the sender encrypts every message's payload too. */
#define FTC__PGW_F_ENCRYPT 8u
/* Handshake channel id of the side channel (p2p and control). */
#define FTC__PGW_SIDE 0xffffu

typedef enum ftc__pgw_kind {
    FTC__PGW_COLL = 1,      /* collective data */
    FTC__PGW_P2P = 2,       /* send/recv data, tag = user tag */
    FTC__PGW_PING = 3,      /* liveness probe, seq = nonce */
    FTC__PGW_PONG = 4,      /* its answer */
    FTC__PGW_ABORT = 5,     /* the sender's group failed; blamed ranks and
                               text follow */
    FTC__PGW_BYE = 6,       /* the sender leaves (destroy) */
    FTC__PGW_HELLO = 7,     /* handshake, body follows */
    FTC__PGW_HELLO_ACK = 8, /* accepted (len 0) or rejected (text) */
    FTC__PGW_SHM_OFFER = 9, /* collective channel: a lane's segment, or none */
    FTC__PGW_SHM_ANSWER = 10, /* taken (flags 1) or not (the reason) */
    FTC__PGW_KIND_END = 11,
} ftc__pgw_kind;

typedef struct ftc__pgw_hdr {
    uint8_t kind;
    uint8_t op;     /* COLL: collective kind (ftc__coll); ABORT: flags */
    uint8_t flags;  /* ABORT: the failure code, negated */
    uint64_t group; /* group id */
    uint64_t epoch;
    uint64_t seq; /* collective sequence number / p2p counter / nonce */
    uint32_t tag; /* COLL: message index on the channel; P2P: user tag;
                     ABORT: count of blamed ranks */
    uint32_t src; /* sender's rank */
    uint64_t len; /* payload bytes after the header */
} ftc__pgw_hdr;

void ftc__pgw_encode(uint8_t out[FTC__PGW_HDR], const ftc__pgw_hdr *h);
/* Decodes and checks magic, version and kind: 0 or FTC_EPROTO with a
 * message. Lengths are checked by the caller against its limits. */
int ftc__pgw_decode(const uint8_t in[FTC__PGW_HDR], ftc__pgw_hdr *h);

/* Checks an ABORT header before its payload is read: known op bits, at
 * most FTC__PGW_BLAME_MAX ranks, and a payload of the ranks plus at most
 * FTC__PGW_TEXT_MAX bytes of text. 0 or FTC_EPROTO with a message. */
int ftc__pgw_abort_check(const ftc__pgw_hdr *h);
/* Writes the ranks blamed[r] marks (size entries) as an ABORT's rank
 * list, ascending, the lowest FTC__PGW_BLAME_MAX of them; returns how
 * many it wrote (out has room for FTC__PGW_BLAME_MAX). */
uint32_t ftc__pgw_blame_encode(uint8_t *out, const bool *blamed, uint32_t size);
/* Reads count ranks from in (4 * count bytes) and marks them in blamed
 * (size entries), once every one is checked: strictly ascending, below
 * size, not src. FTC_EPROTO naming the first bad entry, and blamed left
 * as it was. */
int ftc__pgw_blame_decode(const uint8_t *in, uint32_t count, uint32_t size,
                          uint32_t src, bool *blamed);

/* The handshake body sent after a HELLO header. */
typedef struct ftc__pgw_hello {
    uint32_t dst;     /* the rank being connected to */
    uint32_t size;    /* group size */
    uint32_t channel; /* stream index, or FTC__PGW_SIDE */
    uint32_t streams; /* collective streams per peer */
} ftc__pgw_hello;

void ftc__pgw_hello_encode(uint8_t out[FTC__PGW_HELLO_BODY],
                           const ftc__pgw_hello *h);
void ftc__pgw_hello_decode(const uint8_t in[FTC__PGW_HELLO_BODY],
                           ftc__pgw_hello *h);

#endif
