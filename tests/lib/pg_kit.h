/* Test harness for process groups: groups of threads in this process,
 * and groups of child processes that meet through a rendezvous
 * directory. */
#ifndef FTC_TEST_PG_HARNESS_H
#define FTC_TEST_PG_HARNESS_H

#include <stdatomic.h>

#include "ftc/pg.h"
#include "testkit.h"

/* Runs fn(pg, arg) on n threads, one group member each (loopback),
 * created with opts (may be NULL); fails the test if any fn returns
 * non-zero or a group cannot be built. Returns when all are done and
 * destroyed. */
typedef int (*pgt_fn)(ftc_pg *pg, void *arg);
void pgt_run_threads(int n, const ftc_pg_opts *opts, pgt_fn fn, void *arg);

/* The address ("127.0.0.1:port") of a store server this process starts
 * on first use and stops at exit; children get it as an argument. Call it
 * first from the main thread (it is not synchronised). */
const char *pgt_store(void);

/* A member of group `name` (the store prefix) of size n, rank `rank`,
 * meeting the other members (processes or threads) through the store at
 * store_addr with ftc_pg_create. */
int pgt_create(const char *store_addr, const char *name, int rank, int n,
               const ftc_pg_opts *opts, ftc_pg **out);

/* Deterministic test data: element i of rank r's input for case seed. */
double pgt_value(int seed, int rank, size_t i, int dtype, int op);

/* Waits for a work with a bounded timeout, returns its result, releases
 * it. */
int pgt_wait(ftc_work *w);

/* A forged-message case on 2 ranks: both run an honest allreduce; once
 * rank 0 is done with it, rank 1 calls plant(pg, arg) to forge a message
 * for rank 0; then both run a second allreduce. Rank 0 must fail with
 * want naming rank 1 and word, its buffer untouched; rank 1 must hear it,
 * in that allreduce or a barrier after, naming rank 0. 0, or FTC_EPROTO
 * saying what happened instead. The same sync for both ranks. */
typedef struct pgt_forgery {
    void (*plant)(ftc_pg *pg, void *arg);
    void *arg;
    int want;
    const char *word;
    atomic_int first_done; /* rank 0 finished the honest allreduce */
    atomic_int planted;
} pgt_forgery;
int pgt_forgery_caught(ftc_pg *pg, pgt_forgery *f);

/* Collective channels of pg (tcp backend) that go through shared
 * memory. */
int pgt_lanes(ftc_pg *pg);

/* Shared-memory lane segments this process still holds: mappings in
 * /proc/self/maps plus open descriptors (0 once every group is gone). */
int pgt_lane_segments(void);

/* Asserts that ftc_pg_create left nothing under prefix: its group key
 * "<prefix>/backend/group" was never set (a refused backend). */
void pgt_assert_unpublished(ftc_store_client *c, const char *prefix);

#endif

/* Collectives pgt_check knows (the ftc__coll numbering). */
enum {
    PGT_ALLREDUCE = 1,
    PGT_BROADCAST = 2,
    PGT_REDUCE = 3,
    PGT_ALLGATHER = 4,
    PGT_ALLGATHERV = 5,
    PGT_REDUCE_SCATTER = 6,
    PGT_ALLTOALL = 7,
    PGT_ALLTOALLV = 8,
    PGT_GATHER = 9,
    PGT_SCATTER = 10,
    PGT_BARRIER = 11,
    PGT_SENDRECV = 12,
    PGT_END = 13,
};

/* Runs one collective on pg with inputs from pgt_value and compares every
 * output element, bit for bit, with a result computed locally from all
 * ranks' inputs. count is the per-rank unit of the collective; algo may
 * be FTC_ALGO_AUTO; root is used by rooted collectives. Returns 0, the
 * collective's error, or FTC_EPROTO naming the first wrong element (in
 * ftc_last_error). Every rank must call it with the same arguments. */
int pgt_check(ftc_pg *pg, int coll, int dtype, int op, size_t count, int algo,
              int root, int seed);
const char *pgt_coll_name(int coll);
