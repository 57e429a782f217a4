/* NCCL loaded at run time: libnccl.so.2 (or FTC_NCCL_LIBRARY) is dlopen'd
 * and every function the nccl backend calls is dlsym'd into one table,
 * typed by the toolkit's nccl.h (it compiles as C11). Nothing links
 * libnccl, so a binary built here runs where NCCL is absent and reports
 * FTC_ENOTSUP naming the library or the symbol.
 *
 * Self-contained (dlfcn, nccl.h, ftc/base.h's codes): messages go to a
 * caller's buffer, not ftc_last_error(), so the same code serves a backend
 * built into libftc or one built as a plugin module. */
#ifndef FTC_PG_NCCL_API_H
#define FTC_PG_NCCL_API_H

#include <nccl.h>
#include <stddef.h>

#include "ftc/base.h"

/* The oldest NCCL the table fits: ncclCommShrink and ncclCommRevoke, and
 * ncclConfig_t's 2.28 layout. Major 3 would be a new ABI. */
#define FTC__NCCL_MIN_VERSION 22800
#define FTC__NCCL_MAX_VERSION 29999

/* Every NCCL function the backend uses (the list in the vendor reference:
 * communicator lifetime, abort and async errors, split/shrink/revoke,
 * queries, errors, the collectives, point to point, groups, PreMulSum). */
#define FTC__NCCL_SYMBOLS(X)                                                   \
    X(ncclGetVersion)                                                          \
    X(ncclGetUniqueId)                                                         \
    X(ncclCommInitRank)                                                        \
    X(ncclCommInitRankConfig)                                                  \
    X(ncclCommFinalize)                                                        \
    X(ncclCommDestroy)                                                         \
    X(ncclCommAbort)                                                           \
    X(ncclCommGetAsyncError)                                                   \
    X(ncclCommSplit)                                                           \
    X(ncclCommShrink)                                                          \
    X(ncclCommRevoke)                                                          \
    X(ncclCommCount)                                                           \
    X(ncclCommUserRank)                                                        \
    X(ncclCommCuDevice)                                                        \
    X(ncclGetErrorString)                                                      \
    X(ncclGetLastError)                                                        \
    X(ncclAllReduce)                                                           \
    X(ncclBroadcast)                                                           \
    X(ncclReduce)                                                              \
    X(ncclAllGather)                                                           \
    X(ncclReduceScatter)                                                       \
    X(ncclAlltoAll)                                                            \
    X(ncclGather)                                                              \
    X(ncclScatter)                                                             \
    X(ncclSend)                                                                \
    X(ncclRecv)                                                                \
    X(ncclGroupStart)                                                          \
    X(ncclGroupEnd)                                                            \
    X(ncclRedOpCreatePreMulSum)                                                \
    X(ncclRedOpDestroy)

#define FTC__NCCL_DECLARE(name) __typeof__(name) *name;
/* The loaded library: one pointer per symbol, named as NCCL names it
 * (api->ncclAllReduce(...)), each with nccl.h's exact type. */
typedef struct ftc__nccl_api {
    void *lib;
    char path[256]; /* what was loaded, for messages */
    int version;    /* ncclGetVersion's code, e.g. 22809 */
    FTC__NCCL_SYMBOLS(FTC__NCCL_DECLARE)
} ftc__nccl_api;
#undef FTC__NCCL_DECLARE

/* Loads NCCL into *api: path, else FTC_NCCL_LIBRARY, else libnccl.so.2.
 * FTC_ENOTSUP naming the library (with dlerror's text), the first missing
 * symbol, or a version outside [MIN, MAX]; msg gets the reason and *api is
 * left empty. ftc__nccl_api_unload empties *api; the library itself stays
 * mapped (RTLD_NODELETE): NCCL leaves threads running (ncclGetUniqueId's
 * bootstrap listener), whose code must not be unmapped under them. */
int ftc__nccl_api_load(const char *path, ftc__nccl_api *api, char *msg,
                       size_t msg_size);
void ftc__nccl_api_unload(ftc__nccl_api *api);

/* ncclInProgress: not an error; a non-blocking call is still running. */
#define FTC__NCCL_IN_PROGRESS 1

/* Maps the result of call (its name, for the message) to 0,
 * FTC__NCCL_IN_PROGRESS, or an FTC_E* code: invalid argument FTC_EINVAL,
 * invalid usage FTC_EMISUSE, remote error FTC_EPEER, CUDA / system /
 * internal errors FTC_ESYS. On an error msg gets "call: NCCL's text for
 * the code (name, n): ncclGetLastError(comm)'s text". */
int ftc__nccl_result(const ftc__nccl_api *api, ncclResult_t result,
                     const char *call, ncclComm_t comm, char *msg,
                     size_t msg_size);

#endif
