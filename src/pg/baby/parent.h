/* A Baby group's parent side, shared by baby.c (the table), watch.c (the
 * thread that reads completions and watches the child) and arena.c. */
#ifndef FTC_PG_BABY_PARENT_H
#define FTC_PG_BABY_PARENT_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "pg/baby/baby.h"
#include "pg/baby/baby_shm.h"
#include "pg/baby/heap.h"
#include "pg/baby/regions.h"
#include "pg/pg_int.h"
#include "store/client/endpoint.h"

/* One request between submit and completion. */
typedef struct baby_op {
    ftc__op *op;
    ftc__baby_req req;
    uint64_t off, len; /* its arena region (len 0: none) */
    size_t recv_bytes; /* copied back to desc.recv on success */
    bool coll;         /* a collective (completes in order) */
    bool pushed;       /* in the request ring */
    struct baby_op *next;
} baby_op;

typedef struct baby {
    ftc_pg *group;
    char name[FTC__PG_BACKEND_NAME_MAX]; /* "baby-tcp", for messages */
    int rank, size;
    pid_t pid;    /* the child; -1 once reaped */
    int status;   /* its wait status once reaped */
    int sock;     /* the set-up socket: the child's exit hangs it up */
    int efd_req;  /* the child's eventfd (request ring) */
    int efd_done; /* ours (completion ring) */
    ftc__baby_shm *shm;
    uint8_t *arena;
    ftc__baby_heap *heap;   /* the process's, mapped by the child too */
    ftc__baby_end req_end;  /* we produce */
    ftc__baby_end done_end; /* we consume (watcher thread only) */
    int64_t hang_ns;
    ftc__store_endpoint store; /* for the children of subgroups */
    pthread_t watcher;
    pthread_mutex_t mu;   /* everything below */
    pthread_cond_t cv;    /* stop, for a watcher with nothing to watch */
    baby_op *head, *tail; /* pending, in id order */
    uint64_t next_id;
    uint32_t inflight; /* pushed and not completed (<= FTC__BABY_SLOTS) */
    /* Works taken off the list and being completed by some thread: a
     * failure (abort) returns only when none is left, so no completion
     * writes into a caller's buffer after ftc_pg_abort returned. */
    int completing;
    ftc__baby_regions regions; /* of the arena */
    _Atomic uint64_t copied;   /* bytes staged in and out (tests) */
    int failed;                /* 0, or the latched failure (message in msg) */
    char msg[FTC__PG_MSG_MAX];
    bool killed; /* SIGKILL sent */
    bool stop;
    /* The failure watch (peers.c): its own connections to the store (the
     * get blocks one), and the key every member watches. */
    ftc_store_client *peers_wait, *peers_wait_conn;
    ftc_store_client *peers_tell, *peers_tell_conn;
    char peers_key[FTC__STORE_VIEW_MAX + 16];
    pthread_t peers_thread;
    bool peers_started, peers_stop, peers_done;
} baby;

/* The table's create (create.c), and what undoes it: kills and reaps a
 * child, stops the failure watch, unmaps, closes, frees. */
int ftc__baby_create(const ftc_pg_backend_create_args *a, void **impl);
void ftc__baby_release(baby *b);

/* The watcher thread (watch.c). */
void *ftc__baby_watch(void *arg);
/* Pushes the requests not yet in the ring while there is room (mu held). */
void ftc__baby_pump(baby *b);
/* How ftc__baby_fail fails the group. */
enum {
    FTC__BABY_TELL = 0,      /* kill the child, tell the other members */
    FTC__BABY_SILENT = 1,    /* kill the child (a member told us) */
    FTC__BABY_KEEP_CHILD = 2 /* a destroy: the child leaves on its own */
};
/* Fails the group: latches rc and msg (the first failure wins), acts on
 * the child and the members as how says, completes every pending request
 * with rc and the latched message. Takes mu. */
void ftc__baby_fail(baby *b, int rc, const char *msg, int how);
/* The failure watch (peers.c): start it on "<prefix>/failed" once the
 * group exists; tell the others this member failed (not under mu); stop
 * it and close its connections (close alone for a watch that never
 * started). */
int ftc__baby_peers_start(baby *b, const char *prefix);
void ftc__baby_peers_tell(baby *b, const char *msg);
void ftc__baby_peers_stop(baby *b);
void ftc__baby_peers_close(baby *b);

/* "exited with status 3", "was killed by signal 9 (Killed)". */
void ftc__baby_describe_status(int status, char *out, size_t cap);

#endif
