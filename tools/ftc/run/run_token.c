/* The job's token (see run_token.h). */
#include "run/run_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/auth.h"
#include "cli_token.h"

/* Random bytes in a generated token: 256 bits, printed as hex. */
#define GENERATED_BYTES 32

int run_token_resolve(const run_opts *o, char *buf, size_t cap,
                      const char **token, run_token_source *source)
{
    *source = RUN_TOKEN_NONE;
    if (ftc__cli_token("run", o->token_file, buf, cap, token) != 0) {
        return -1;
    }
    if (*token != NULL) {
        *source = RUN_TOKEN_GIVEN;
    } else if (o->lighthouse == NULL) {
        uint8_t raw[GENERATED_BYTES];
        if (cap < 2 * GENERATED_BYTES + 1 ||
            ftc__auth_random(raw, sizeof(raw)) != 0) {
            fprintf(stderr, "ftc run: cannot make a token for the job\n");
            return -1;
        }
        for (size_t i = 0; i < sizeof(raw); i++) {
            snprintf(buf + 2 * i, 3, "%02x", raw[i]);
        }
        ftc__auth_wipe(raw, sizeof(raw));
        *token = buf;
        *source = RUN_TOKEN_GENERATED;
    }
    if (ftc__cli_open_bind("run", o->host, *token, o->insecure) != 0) {
        return -1;
    }
    if ((*token != NULL && setenv("FTC_TOKEN", *token, 1) != 0) ||
        (o->insecure && setenv("FTC_INSECURE", "1", 1) != 0)) {
        fprintf(stderr, "ftc run: cannot export FTC_TOKEN or FTC_INSECURE\n");
        return -1;
    }
    return 0;
}

int run_token_save(const char *run_dir, const char *token)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/token", run_dir);
    /* A --run-dir kept from an earlier job may hold its token: replaced,
     * never reused with whatever mode that file has. */
    (void)unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    size_t n = strlen(token);
    if (fd < 0 || write(fd, token, n) != (ssize_t)n ||
        write(fd, "\n", 1) != 1) {
        fprintf(stderr, "ftc run: cannot write %s: %s\n", path,
                strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    close(fd);
    return 0;
}
