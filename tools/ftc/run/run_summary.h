/* The end-of-job summary: a table for people on stdout and, with
 * --summary-json, the same facts as JSON (docs/operations.md). */
#ifndef FTC_TOOLS_RUN_SUMMARY_H
#define FTC_TOOLS_RUN_SUMMARY_H

#include "run/run_job.h"

void run_summary_print(const run_job *job);

/* Writes the JSON summary to path (via a temporary file and rename, so a
 * reader never sees half of it). Returns 0, or -1 after printing why. */
int run_summary_write_json(const run_job *job, const char *path);

#endif
