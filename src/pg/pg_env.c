/* The pg layer's environment variables, read in this one place, and the
 * host identity derived from one of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* FNV-1a over len bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    return h;
}

/* The first line of a small file ("" when it cannot be read). */
static void first_line(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fgets(out, (int)cap, f) == NULL) {
            out[0] = '\0';
        }
        fclose(f);
    }
    out[strcspn(out, "\n")] = '\0';
}

uint64_t ftc__pg_host_key(void)
{
    char machine[256], netns[64] = "", id[FTC__PG_HOST_ID_MAX];
    first_line("/proc/sys/kernel/random/boot_id", machine, sizeof(machine));
    if (machine[0] == '\0' && gethostname(machine, sizeof(machine)) != 0) {
        machine[0] = '\0';
    }
    machine[sizeof(machine) - 1] = '\0';
    ssize_t n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
    netns[n > 0 ? n : 0] = '\0';
    ftc__pg_host_id(id);
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, machine, strlen(machine) + 1);
    h = fnv1a(h, netns, strlen(netns) + 1);
    h = fnv1a(h, id, strlen(id) + 1);
    return h != 0 ? h : 1;
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
