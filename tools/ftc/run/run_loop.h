/* The launcher's event loop: one thread polls a signalfd (SIGINT,
 * SIGTERM, SIGCHLD) and every rank's output pipes, and wakes for the
 * job's timers. */
#ifndef FTC_TOOLS_RUN_LOOP_H
#define FTC_TOOLS_RUN_LOOP_H

#include <signal.h>

#include "run/run_job.h"

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD (the loop takes them from a
 * signalfd) and ignores SIGPIPE. Call before any thread starts, so every
 * thread inherits the mask; old receives the previous mask. */
void run_loop_block_signals(sigset_t *old);

/* Runs the job until every rank is reaped. Returns 0, or -1 after
 * printing why (the signalfd or poll failed; ranks were killed). */
int run_loop(run_job *job);

#endif
