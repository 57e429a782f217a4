/* Reading a command's token (see cli_token.h). */
#include "cli_token.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_token(const char *cmd, const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "ftc %s: --token-file %s: %s\n", cmd, path,
                strerror(errno));
        return -1;
    }
    size_t n = fread(out, 1, cap - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
                     out[n - 1] == ' ' || out[n - 1] == '\t')) {
        out[--n] = '\0';
    }
    if (n == 0 || more) {
        fprintf(stderr, "ftc %s: --token-file %s: %s\n", cmd, path,
                n == 0 ? "empty" : "too long");
        return -1;
    }
    return 0;
}

int ftc__cli_token(const char *cmd, const char *path, char *buf, size_t cap,
                   const char **token)
{
    *token = NULL;
    if (path != NULL) {
        if (read_token(cmd, path, buf, cap) != 0) {
            return -1;
        }
        *token = buf;
        return 0;
    }
    const char *env = getenv("FTC_TOKEN");
    if (env != NULL && env[0] != '\0') {
        *token = env;
    }
    return 0;
}
