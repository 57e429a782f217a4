/* The Baby backend's rings: one producer, one consumer, fixed-size
 * records in shared memory, and an eventfd the producer writes only when
 * the consumer declared it sleeps (baby_shm.h). The sleep handshake is
 * the usual store-then-load on both sides with sequentially consistent
 * order: the producer publishes head and then reads "sleeping", the
 * consumer publishes "sleeping" and then reads head, so at least one of
 * them sees the other. */
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pg/baby/baby_shm.h"

int ftc__baby_push(ftc__baby_end *e, const void *rec)
{
    uint64_t tail = atomic_load_explicit(&e->ring->tail, memory_order_acquire);
    if (e->mine - tail >= FTC__BABY_SLOTS) {
        return 1;
    }
    memcpy((char *)e->slots + (e->mine % FTC__BABY_SLOTS) * e->record, rec,
           e->record);
    e->mine++;
    atomic_store_explicit(&e->ring->head, e->mine, memory_order_seq_cst);
    if (atomic_load_explicit(&e->ring->sleeping, memory_order_seq_cst) != 0) {
        uint64_t one = 1;
        /* Fails only when the counter is about to overflow: the consumer
         * is awake then anyway. */
        (void)!write(e->efd, &one, sizeof(one));
    }
    return 0;
}

int ftc__baby_pop(ftc__baby_end *e, void *rec)
{
    uint64_t head = atomic_load_explicit(&e->ring->head, memory_order_acquire);
    if (head == e->mine) {
        return 0;
    }
    if (head - e->mine > FTC__BABY_SLOTS) {
        return FTC_EPROTO;
    }
    memcpy(rec,
           (const char *)e->slots + (e->mine % FTC__BABY_SLOTS) * e->record,
           e->record);
    e->mine++;
    atomic_store_explicit(&e->ring->tail, e->mine, memory_order_release);
    return 1;
}

int ftc__baby_sleep_begin(ftc__baby_end *e)
{
    atomic_store_explicit(&e->ring->sleeping, 1, memory_order_seq_cst);
    return atomic_load_explicit(&e->ring->head, memory_order_seq_cst) !=
           e->mine;
}

void ftc__baby_awake(ftc__baby_end *e)
{
    atomic_store_explicit(&e->ring->sleeping, 0, memory_order_relaxed);
    uint64_t n;
    (void)!read(e->efd, &n, sizeof(n)); /* non-blocking: may be empty */
}
