/* The job's shared secret (docs/security.md): --token-file, else
 * $FTC_TOKEN, else, when the launcher runs the job's lighthouse itself
 * (it then owns the whole job), a random one made for this job. It is put
 * in the launcher's environment (FTC_TOKEN), which every rank inherits,
 * and given to the groups' stores and the embedded lighthouse. With
 * --insecure, FTC_INSECURE=1 is exported too: the ranks may then send it
 * in clear text to other hosts (docs/security.md). */
#ifndef FTC_TOOLS_RUN_TOKEN_H
#define FTC_TOOLS_RUN_TOKEN_H

#include <stddef.h>

#include "run/run_opts.h"

typedef enum run_token_source {
    RUN_TOKEN_NONE,      /* --lighthouse without a token: the job is open */
    RUN_TOKEN_GIVEN,     /* --token-file or $FTC_TOKEN */
    RUN_TOKEN_GENERATED, /* made for this job */
} run_token_source;

/* Resolves the token into buf (cap >= 65) and exports it. Call before any
 * thread starts (it sets the environment). *token: buf or NULL. Without
 * one, a non-loopback --host is refused unless --insecure. Returns 0, or
 * -1 after printing why. */
int run_token_resolve(const run_opts *o, char *buf, size_t cap,
                      const char **token, run_token_source *source);

/* Writes a generated token to "<run_dir>/token" (mode 0600, a new file)
 * for the operator's reads: `ftc status --token-file`, the dashboard's
 * password prompt. Returns 0, or -1 after printing why. */
int run_token_save(const char *run_dir, const char *token);

/* Keys that PyTorch's TCPStore clients, which cannot authenticate, may use
 * in a group's store: torchrun's agent-store rendezvous ("/worker/...",
 * sent as "//worker/...") and its worker counter ("init/"). */
#define RUN_TOKEN_OPEN_PREFIXES                                                \
    {                                                                          \
        "init/", "/worker/"                                                    \
    }
#define RUN_TOKEN_N_OPEN_PREFIXES 2

#endif
