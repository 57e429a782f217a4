/* oneCCL's C API (libccl.so.2), loaded at run time with dlopen: our own C
 * declarations of what the xccl backend calls (oneCCL's header is C++
 * only), the environment oneCCL reads once per process, error mapping,
 * and a communicator made through an ftc store. Facts (enum values, the
 * 4096-byte unique id passed by value, what works on CPU buffers):
 * ../shared/reference/vendor-ccl.md; choices: docs/decisions.md, "pg:
 * oneCCL loaded by dlopen". */
#ifndef FTC_PG_XCCL_CCL_API_H
#define FTC_PG_XCCL_CCL_API_H

#include <stddef.h>

#include "base/clock.h"
#include "ftc/store.h"

/* onecclGetVersion's encoding (X*10000 + Y*100 + Z) and the oldest
 * release with the C API. */
#define FTC__CCL_VERSION(x, y, z) ((x)*10000 + (y)*100 + (z))
#define FTC__CCL_VERSION_MIN FTC__CCL_VERSION(2022, 2, 0)

/* onecclUniqueId: opaque bytes, passed by value to CommInitRank. */
#define FTC__CCL_UNIQUE_ID_BYTES 4096
typedef struct ftc__ccl_unique_id {
    char data[FTC__CCL_UNIQUE_ID_BYTES];
} ftc__ccl_unique_id;

/* onecclResult_t (ccl/v2/types.h). 0..5 are NCCL's; after that oneCCL
 * differs from NCCL (there 6 is a remote error, 7 in progress). */
enum {
    FTC__CCL_SUCCESS = 0,
    FTC__CCL_ERROR = 1,
    FTC__CCL_SYSTEM_ERROR = 2,
    FTC__CCL_INTERNAL_ERROR = 3,
    FTC__CCL_INVALID_ARGUMENT = 4,
    FTC__CCL_INVALID_USAGE = 5,
    FTC__CCL_IN_PROGRESS = 6,
    FTC__CCL_FAILURE_GPU = 7,
    FTC__CCL_FAILURE_CPU = 8,
    FTC__CCL_ALLOC_FAILURE_CPU = 9,
    FTC__CCL_ALLOC_FAILURE_GPU = 10,
    FTC__CCL_PLUGIN_EXCEPTION = 11, /* AVG: "unsupported op" */
    FTC__CCL_NOT_IMPLEMENTED = 12,
};

/* onecclDataType_t (the same numbers as NCCL's). */
enum {
    FTC__CCL_INT8 = 0,
    FTC__CCL_UINT8 = 1,
    FTC__CCL_INT32 = 2,
    FTC__CCL_UINT32 = 3,
    FTC__CCL_INT64 = 4,
    FTC__CCL_UINT64 = 5,
    FTC__CCL_FLOAT16 = 6,
    FTC__CCL_FLOAT32 = 7,
    FTC__CCL_FLOAT64 = 8,
    FTC__CCL_BFLOAT16 = 9,
};

/* onecclRedOp_t (as NCCL's). */
enum {
    FTC__CCL_SUM = 0,
    FTC__CCL_PROD = 1,
    FTC__CCL_MAX = 2,
    FTC__CCL_MIN = 3,
    FTC__CCL_AVG = 4,
};

/* onecclComm_t points to this incomplete type. */
typedef struct ftc__ccl_comm ftc__ccl_comm;

/* The loaded library. Enums cross as int (their size in the C and C++
 * ABIs of x86-64 and aarch64); `stream` is NULL for host buffers. Every
 * pointer is non-NULL in a table ftc__ccl_load returned. */
typedef struct ftc__ccl_api {
    void *handle;
    int version; /* onecclGetVersion, e.g. 20220200 */
    char path[256];

    int (*get_version)(int *version);
    int (*get_unique_id)(ftc__ccl_unique_id *id);
    int (*comm_init_rank)(ftc__ccl_comm **comm, size_t nranks,
                          ftc__ccl_unique_id id, int rank);
    int (*comm_finalize)(ftc__ccl_comm *comm);
    int (*comm_destroy)(ftc__ccl_comm *comm);
    int (*comm_count)(const ftc__ccl_comm *comm, int *count);
    int (*comm_user_rank)(const ftc__ccl_comm *comm, int *rank);
    const char *(*get_error_string)(int result);
    const char *(*get_last_error)(ftc__ccl_comm *comm);
    int (*all_reduce)(void *send, void *recv, size_t count, int dtype, int op,
                      ftc__ccl_comm *comm, void *stream);
    int (*broadcast)(const void *send, void *recv, size_t count, int dtype,
                     int root, ftc__ccl_comm *comm, void *stream);
    int (*reduce)(const void *send, void *recv, size_t count, int dtype, int op,
                  int root, ftc__ccl_comm *comm, void *stream);
    /* recv_count: elements each rank receives. */
    int (*reduce_scatter)(const void *send, void *recv, size_t recv_count,
                          int dtype, int op, ftc__ccl_comm *comm, void *stream);
    /* send_count: elements each rank contributes. */
    int (*all_gather)(const void *send, void *recv, size_t send_count,
                      int dtype, ftc__ccl_comm *comm, void *stream);
    /* count: elements sent to (and received from) each rank. */
    int (*all_to_all)(const void *send, void *recv, size_t count, int dtype,
                      ftc__ccl_comm *comm, void *stream);
    int (*all_to_all_v)(const void *send, const size_t *send_counts, void *recv,
                        const size_t *recv_counts, int dtype,
                        ftc__ccl_comm *comm, void *stream);
    int (*send)(const void *send, size_t count, int dtype, int peer,
                ftc__ccl_comm *comm, void *stream);
    int (*recv)(void *recv, size_t count, int dtype, int peer,
                ftc__ccl_comm *comm, void *stream);
    int (*group_start)(void);
    int (*group_end)(void);
} ftc__ccl_api;

/* What the environment oneCCL needs depends on (ftc__ccl_env_apply). */
typedef struct ftc__ccl_env_hint {
    int local_rank; /* this process among the ranks on its host */
    int local_size; /* ranks of the group on this host */
    int loopback;   /* 1 when every peer is on this host's loopback */
} ftc__ccl_env_hint;

/* Sets, once per process and only where the user has not set them, the
 * variables oneCCL reads at its first call: CCL_PROCESS_LAUNCHER=none,
 * CCL_LOCAL_RANK, CCL_LOCAL_SIZE, FI_PROVIDER=tcp (CCL_ATL_SHM=1 when the
 * user chose FI_PROVIDER=shm), FI_TCP_IFACE=lo and CCL_KVS_IFACE=lo when
 * hint->loopback, CCL_YIELD=sched_yield when the local ranks' spinning
 * threads (two per rank: the caller and oneCCL's worker) outnumber the
 * online cores. Later calls change nothing (oneCCL would not read them). It
 * calls setenv: call it before other threads read the environment. Returns 1 if
 * this call applied it, 0 if an earlier one had. Documented in
 * docs/operations.md ("oneCCL (xccl) environment"). */
int ftc__ccl_env_apply(const ftc__ccl_env_hint *hint);

/* The process's oneCCL: applies the environment (above), then dlopens
 * FTC_CCL_LIBRARY, else "libccl.so.2" on the loader path, resolves every
 * symbol and checks the version. Loaded once and kept (a C++ library is
 * not safely unloaded); a failure is not remembered, so a later call
 * retries. FTC_ENOTSUP when the library is missing, lacks a symbol (named)
 * or is older than 2022.2; nothing is started then. Thread-safe. */
int ftc__ccl_load(const ftc__ccl_env_hint *hint,
                  const ftc__ccl_api **out /* OUT */);

/* The steps of ftc__ccl_load on an explicit path into a caller's table,
 * without the environment and without caching (tests of the error paths;
 * close a table this filled with ftc__ccl_api_close). */
int ftc__ccl_api_open(const char *path, ftc__ccl_api *api /* OUT */);
void ftc__ccl_api_close(ftc__ccl_api *api);

/* 0 when version (onecclGetVersion's encoding) is new enough, else
 * FTC_ENOTSUP with both versions in the message. */
int ftc__ccl_version_check(int version);

/* Maps a oneCCL result to an ftc code by meaning and sets the message
 * "oneCCL <what>: <result name> (<n>): <library text>" (the library's
 * last error for comm when comm is non-NULL, else its error string).
 * 0 for success. */
int ftc__ccl_error(const ftc__ccl_api *api, int result, ftc__ccl_comm *comm,
                   const char *what);

/* onecclResult_t's name ("onecclPluginException"); "?" if unknown. */
const char *ftc__ccl_result_name(int result);

/* ftc's dtype and op as oneCCL's, or -1 (the caller says FTC_ENOTSUP). */
int ftc__ccl_dtype(int dtype);
int ftc__ccl_op(int op);

/* A communicator of size ranks through store under prefix: rank 0 makes
 * the unique id and publishes it under "<prefix>/ccl_uid"; every rank
 * marks its arrival ("<prefix>/ccl_arrived/<rank>") and waits for all
 * before onecclCommInitRank, so a rank that never comes fails the others
 * with FTC_ETIMEDOUT naming its key instead of leaving them in oneCCL's
 * init, which has no deadline (a peer that dies inside it still hangs the
 * others: see docs/decisions.md). The prefix must be fresh for each
 * communicator. dl bounds the store steps. */
int ftc__ccl_comm_create(const ftc__ccl_api *api, ftc_store_client *store,
                         const char *prefix, int rank, int size,
                         ftc__deadline dl, ftc__ccl_comm **out /* OUT */);

/* Destroys a communicator (NULL is a no-op). Returns the mapped result. */
int ftc__ccl_comm_destroy(const ftc__ccl_api *api, ftc__ccl_comm *comm);

#endif
