/* The tcp backend's wire format: a fixed 48-byte little-endian header on
 * every message, and the connection handshake (docs/protocol.md). Pure
 * encode/decode; the engine checks headers against its own state. */
#ifndef FTC_PG_TCP_WIRE_H
#define FTC_PG_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define FTC__PGW_MAGIC 0x31435446u /* "FTC1" as little-endian bytes */
/* 2: SHM_OFFER/SHM_ANSWER after the handshake (shared-memory lanes). */
#define FTC__PGW_VERSION 2
#define FTC__PGW_HDR 48
#define FTC__PGW_HELLO_BODY 16
/* The largest ABORT or handshake-reject text accepted. */
#define FTC__PGW_TEXT_MAX 1024
/* Handshake flags (header byte 7 of HELLO and HELLO_ACK). */
#define FTC__PGW_F_MAC 1u    /* a 32-byte HMAC follows (token set) */
#define FTC__PGW_F_REJECT 2u /* HELLO_ACK: refused; the reason follows */
/* HELLO and accepting HELLO_ACK: the sender protects every message
 * (docs/protocol.md "Message protection"). */
#define FTC__PGW_F_PROTECT 4u
/* Handshake channel id of the side channel (p2p and control). */
#define FTC__PGW_SIDE 0xffffu

typedef enum ftc__pgw_kind {
    FTC__PGW_COLL = 1,      /* collective data */
    FTC__PGW_P2P = 2,       /* send/recv data, tag = user tag */
    FTC__PGW_PING = 3,      /* liveness probe, seq = nonce */
    FTC__PGW_PONG = 4,      /* its answer */
    FTC__PGW_ABORT = 5,     /* the sender's group failed; text follows */
    FTC__PGW_BYE = 6,       /* the sender leaves (destroy) */
    FTC__PGW_HELLO = 7,     /* handshake, body follows */
    FTC__PGW_HELLO_ACK = 8, /* accepted (len 0) or rejected (text) */
    FTC__PGW_SHM_OFFER = 9, /* collective channel: a lane's segment, or none */
    FTC__PGW_SHM_ANSWER = 10, /* taken (flags 1) or not (the reason) */
    FTC__PGW_KIND_END = 11,
} ftc__pgw_kind;

typedef struct ftc__pgw_hdr {
    uint8_t kind;
    uint8_t op;     /* collective kind (ftc__coll) for COLL */
    uint8_t flags;  /* ABORT: the failure code, negated */
    uint64_t group; /* group id */
    uint64_t epoch;
    uint64_t seq; /* collective sequence number / p2p counter / nonce */
    uint32_t tag; /* COLL: message index on the channel; P2P: user tag */
    uint32_t src; /* sender's rank */
    uint64_t len; /* payload bytes after the header */
} ftc__pgw_hdr;

void ftc__pgw_encode(uint8_t out[FTC__PGW_HDR], const ftc__pgw_hdr *h);
/* Decodes and checks magic, version and kind: 0 or FTC_EPROTO with a
 * message. Lengths are checked by the caller against its limits. */
int ftc__pgw_decode(const uint8_t in[FTC__PGW_HDR], ftc__pgw_hdr *h);

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
