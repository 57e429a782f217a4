/* The one-line job status: time, step, loss, quorum, groups up, failures
 * and recoveries. */
#ifndef FTC_TOOLS_RUN_STATUS_H
#define FTC_TOOLS_RUN_STATUS_H

#include <stddef.h>
#include <stdint.h>

struct run_job;

void run_status_format(const struct run_job *job, int64_t now_ms, char *buf,
                       size_t cap);

#endif
