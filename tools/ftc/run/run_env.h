/* The environment of one rank: the launcher's own minus any contract
 * variable, then the launcher contract (docs/operations.md), then --env. */
#ifndef FTC_TOOLS_RUN_ENV_H
#define FTC_TOOLS_RUN_ENV_H

#include <stddef.h>

/* The descriptor a rank finds its end of the event socket on
 * (FTC_EVENT_FD): the first after stderr. libftc's manager sends its
 * FTC_EVENT lines there, never blocking (a full socket drops a line). */
#define RUN_EVENT_FD 3

/* What the contract tells one rank. Strings are borrowed. */
typedef struct run_env_rank {
    const char *job;
    const char *lighthouse; /* host:port */
    const char *store_addr; /* host:port of its replica group's store */
    const char *run_dir;
    int replica_index;     /* 0..N-1 */
    int num_replicas;      /* N */
    int group_rank;        /* 0..M-1 */
    int group_size;        /* M */
    int incarnation;       /* 0 first, +1 per restart of the group */
    const char *trace_dir; /* --trace: sets FTC_TRACE; NULL: inherited */
    const char *host;      /* FTC_ADVERTISE_HOST: what the rank binds */
} run_env_rank;

/* True if name[0..len) is a variable the launcher sets (FTC_JOB, ...). */
int run_env_is_contract(const char *name, size_t len);

/* A NULL-terminated "K=V" array for execve: base (NULL-terminated, e.g.
 * environ) without contract variables, the contract for r (with
 * r->trace_dir, FTC_TRACE=run_env_trace_path instead of any inherited
 * one), then the n_user "K=V" entries of user (which replace same-named
 * base entries). Returns
 * NULL when out of memory. Release with run_env_free. */
char **run_env_build(char *const base[], const run_env_rank *r,
                     const char *const *user, int n_user);
void run_env_free(char **env);

/* "replica_<index>" and "<replica_id>/<incarnation>", the stable replica
 * id and the per-incarnation store prefix, into buf. */
void run_env_replica_id(int index, char *buf, size_t cap);
void run_env_store_prefix(int index, int incarnation, char *buf, size_t cap);
/* "<dir>/trace-replica_<index>-rank<rank>-inc<incarnation>.json": one
 * trace per rank and incarnation, so a restarted rank keeps the file of
 * the one it replaced. */
void run_env_trace_path(const char *dir, int index, int rank, int incarnation,
                        char *buf, size_t cap);

#endif
