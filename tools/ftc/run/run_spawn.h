/* Starting one rank process: fork then exec into its own process group,
 * stdout and stderr on pipes, an event socket on descriptor RUN_EVENT_FD,
 * stdin on /dev/null, killed if the launcher dies (PR_SET_PDEATHSIG). */
#ifndef FTC_TOOLS_RUN_SPAWN_H
#define FTC_TOOLS_RUN_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* Finds cmd like a shell does (as is if it has a '/', else in $PATH) and
 * checks it is executable. Returns 0, or an errno value (ENOENT, EACCES,
 * ENAMETOOLONG) with path unchanged. */
int run_spawn_resolve(const char *cmd, char *path, size_t cap);

typedef struct run_child {
    pid_t pid;  /* also its process group id */
    int out_fd; /* read ends, non-blocking, close-on-exec */
    int err_fd;
    int event_fd; /* the event socket, RUN_EVENT_FD in the child */
} run_child;

/* Starts path with argv and envp (everything allocated by the caller
 * before the call: the child only makes async-signal-safe calls, as the
 * launcher has threads). The child has every signal unblocked and at its
 * default disposition. Returns 0, or an errno value with nothing left
 * open. */
int run_spawn(const char *path, char *const argv[], char *const envp[],
              run_child *out);

#endif
