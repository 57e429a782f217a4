/* Reading a command's token (see cli_token.h). */
#include "cli_token.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"

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
    if (strlen(out) != n) {
        fprintf(stderr,
                "ftc %s: --token-file %s: has a NUL byte (a token is "
                "text)\n",
                cmd, path);
        return -1;
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r' ||
                     out[n - 1] == ' ' || out[n - 1] == '\t')) {
        out[--n] = '\0';
    }
    if (n == 0 || more) {
        fprintf(stderr, "ftc %s: --token-file %s: %s\n", cmd, path,
                n == 0 ? "empty" : "longer than 1023 bytes");
        return -1;
    }
    return 0;
}

/* The smallest token taken without a warning: 128 bits as bytes. */
#define TOKEN_WEAK 16

int ftc__cli_token(const char *cmd, const char *path, char *buf, size_t cap,
                   const char **token)
{
    *token = NULL;
    if (path != NULL) {
        if (read_token(cmd, path, buf, cap) != 0) {
            return -1;
        }
        *token = buf;
    } else {
        const char *env = getenv("FTC_TOKEN");
        if (env != NULL && strlen(env) >= FTC__CLI_TOKEN_MAX) {
            fprintf(stderr, "ftc %s: FTC_TOKEN is longer than %d bytes\n", cmd,
                    FTC__CLI_TOKEN_MAX - 1);
            return -1;
        }
        *token = env != NULL && env[0] != '\0' ? env : NULL;
    }
    if (*token != NULL && strlen(*token) < TOKEN_WEAK) {
        fprintf(stderr,
                "ftc %s: warning: the token is %zu bytes; anyone who can "
                "connect can test guesses against it offline: use at least "
                "%d random bytes (ftc run makes 32)\n",
                cmd, strlen(*token), TOKEN_WEAK);
    }
    return 0;
}

int ftc__cli_open_bind(const char *cmd, const char *host, const char *token,
                       int insecure)
{
    if (token != NULL || insecure || host == NULL ||
        ftc__addr_loopback_only(host)) {
        return 0;
    }
    fprintf(stderr,
            "ftc %s: refusing to serve on '%s' without a token: anyone who "
            "reaches it could take over the jobs that use it; give "
            "--token-file (or FTC_TOKEN), or --insecure to serve it open "
            "anyway\n",
            cmd, host[0] != '\0' ? host : "every interface");
    return -1;
}
