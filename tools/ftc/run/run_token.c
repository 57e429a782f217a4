/* The job's token (see run_token.h). */
#include "run/run_token.h"

#include <stdio.h>
#include <stdlib.h>

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
    if (*token != NULL && setenv("FTC_TOKEN", *token, 1) != 0) {
        fprintf(stderr, "ftc run: cannot export FTC_TOKEN\n");
        return -1;
    }
    return 0;
}
