/* A simulated in-process comm for the algo tests: N replicas on N
 * threads, exact deterministic averages, AND commits, injected faults. */
#ifndef FTC_TEST_SIM_COMM_H
#define FTC_TEST_SIM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "ftc/algo.h"

/* Every replica must call start_quorum before any of them proceeds (the
 * quorum is always all replicas); the k-th average a replica issues in a
 * round is matched with the k-th of every other replica; should_commit is
 * a barrier whose decision is the AND of all votes and "no injected
 * failure in this round"; current_step counts a replica's commits. */
typedef struct sim sim;

sim *sim_create(int replicas);
void sim_destroy(sim *s);

/* The comm table of one replica; s must outlive its use. */
ftc_algo_comm sim_comm(sim *s, int rank);

/* Faults, each applied once, to the first quorum round that forms while
 * the committed step (of replica 0) is `step`:
 * - every average of that round fails with FTC_EPEER on every replica,
 *   so every replica votes no;
 * - replica `rank` does not participate: it contributes zeros and the
 *   average divides by the number of participants (a healing replica);
 * - replica `rank` heals from replica 0: every buffer registered by
 *   replica 0 is copied into `rank`'s buffer of the same name, and its
 *   step becomes replica 0's, before start_quorum returns. */
void sim_fail_allreduce_at(sim *s, int64_t step);
void sim_nonparticipant_at(sim *s, int rank, int64_t step);
void sim_heal_at(sim *s, int rank, int64_t step);

/* Makes replica `rank`'s next start_quorum (or should_commit) return
 * `code` at once, without meeting the others: for error paths, in a
 * one-replica simulation. */
void sim_fail_next_quorum(sim *s, int rank, int code);
void sim_fail_next_commit(sim *s, int rank, int code);

/* Replica `rank` restarted: its committed step is 0 again (a fresh
 * manager) until it heals. Call from that replica's thread. */
void sim_restart(sim *s, int rank);

/* Registers (or re-points, by name) a buffer of replica `rank` for
 * healing. Call from that replica's thread or before sim_run. */
void sim_register(sim *s, int rank, const char *name, float *data,
                  size_t count);

/* Runs fn(rank, arg) on one thread per replica and joins them all. */
void sim_run(sim *s, void (*fn)(int rank, void *arg), void *arg);

/* The sizes of the averages replica `rank` issued since its last
 * start_quorum: copies up to max of them into sizes and returns how many
 * there were. Call when the replica threads are idle. */
size_t sim_issued(sim *s, int rank, size_t *sizes, size_t max);

/* The first inconsistency the simulation saw (replicas averaging
 * different lengths, healing buffers that do not match), or NULL. */
const char *sim_error(sim *s);

#endif
