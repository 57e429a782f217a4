/* The Baby backend inside libftc: a group whose inner backend ("tcp",
 * "xccl", ...) runs in a child process ftc starts, so that killing the
 * child ends whatever the inner library is stuck in. baby.c is the
 * parent's side (the ftc_pg_backend table), child.c the child's,
 * baby_shm.h what they share. */
#ifndef FTC_PG_BABY_H
#define FTC_PG_BABY_H

#include <sys/types.h>

#include "base/clock.h"
#include "ftc/plugin/backend.h"

/* "baby-": the backend names this module serves. */
#define FTC__BABY_PREFIX "baby-"
/* The child's descriptor of its socket to the parent. */
#define FTC__BABY_CHILD_FD 3

/* The table of "baby-<inner>": a copy of ftc__baby_backend named name,
 * with the capabilities of the inner table (the cpu device only). */
void ftc__baby_table(const char *name, const ftc_pg_backend *inner,
                     ftc_pg_backend *out);
extern const ftc_pg_backend ftc__baby_backend;

/* The helper binary's path into out: FTC_PG_BABY_HELPER, else
 * <libdir>/../libexec/ftc/ftc-baby beside the library, else the build
 * tree's. FTC_ENOTSUP naming the places when none is executable. */
int ftc__baby_helper(char *out, size_t cap);
/* Spawns path with fd as its FTC__BABY_CHILD_FD, from the process's
 * spawning thread (spawn.c says why). label is its argv[1], which the
 * child ignores: ps then shows which group a child serves (its inner
 * group's prefix). */
int ftc__baby_spawn(const char *path, const char *label, int fd, pid_t *pid);

/* The helper's whole program: serves one group over FTC__BABY_CHILD_FD.
 * Returns the exit status. */
int ftc__baby_child_main(void);

/* Messages on the set-up socket (SOCK_SEQPACKET): one message of exactly
 * len bytes with up to nfds descriptors, within the deadline. */
int ftc__baby_send(int sock, const void *msg, size_t len, const int *fds,
                   int nfds, ftc__deadline dl);
/* Receives one message of exactly len bytes and exactly nfds descriptors
 * (close-on-exec): FTC_ECLOSED when the other end is gone, FTC_EPROTO for
 * another length or count (descriptors received are closed),
 * FTC_ECANCELED as soon as cancel_fd (-1: none) is readable. */
int ftc__baby_recv(int sock, void *msg, size_t len, int *fds, int nfds,
                   ftc__deadline dl, int cancel_fd);

/* For tests: the pid of a Baby group's child (-1: not a Baby group, or
 * the child was reaped). */
pid_t ftc__baby_child_pid(ftc_pg *pg);
/* For tests: the bytes a Baby group copied in and out of its arena (0:
 * not a Baby group); buffers in the shared heap add nothing. */
uint64_t ftc__baby_copied_bytes(ftc_pg *pg);

#endif
