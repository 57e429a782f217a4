/* TCPStore query types in both PyTorch dialects, mapped to one internal
 * enumeration. Facts: ../shared/reference/pytorch-c10d.md section 1.2 and
 * docs/protocol.md. Shared by the server and the client. LIST_KEYS (17) and
 * BARRIER (18) were captured from torch 2.15 and 2.13 clients
 * (docs/protocol.md); CONTROL_BARRIER (0xF0), AUTH_HELLO (0xF1) and
 * AUTH_PROOF (0xF2) are ftc's own. */
#ifndef FTC_STORE_OPCODES_H
#define FTC_STORE_OPCODES_H

#include <stdint.h>

typedef enum ftc__store_op {
    FTC__OP_INVALID = 0,
    FTC__OP_VALIDATE,
    FTC__OP_SET,
    FTC__OP_COMPARE_SET,
    FTC__OP_GET,
    FTC__OP_ADD,
    FTC__OP_CHECK,
    FTC__OP_WAIT,
    FTC__OP_GETNUMKEYS,
    FTC__OP_WATCH_KEY,
    FTC__OP_DELETE_KEY,
    FTC__OP_APPEND,
    FTC__OP_MULTI_GET,
    FTC__OP_MULTI_SET,
    FTC__OP_CANCEL_WAIT,
    FTC__OP_PING,
    FTC__OP_QUEUE_PUSH,
    FTC__OP_QUEUE_POP,
    FTC__OP_QUEUE_LEN,
    FTC__OP_LIST_KEYS,
    FTC__OP_BARRIER,
    FTC__OP_CONTROL_BARRIER,
    FTC__OP_AUTH_HELLO,
    FTC__OP_AUTH_PROOF,
    FTC__OP_COUNT
} ftc__store_op;

/* ftc's own queries live at 0xF0 and up in the 2.x numbering, far from
 * where PyTorch appends its new ones; only ftc clients send them, and only
 * to a server whose probe said it is ftc's. */
#define FTC__STORE_BYTE_CONTROL_BARRIER 0xF0
#define FTC__STORE_BYTE_AUTH_HELLO 0xF1
#define FTC__STORE_BYTE_AUTH_PROOF 0xF2

/* ftc's own 2.x query types, by byte from 0xF0. */
static inline ftc__store_op ftc__store_op_decode_own(uint8_t b)
{
    switch (b) {
    case FTC__STORE_BYTE_CONTROL_BARRIER:
        return FTC__OP_CONTROL_BARRIER;
    case FTC__STORE_BYTE_AUTH_HELLO:
        return FTC__OP_AUTH_HELLO;
    case FTC__STORE_BYTE_AUTH_PROOF:
        return FTC__OP_AUTH_PROOF;
    default:
        return FTC__OP_INVALID;
    }
}

/* A 2.x PING whose nonce has these top 12 bits asks "are you ftc?": an ftc
 * server answers the nonce's bitwise NOT instead of an echo, with the low
 * bit flipped back (FTC__STORE_PROBE_LOCKED) when it has a token and the
 * connection has not authenticated. PyTorch sends its pid, never that
 * large. */
#define FTC__STORE_NONCE_TAG 0xF7C00000u
#define FTC__STORE_NONCE_TAG_MASK 0xFFF00000u
#define FTC__STORE_PROBE_LOCKED 1u

/* What each side's AUTH MAC covers ahead of the client's and the server's
 * nonces (docs/protocol.md "Authentication"): different labels, so that
 * neither proof can be replayed as the other. */
#define FTC__STORE_AUTH_SERVER_LABEL "ftc store server proof v1"
#define FTC__STORE_AUTH_CLIENT_LABEL "ftc store client proof v1"

/* The 2.x VALIDATE magic, sent little-endian after query type 0. */
#define FTC__STORE_VALIDATE_MAGIC 0x3C85F7CEu

/* Reply bytes. */
enum {
    FTC__CHECK_READY = 0,
    FTC__CHECK_NOT_READY = 1,
    FTC__WAIT_STOP_WAITING = 0,
    FTC__WAIT_CANCELED = 1,
    FTC__WATCH_KEY_UPDATED = 0,
    FTC__WATCH_KEY_CREATED = 1,
    FTC__WATCH_KEY_DELETED = 2,
    FTC__WATCH_CALLBACK_REGISTERED = 3,
};

/* Wire byte -> op for a dialect (0 = FTC_STORE_DIALECT_V2, 1 = V1);
 * FTC__OP_INVALID for bytes the dialect does not define. */
static inline ftc__store_op ftc__store_op_decode(int dialect, uint8_t b)
{
    static const ftc__store_op v2[] = {
        FTC__OP_VALIDATE,    FTC__OP_SET,        FTC__OP_COMPARE_SET,
        FTC__OP_GET,         FTC__OP_ADD,        FTC__OP_CHECK,
        FTC__OP_WAIT,        FTC__OP_GETNUMKEYS, FTC__OP_DELETE_KEY,
        FTC__OP_APPEND,      FTC__OP_MULTI_GET,  FTC__OP_MULTI_SET,
        FTC__OP_CANCEL_WAIT, FTC__OP_PING,       FTC__OP_QUEUE_PUSH,
        FTC__OP_QUEUE_POP,   FTC__OP_QUEUE_LEN,  FTC__OP_LIST_KEYS,
        FTC__OP_BARRIER,
    };
    static const ftc__store_op v1[] = {
        FTC__OP_SET,        FTC__OP_COMPARE_SET, FTC__OP_GET,
        FTC__OP_ADD,        FTC__OP_CHECK,       FTC__OP_WAIT,
        FTC__OP_GETNUMKEYS, FTC__OP_WATCH_KEY,   FTC__OP_DELETE_KEY,
    };
    if (dialect == 0 && b >= FTC__STORE_BYTE_CONTROL_BARRIER) {
        return ftc__store_op_decode_own(b);
    }
    if (dialect == 0) {
        return b < sizeof(v2) / sizeof(v2[0]) ? v2[b] : FTC__OP_INVALID;
    }
    return b < sizeof(v1) / sizeof(v1[0]) ? v1[b] : FTC__OP_INVALID;
}

/* Op -> wire byte for a dialect; -1 if the dialect lacks the op. */
static inline int ftc__store_op_encode(int dialect, ftc__store_op op)
{
    for (int b = FTC__STORE_BYTE_CONTROL_BARRIER; dialect == 0 && b < 256;
         b++) {
        if (ftc__store_op_decode_own((uint8_t)b) == op) {
            return b;
        }
    }
    for (int b = 0; b < 32; b++) {
        if (ftc__store_op_decode(dialect, (uint8_t)b) == op) {
            return b;
        }
    }
    return -1;
}

#endif
