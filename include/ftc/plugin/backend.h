/* ftc/plugin/backend.h: the table a process-group backend gives the pg
 * layer. The built-in tcp backend fills it today; NCCL and oneCCL
 * backends are meant to fill the same table from a plugin library.
 *
 * Status: ABI major 0, a draft. The table is what the pg layer calls on a
 * group after it is built, and the tcp backend goes through it, but an
 * outside library cannot yet provide one: there is no public way to read
 * a request or to complete its work, no creation slot, and no loader
 * (docs/decisions.md, "device: the backend table is a draft"). Major 1
 * will add those; until then the layout may change between releases.
 *
 * Every slot returns 0 or a negative FTC_E* code with ftc_last_error set,
 * and may be called from any thread unless it says otherwise. impl is the
 * backend's own state for one group. Versioning as in ftc/plugin/abi.h. */
#ifndef FTC_PLUGIN_BACKEND_H
#define FTC_PLUGIN_BACKEND_H

#include "ftc/pg.h"
#include "ftc/plugin/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of ftc_pg_backend this header describes. */
#define FTC_PG_BACKEND_ABI_VERSION FTC_PLUGIN_ABI(0, 1)

/* One validated collective or send/recv, with its ftc_work: what a
 * submitted call becomes. Opaque; the backend owns it from submit on. */
typedef struct ftc_pg_backend_request ftc_pg_backend_request;

typedef struct ftc_pg_backend {
    uint32_t abi_version; /* FTC_PG_BACKEND_ABI_VERSION */
    uint32_t struct_size; /* sizeof(ftc_pg_backend) */
    const char *name;     /* "tcp", for messages */
    /* Capabilities: 0 if the backend can move buffers of this device kind
     * (FTC_DEVICE_*), else FTC_ENOTSUP naming what is missing. */
    int (*check_device)(void *impl, int device);
    /* Takes ownership of request, on success and on failure. 0, or the
     * group's failure code when the group is unusable. */
    int (*submit)(void *impl, ftc_pg_backend_request *request);
    /* Blocks until work is done or deadline_ns (absolute CLOCK_MONOTONIC;
     * INT64_MAX: never) passes (FTC_ETIMEDOUT), making progress meanwhile.
     * Never called from a completion callback. */
    int (*wait)(void *impl, ftc_work *work, int64_t deadline_ns);
    /* Fails every pending and later call of the group with FTC_ECANCELED
     * and tells the peers, as ftc_pg_abort() describes; returns once the
     * pending works are failed. */
    void (*abort)(void *impl);
    /* 0 while the group is usable, else its failure code. */
    int (*status)(void *impl);
    /* Ends the group: pending works fail, then impl is freed. */
    void (*destroy)(void *impl);
} ftc_pg_backend;

#ifdef __cplusplus
}
#endif
#endif
