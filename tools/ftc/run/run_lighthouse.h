/* The job's lighthouse: one started in the launcher's process, or the
 * address the user gave with --lighthouse. */
#ifndef FTC_TOOLS_RUN_LIGHTHOUSE_H
#define FTC_TOOLS_RUN_LIGHTHOUSE_H

#include <stddef.h>

typedef struct run_lighthouse run_lighthouse;

/* With given != NULL, only copies it to addr. Otherwise starts a
 * lighthouse on host (a free port) whose job `job` has min_replicas, with
 * token (NULL: none), and writes its "host:port" to addr. Returns 0, or -1
 * after printing why to stderr. *out is NULL when nothing was started. */
int run_lighthouse_start(run_lighthouse **out, const char *given,
                         const char *host, const char *job, int min_replicas,
                         const char *token, char *addr, size_t cap);
void run_lighthouse_stop(run_lighthouse *lh);

#endif
