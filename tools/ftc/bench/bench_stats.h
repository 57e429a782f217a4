/* Shared by the ftc bench subcommands: percentiles of latency samples, the
 * spawning of worker processes that re-run this binary, and room for the
 * descriptors of many clients. */
#ifndef FTC_TOOLS_BENCH_STATS_H
#define FTC_TOOLS_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The p-th percentile (0..100, nearest rank) of n samples, sorting them in
 * place. 0 when n is 0. */
double bench_percentile(double *samples, size_t n, double p);

/* Starts "<this ftc binary> args..." as a child; returns its pid or -1. */
pid_t bench_spawn_self(char *const args[]);

/* Waits for every pid until timeout_ms; kills the rest. Returns how many
 * did not exit with status 0. */
int bench_wait_all(const pid_t *pids, int n, int64_t timeout_ms);

/* Returns 0 when need descriptors fit under RLIMIT_NOFILE (which main()
 * lifted to the hard limit: every client is a socket, and one more in an
 * embedded server), else -1 after saying so on stderr. */
int bench_fd_room(long need);

#endif
