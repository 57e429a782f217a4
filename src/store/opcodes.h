/* TCPStore query types in both PyTorch dialects, mapped to one internal
 * enumeration. Facts: ../shared/reference/pytorch-c10d.md section 1.2 and
 * docs/protocol.md. Shared by the server and the client. LIST_KEYS (17) and
 * BARRIER (18) were captured from torch 2.15 and 2.13 clients
 * (docs/protocol.md); CONTROL_BARRIER (0xF0) is ftc's own. */
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
    FTC__OP_COUNT
} ftc__store_op;

/* ftc's own queries live at 0xF0 and up in the 2.x numbering, far from
 * where PyTorch appends its new ones; only ftc clients send them, and only
 * to a server whose probe said it is ftc's. */
#define FTC__STORE_BYTE_CONTROL_BARRIER 0xF0

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
    if (dialect == 0 && b == FTC__STORE_BYTE_CONTROL_BARRIER) {
        return FTC__OP_CONTROL_BARRIER;
    }
    if (dialect == 0) {
        return b < sizeof(v2) / sizeof(v2[0]) ? v2[b] : FTC__OP_INVALID;
    }
    return b < sizeof(v1) / sizeof(v1[0]) ? v1[b] : FTC__OP_INVALID;
}

/* Op -> wire byte for a dialect; -1 if the dialect lacks the op. */
static inline int ftc__store_op_encode(int dialect, ftc__store_op op)
{
    if (dialect == 0 && op == FTC__OP_CONTROL_BARRIER) {
        return FTC__STORE_BYTE_CONTROL_BARRIER;
    }
    for (int b = 0; b < 32; b++) {
        if (ftc__store_op_decode(dialect, (uint8_t)b) == op) {
            return b;
        }
    }
    return -1;
}

#endif
