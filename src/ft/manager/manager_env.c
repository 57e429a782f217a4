/* Manager options from the environment `ftc run` gives every rank
 * (docs/operations.md, "Launcher contract"), and every variable the
 * manager reads. */
#include <errno.h>
#include <stdlib.h>

#include "ft/manager/manager.h"

/* In the order of FTC__MANAGER_ENV_*. */
static const char *const names[] = {
    "FTC_LIGHTHOUSE",   "FTC_REPLICA_ID",       "FTC_STORE_ADDR",
    "FTC_GROUP_SIZE",   "FTC_GROUP_RANK",       "FTC_JOB",
    "FTC_STORE_PREFIX", "FTC_MIN_REPLICA_SIZE", "FTC_QUORUM_TIMEOUT_MS",
    "FTC_TIMEOUT_MS",   "FTC_ADVERTISE_HOST",   "FTC_TOKEN",
    "FTC_EVENT_FD",     "FTC_TLS_CERT",         "FTC_TLS_KEY",
    "FTC_TLS_CA",       "FTC_INSECURE",
};
_Static_assert(sizeof(names) / sizeof(names[0]) == FTC__MANAGER_ENV_COUNT,
               "one name per FTC__MANAGER_ENV_*");

void ftc__manager_env_read(const char *values[FTC__MANAGER_ENV_COUNT])
{
    for (int i = 0; i < FTC__MANAGER_ENV_COUNT; i++) {
        values[i] = getenv(names[i]);
    }
}

/* Variable i of env, an integer in [min, max]; absent leaves *out. */
static int env_int(const char *const *env, int i, int64_t min, int64_t max,
                   bool required, int64_t *out)
{
    const char *name = names[i], *v = env[i];
    if (v == NULL || v[0] == '\0') {
        return required ? ftc__seterr(FTC_EINVAL, "%s is not set", name) : 0;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < min || x > max) {
        return ftc__seterr(FTC_EINVAL,
                           "%s='%.40s' is not an integer in "
                           "[%lld, %lld]",
                           name, v, (long long)min, (long long)max);
    }
    *out = x;
    return 0;
}

static int env_str(const char *const *env, int i, bool required,
                   const char **out)
{
    const char *name = names[i], *v = env[i];
    if (v == NULL || v[0] == '\0') {
        return required ? ftc__seterr(FTC_EINVAL, "%s is not set", name) : 0;
    }
    *out = v;
    return 0;
}

int ftc_manager_opts_from_env(ftc_manager_opts *opts)
{
    ftc__clearerr();
    if (opts == NULL) {
        return ftc__seterr(FTC_EMISUSE, "opts_from_env: opts is NULL");
    }
    ftc_manager_opts o = *opts;
    int64_t rank = o.group_rank, size = o.group_size;
    int64_t min = o.min_replica_size, qt = o.quorum_timeout_ms,
            t = o.timeout_ms;
    const char *e[FTC__MANAGER_ENV_COUNT];
    ftc__manager_env_read(e);
    int rc = env_str(e, FTC__MANAGER_ENV_LIGHTHOUSE, true, &o.lighthouse);
    rc = rc != 0 ? rc
                 : env_str(e, FTC__MANAGER_ENV_REPLICA_ID, true, &o.replica_id);
    rc = rc != 0 ? rc
                 : env_str(e, FTC__MANAGER_ENV_STORE_ADDR, true, &o.store_addr);
    rc = rc != 0
             ? rc
             : env_int(e, FTC__MANAGER_ENV_GROUP_SIZE, 1, 1 << 20, true, &size);
    rc = rc != 0 ? rc
                 : env_int(e, FTC__MANAGER_ENV_GROUP_RANK, 0, size - 1, true,
                           &rank);
    rc = rc != 0 ? rc : env_str(e, FTC__MANAGER_ENV_JOB, false, &o.job);
    rc = rc != 0 ? rc
                 : env_str(e, FTC__MANAGER_ENV_STORE_PREFIX, false,
                           &o.store_prefix);
    rc = rc != 0 ? rc
                 : env_int(e, FTC__MANAGER_ENV_MIN_REPLICA_SIZE, 1, INT32_MAX,
                           false, &min);
    rc = rc != 0 ? rc
                 : env_int(e, FTC__MANAGER_ENV_QUORUM_TIMEOUT_MS, 1, INT64_MAX,
                           false, &qt);
    rc = rc != 0
             ? rc
             : env_int(e, FTC__MANAGER_ENV_TIMEOUT_MS, 1, INT64_MAX, false, &t);
    rc = rc != 0 ? rc
                 : env_str(e, FTC__MANAGER_ENV_ADVERTISE_HOST, false,
                           &o.advertise_host);
    rc = rc != 0 ? rc : env_str(e, FTC__MANAGER_ENV_TOKEN, false, &o.token);
    if (rc != 0) {
        return ftc__adderr(rc, "manager options from the environment");
    }
    o.group_rank = (int)rank;
    o.group_size = (int)size;
    o.min_replica_size = min;
    o.quorum_timeout_ms = qt;
    o.timeout_ms = t;
    *opts = o;
    return 0;
}
