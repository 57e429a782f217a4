/* The pg layer's environment variables, read in this one place. */
#include <stdio.h>
#include <stdlib.h>

#include "pg/pg_int.h"

void ftc__pg_env_read(ftc__pg_env *out)
{
    out->host = getenv("FTC_PG_HOST");
    out->tcp_congestion = getenv("FTC_PG_TCP_CONGESTION");
    out->token = getenv("FTC_TOKEN");
    out->backend = getenv("FTC_PG_BACKEND");
    out->protect = getenv("FTC_PG_PROTECT");
    out->transport = getenv("FTC_PG_TRANSPORT");
    out->host_id = getenv("FTC_PG_HOST_ID");
    out->baby_helper = getenv("FTC_PG_BABY_HELPER");
    out->baby_hang_ms = getenv("FTC_PG_BABY_HANG_MS");
}

void ftc__pg_host_id(char out[FTC__PG_HOST_ID_MAX])
{
    ftc__pg_env env;
    ftc__pg_env_read(&env);
    snprintf(out, FTC__PG_HOST_ID_MAX, "%s",
             env.host_id != NULL ? env.host_id : "");
    for (char *c = out; *c != '\0'; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '|') {
            *c = '_';
        }
    }
}

const char *ftc__pg_backend_path_env(const char *name)
{
    char var[80];
    int n = snprintf(var, sizeof(var), "FTC_PG_");
    for (const char *c = name; *c != '\0' && n < 60; c++) {
        var[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    }
    snprintf(var + n, sizeof(var) - (size_t)n, "_BACKEND");
    return getenv(var);
}
