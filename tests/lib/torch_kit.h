/* Drives store_client_torch_agent.py (a real PyTorch TCPStore server plus a
 * PyTorch client) from C tests: start it, send it JSON commands, stop it. */
#ifndef FTC_TEST_TORCH_AGENT_H
#define FTC_TEST_TORCH_AGENT_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct torch_agent {
    pid_t pid;
    int to_fd;   /* the agent's stdin */
    int from_fd; /* the agent's stdout */
    char line[1 << 16];
    size_t have;
    int port;
    char version[64]; /* torch.__version__ */
    char addr[64];    /* "127.0.0.1:PORT" */
} torch_agent;

/* Starts "python script args..." and reads its "PORT n version" line
 * within tk_ms(timeout_ms). Returns 0, or -1 with why filled in (an
 * interpreter that is missing or cannot import torch fails here). */
int torch_agent_start(torch_agent *a, const char *python, const char *script,
                      const char *const *args, int64_t timeout_ms, char *why,
                      size_t why_cap);

/* Sends one command (a JSON object, borrowed). */
void torch_agent_send(torch_agent *a, json_t *cmd);
/* Reads the answer to the oldest command sent; fails the test if none
 * comes within tk_ms(timeout_ms). The result is owned by the caller. */
json_t *torch_agent_recv(torch_agent *a, int64_t timeout_ms);
/* send + recv; fails the test unless the answer is ok. Returns the
 * "result" member (owned by the caller, json_null() for none). */
json_t *torch_agent_ok(torch_agent *a, json_t *cmd);

/* Closes its stdin, reaps it within a few seconds, else kills it. */
void torch_agent_stop(torch_agent *a);

/* Bytes to lowercase hex (out holds 2n+1) and back (returns the length). */
void torch_agent_hex(const void *p, size_t n, char *out);
size_t torch_agent_unhex(const char *hex, void *out, size_t cap);

#endif
