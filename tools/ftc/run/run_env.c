/* Builds each rank's environment: the launcher contract of
 * docs/operations.md ("Launcher contract") over the inherited one. */
#include "run/run_env.h"

#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "ftc/ft.h"

static const char *const contract[] = {
    "FTC_JOB",
    "FTC_LIGHTHOUSE",
    "FTC_REPLICA_ID",
    "FTC_REPLICA_INDEX",
    "FTC_NUM_REPLICAS",
    "FTC_GROUP_RANK",
    "FTC_GROUP_SIZE",
    "FTC_STORE_ADDR",
    "FTC_STORE_PREFIX",
    "FTC_INCARNATION",
    "FTC_RUN_DIR",
    "FTC_EVENT_FD",
    "FTC_ADVERTISE_HOST",
    /* what torchft's scripts and torchrun's workers read, the same facts
     * under their names (docs/operations.md) */
    "REPLICA_GROUP_ID",
    "NUM_REPLICA_GROUPS",
    "TORCHFT_LIGHTHOUSE",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_RESTART_COUNT",
};
#define NCONTRACT (sizeof(contract) / sizeof(contract[0]))
/* Replaced, not inherited, under --trace (else left alone). */
static const char *const trace_name = "FTC_TRACE=";

int run_env_is_contract(const char *name, size_t len)
{
    for (size_t i = 0; i < NCONTRACT; i++) {
        if (strlen(contract[i]) == len && memcmp(contract[i], name, len) == 0) {
            return 1;
        }
    }
    return 0;
}

void run_env_replica_id(int index, char *buf, size_t cap)
{
    snprintf(buf, cap, "replica_%d", index);
}

void run_env_store_prefix(int index, int incarnation, char *buf, size_t cap)
{
    snprintf(buf, cap, "replica_%d/%d", index, incarnation);
}

void run_env_trace_path(const char *dir, int index, int rank, int incarnation,
                        char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/trace-replica_%d-rank%d-inc%d.json", dir, index,
             rank, incarnation);
}

/* Length of the NAME part of "NAME=VALUE". */
static size_t name_len(const char *kv)
{
    return strcspn(kv, "=");
}

static int named_in(const char *kv, const char *const *list, int n)
{
    size_t len = name_len(kv);
    for (int i = 0; i < n; i++) {
        if (name_len(list[i]) == len && memcmp(list[i], kv, len) == 0) {
            return 1;
        }
    }
    return 0;
}

static char *join(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *s = ftc__malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%s=%s", name, value);
    }
    return s;
}

static char *join_int(const char *name, int value)
{
    char text[16];
    snprintf(text, sizeof(text), "%d", value);
    return join(name, text);
}

/* The host and the port of "host:port" or "[v6]:port" into host and port
 * (the store's address as torchrun's MASTER_ADDR and MASTER_PORT). */
static void split_addr(const char *addr, char *host, size_t cap,
                       const char **port)
{
    const char *colon = strrchr(addr, ':');
    size_t n = colon != NULL ? (size_t)(colon - addr) : strlen(addr);
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
        addr++;
        n -= 2;
    }
    snprintf(host, cap, "%.*s", (int)n, addr);
    *port = colon != NULL ? colon + 1 : "";
}

char **run_env_build(char *const base[], const run_env_rank *r,
                     const char *const *user, int n_user)
{
    size_t nbase = 0;
    while (base != NULL && base[nbase] != NULL) {
        nbase++;
    }
    char **env =
        ftc__calloc(nbase + NCONTRACT + (size_t)n_user + 2, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    size_t n = 0;
    int failed = 0;
    for (size_t i = 0; i < nbase; i++) {
        if (run_env_is_contract(base[i], name_len(base[i])) ||
            named_in(base[i], user, n_user) ||
            (r->trace_dir != NULL && named_in(base[i], &trace_name, 1))) {
            continue;
        }
        env[n] = ftc__strdup(base[i]);
        failed |= env[n++] == NULL;
    }
    char id[32], prefix[48], master[256];
    char lighthouse_url[FTC_LIGHTHOUSE_ADDR_MAX + 8];
    const char *master_port;
    run_env_replica_id(r->replica_index, id, sizeof(id));
    split_addr(r->store_addr, master, sizeof(master), &master_port);
    snprintf(lighthouse_url, sizeof(lighthouse_url), "%s%s",
             strstr(r->lighthouse, "://") != NULL ? "" : "http://",
             r->lighthouse);
    run_env_store_prefix(r->replica_index, r->incarnation, prefix,
                         sizeof(prefix));
    char *mine[NCONTRACT] = {
        join("FTC_JOB", r->job),
        join("FTC_LIGHTHOUSE", r->lighthouse),
        join("FTC_REPLICA_ID", id),
        join_int("FTC_REPLICA_INDEX", r->replica_index),
        join_int("FTC_NUM_REPLICAS", r->num_replicas),
        join_int("FTC_GROUP_RANK", r->group_rank),
        join_int("FTC_GROUP_SIZE", r->group_size),
        join("FTC_STORE_ADDR", r->store_addr),
        join("FTC_STORE_PREFIX", prefix),
        join_int("FTC_INCARNATION", r->incarnation),
        join("FTC_RUN_DIR", r->run_dir),
        join_int("FTC_EVENT_FD", RUN_EVENT_FD),
        join("FTC_ADVERTISE_HOST", r->host),
        join_int("REPLICA_GROUP_ID", r->replica_index),
        join_int("NUM_REPLICA_GROUPS", r->num_replicas),
        join("TORCHFT_LIGHTHOUSE", lighthouse_url),
        join_int("RANK", r->group_rank),
        join_int("WORLD_SIZE", r->group_size),
        join_int("LOCAL_RANK", r->group_rank),
        join_int("LOCAL_WORLD_SIZE", r->group_size),
        join("MASTER_ADDR", master),
        join("MASTER_PORT", master_port),
        /* every rank a client of the group's store (which ftc run serves),
         * as under torchrun's agent */
        join("TORCHELASTIC_USE_AGENT_STORE", "True"),
        join_int("TORCHELASTIC_RESTART_COUNT", r->incarnation),
    };
    for (size_t i = 0; i < NCONTRACT; i++) {
        env[n] = mine[i];
        failed |= env[n++] == NULL;
    }
    if (r->trace_dir != NULL) {
        char path[4200];
        run_env_trace_path(r->trace_dir, r->replica_index, r->group_rank,
                           r->incarnation, path, sizeof(path));
        env[n] = join("FTC_TRACE", path);
        failed |= env[n++] == NULL;
    }
    for (int i = 0; i < n_user; i++) {
        env[n] = ftc__strdup(user[i]);
        failed |= env[n++] == NULL;
    }
    if (failed) {
        /* NULL holes stop run_env_free early; free by count instead. */
        for (size_t i = 0; i < n; i++) {
            ftc__free(env[i]);
        }
        ftc__free(env);
        return NULL;
    }
    return env;
}

void run_env_free(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        ftc__free(env[i]);
    }
    ftc__free(env);
}
