/* Shared-memory lanes: the collective channel between two ranks of one
 * host carries its messages through a segment both map instead of through
 * the kernel. The TCP connection stays: it rings the peer's doorbell (one
 * byte, only when the peer sleeps) and its end of stream says the peer
 * died. docs/protocol.md "Shared-memory lanes" has the layout. */
#ifndef FTC_PG_TCP_SHM_H
#define FTC_PG_TCP_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

/* Bytes of one direction's ring (a power of two). */
#define FTC__SHM_RING (1u << 20)
/* A message: the tcp backend's 48-byte header, its payload, padding to
 * the next multiple of FTC__SHM_ALIGN. So every header starts aligned and
 * every payload 48 bytes after: no element (8 bytes at most) straddles the
 * ring's end, and no header does. */
#define FTC__SHM_ALIGN 64
/* The segment: its header page, the two rings' control pages, then the
 * two rings' bytes. */
#define FTC__SHM_CTL_OFF 4096
#define FTC__SHM_DATA_OFF (3 * 4096)
#define FTC__SHM_SEG_BYTES (FTC__SHM_DATA_OFF + 2 * (size_t)FTC__SHM_RING)
#define FTC__SHM_NONCE 16

/* One direction: a single-producer single-consumer byte ring. Each field
 * on its own cache line. head and tail count bytes ever written/consumed;
 * a *_waits flag set means "I sleep: ring my doorbell". */
typedef struct ftc__shm_ctl {
    _Atomic uint64_t head;
    uint8_t pad0[56];
    _Atomic uint32_t consumer_waits;
    uint8_t pad1[60];
    _Atomic uint64_t tail;
    uint8_t pad2[56];
    _Atomic uint32_t producer_waits;
    uint8_t pad3[60];
} ftc__shm_ctl;

/* This process's view of a lane. */
typedef struct ftc__shm_lane {
    uint8_t *map; /* the whole segment */
    ftc__shm_ctl *tx_ctl, *rx_ctl;
    uint8_t *tx, *rx; /* ring bytes */
    int memfd;        /* offerer, until the answer: the segment's fd */
    /* writer: what was published, the current message's progress */
    uint64_t tx_head;
    bool tx_hdr_done;
    size_t tx_off;
    /* reader: what was consumed, the current message's progress */
    uint64_t rx_tail;
    bool rx_have_hdr;
    size_t rx_got;
} ftc__shm_lane;

#endif
