/* The tcp backend inside: channels (one TCP connection each) and the
 * group with its progress engine, which runs each collective's plan
 * (pg/sched/plan.h) over the channels.
 *
 * Threading: one driver at a time runs the engine (the group's progress
 * thread, or a user thread inside ftc_work_wait); everything marked
 * "driver" is touched only by it. Fields marked "mu" are shared with
 * submitting and waiting threads under g->mu. */
#ifndef FTC_PG_TCP_INT_H
#define FTC_PG_TCP_INT_H

#include "pg/pg_int.h"
#include "pg/sched/sched.h"
#include "pg/tcp/protect.h"
#include "pg/tcp/shm.h"
#include "pg/tcp/tcp.h"
#include "pg/tcp/wire.h"

#include <sys/uio.h>

#define FTC__STAGE_CAP (64 * 1024)
/* Payloads at least this large are received straight into their
 * destination instead of through the staging buffer. */
#define FTC__DIRECT_MIN (16 * 1024)
/* After this long without an operation the progress thread watches the
 * group (engine.c, pt_main). */
#define FTC__PG_IDLE_WATCH_MS 10

/* ------------------------------------------------------------- channels */

/* A frame queued on a side channel: control (PING, PONG, ABORT, BYE) or a
 * p2p send. */
typedef struct ftc__outmsg {
    uint8_t hdr[FTC__PGW_HDR];
    const uint8_t *payload;
    size_t len;
    uint8_t *owned;                /* payload the frame owns (ABORT text) */
    ftc__op *send;                 /* p2p send completed once written */
    uint8_t tag[FTC__PROTECT_TAG]; /* protected: made as it goes out */
    struct ftc__outmsg *next;
} ftc__outmsg;

/* A message received on a side channel before its recv was posted. */
typedef struct ftc__unexp {
    int src;
    uint32_t tag;
    uint8_t *data;
    size_t len;
    struct ftc__unexp *next;
} ftc__unexp;

typedef struct ftc__chan {
    int fd;
    int peer;
    int stream;    /* collective stream index; -1 for the side channel */
    char name[96]; /* "rank 3 (127.0.0.1:4567)" */
    bool readable, writable;
    bool eof; /* read the end of the peer's stream */
    bool bye; /* side channel: the peer said it leaves */
    bool hup; /* epoll reported a hang-up or error */
    /* reader */
    uint8_t *stage;
    size_t st_head, st_len;
    bool have_hdr;
    bool matched; /* the header found its destination */
    ftc__pgw_hdr hdr;
    size_t got;   /* payload bytes received of the current message */
    uint8_t *dst; /* where the payload goes; NULL: discard */
    uint8_t *tmp; /* landing buffer of reducing receives */
    size_t tmp_cap;
    /* collective writer */
    size_t send_off; /* bytes of the current send already written */
    uint8_t coll_tag[FTC__PROTECT_TAG]; /* protected: the current send's */
    uint8_t hdrbuf[FTC__PGW_HDR];
    /* side channel */
    ftc__outmsg *oq_head, *oq_tail;
    size_t oq_off;
    ftc__op *rx_recv;   /* posted recv being filled */
    ftc__unexp *rx_unx; /* unexpected message being filled */
    uint64_t p2p_out;   /* p2p messages sent on this channel */
    uint8_t mac[32];    /* set-up: the MAC of the HELLO we sent */
    /* Message protection (protect.h): each direction's key and how many
     * messages went each way; the tags being made of the message being
     * sent (tx_open) and of the one being received. */
    bool protect;
    uint64_t nonce; /* set-up: the nonce of the HELLO we sent */
    uint8_t k_tx[FTC__PROTECT_KEY], k_rx[FTC__PROTECT_KEY];
    uint64_t n_tx, n_rx;
    bool tx_open;
    ftc__protect_mac tx_mac, rx_mac;
    uint8_t rx_tag[FTC__PROTECT_TAG];
    size_t rx_tag_got;
    /* Encrypting (protect too): the ciphertext window of the message being
     * sent (enc_n bytes from offset enc_at of the enc_len-byte payload
     * enc_src, under number enc_num; enc_n 0: none) in a buffer of
     * enc_cap bytes, and how much of the one being received is
     * decrypted. */
    bool encrypt;
    uint8_t *enc;
    size_t enc_cap;
    const void *enc_src;
    uint64_t enc_num;
    size_t enc_len, enc_at, enc_n, dec_got;
    /* A collective channel to a rank of this host: its messages go
     * through shared memory; the connection rings doorbells (shm.h). */
    ftc__shm_lane *lane;
} ftc__chan;

/* ----------------------------------------------------------------- group */

enum { FTC__DRIVER_NONE = 0, FTC__DRIVER_PT = 1, FTC__DRIVER_USER = 2 };

typedef struct ftc__tcp {
    ftc_pg *pg;
    int rank, size, streams;
    uint64_t group_id, epoch;
    bool auth;        /* a token is set: handshakes carry MACs */
    int protect;      /* ftc_pg_protect, resolved; OFF without auth */
    int transport;    /* ftc_pg_transport, resolved */
    uint8_t key[32];  /* derived from the token */
    int64_t spin_ns;  /* most polling before sleeping (0: never) */
    int64_t spin_cur; /* driver: the adaptive window, <= spin_ns */
    int spin_hits, spin_misses, spin_sleeps; /* driver */
    ftc__chan *coll; /* size * streams, by peer * streams + stream */
    ftc__chan *side; /* size, by peer */
    int epfd;
    ftc__event doorbell;
    /* While the mesh is built: what cancels the build (NULL: nothing). */
    const ftc__event *setup_cancel;
    pthread_t pt;
    bool pt_started;

    pthread_mutex_t mu;
    pthread_cond_t user_cv; /* mu: work done, driver released */
    pthread_cond_t pt_cv;   /* mu: the progress thread is needed */
    int driver;             /* mu */
    int nwaiting;           /* mu: threads in user_cv */
    bool pt_sleeping;       /* mu */
    bool pt_idle;           /* progress thread: it drives an idle group (answers
                               probes, hears aborts and dead peers) */
    bool stop;              /* mu */
    atomic_bool stop_req;   /* stop, for the driver's loop */
    atomic_int want;        /* user threads that want to drive */
    atomic_bool abort_req;
    int npending;          /* mu: submitted and not finished */
    atomic_int npending_a; /* npending, for the driver's loop */
    uint64_t coll_seq;     /* mu: last collective sequence number */
    ftc__op *inbox;        /* mu: submitted, not yet taken by the driver */
    ftc__op **inbox_tail;
    ftc_work *cbq;      /* mu: completions whose callback is due */
    atomic_bool cb_due; /* cbq is not empty */
    ftc_work **cbq_tail;
    int failed; /* mu (written by the driver) */
    char fail_msg[FTC__PG_MSG_MAX];
    /* size: the peers this rank holds responsible for the failure (while
     * building the group: for the failed create). Written by the driver
     * before it sets failed, never after: read under mu once failed. */
    bool *blame;
    /* A peer's ABORT, held until the collective channels stop moving
     * (ftc__tcp_apply_held_abort): bytes of the current operation that
     * already arrived are taken first, so an operation the peers finished
     * completes here too. */
    struct {
        bool pending, on_purpose;
        int code, peer;
        bool *blame; /* size, as decoded from the ABORT */
        char msg[FTC__ERR_MSG_MAX];
    } held_abort;
    bool on_purpose; /* driver: the failure began with an ftc_pg_abort */

    /* driver */
    ftc__op *queue; /* collectives after the current one */
    ftc__op **queue_tail;
    ftc__op *cur;
    int64_t cur_start_ns;
    ftc__plan plan;
    ftc__op *posted; /* p2p receives, in post order */
    ftc__op *sends;  /* p2p sends not yet written */
    ftc__unexp *unexp, **unexp_tail;
    size_t unexp_bytes;
    ftc__scratch scratch;   /* the schedules' intermediate results */
    ftc__sched_hosts hosts; /* how the ranks sit on hosts (hosts.c) */
    bool probing;
    int64_t probe_start_ns;
    uint64_t probe_nonce;
    bool *pong;     /* size: answered the current probe */
    ftc__op *done;  /* finished ops, to complete after the pump */
    bool shm_moved; /* a lane moved bytes since the driver last looked */
    int nlanes;     /* collective channels with a lane */
} ftc__tcp;

/* Channel of stream s to peer (the plan's numbering, plan.h). */
static inline int ftc__chan_id(const ftc__tcp *g, int peer, int s)
{
    return ftc__plan_chan_of(peer, s, g->streams);
}

/* ---- engine.c */
int ftc__tcp_engine_start(ftc__tcp *g);
void ftc__tcp_engine_stop(ftc__tcp *g);
int ftc__tcp_submit(void *impl, ftc__op *op);
int ftc__tcp_wait(void *impl, ftc_work *w, ftc__deadline dl);
void ftc__tcp_abort(void *impl);
int ftc__tcp_status(void *impl);
/* Fails the group (driver only): every pending op, then the peers. It
 * blames nobody: for a local error, a send/recv timeout (no probe runs
 * for those), or an abort on purpose (FTC_ECANCELED). */
void ftc__tcp_fail(ftc__tcp *g, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same, blaming peer: its connection broke or closed without BYE, or
 * it broke the protocol. */
void ftc__tcp_fail_peer(ftc__tcp *g, int peer, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The group's blame set, cleared, for a caller that fills it and then
 * calls ftc__tcp_fail_blamed; NULL when the group failed already. */
bool *ftc__tcp_blame_begin(ftc__tcp *g);
/* Fails the group blaming what the caller put in g->blame; on_purpose:
 * the failure began with an ftc_pg_abort (its ABORTs say so). */
void ftc__tcp_fail_blamed(ftc__tcp *g, int code, bool on_purpose,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Corrects blame by the current operation's liveness probe, this rank's
 * own evidence: clears the peers that answered it (alive to this rank,
 * whatever a peer's ABORT said), and marks those other than except that
 * have not, once it has run for at least half its window (a younger
 * probe proves nothing). */
void ftc__tcp_probe_blame(ftc__tcp *g, bool *blame, int except);
/* Fails the group with the held ABORT, if any (side.c). */
void ftc__tcp_apply_held_abort(ftc__tcp *g);
/* The table's failed_peers slot. */
int ftc__tcp_failed_peers(void *impl, int *ranks, int cap);
/* Moves op to the finished list with rc and a message (driver only). */
void ftc__tcp_op_done(ftc__tcp *g, ftc__op *op, int rc, const char *msg);

/* ---- chan.c: non-blocking I/O of one channel (driver only). Return
 * true if anything moved. */
bool ftc__chan_pump_coll(ftc__tcp *g, ftc__chan *c);
bool ftc__chan_pump_side(ftc__tcp *g, ftc__chan *c);
/* Writes what the side channel has queued, without reading. */
void ftc__chan_flush(ftc__tcp *g, ftc__chan *c);
/* Queues a control frame (PING/PONG/ABORT/BYE) on a side channel; an
 * ABORT made here names no ranks. */
void ftc__chan_queue_ctrl(ftc__tcp *g, ftc__chan *c, int kind, uint64_t seq,
                          int code, const char *text);
/* Queues the ABORT of the group's failure: code, the ranks in g->blame
 * (the lowest FTC__PGW_BLAME_MAX) and whether it was on purpose. */
void ftc__chan_queue_abort(ftc__tcp *g, ftc__chan *c, int code,
                           const char *text);
void ftc__chan_close(ftc__chan *c);
/* The iovecs (1 or 2) of an unprotected frame's unsent part: its header
 * and payload after skipping `skip` bytes already written. */
int ftc__frame_iov(struct iovec *iov, const uint8_t *hdr, const void *payload,
                   size_t len, size_t skip);
/* Writes what the socket takes of one frame of a protected channel: the
 * header and payload (encrypting: its ciphertext, made a window at a
 * time), tagged as they go out (no pass over the payload before its first
 * byte leaves), then the tag. *off: the frame's bytes
 * written so far, advanced. Returns the bytes written (0: the socket is
 * full), or -1 when the group failed; *done once the tag is out. */
ssize_t ftc__chan_send_protected(ftc__tcp *g, ftc__chan *c, const uint8_t *hdr,
                                 const void *payload, size_t len,
                                 uint8_t tag[FTC__PROTECT_TAG], size_t *off,
                                 bool *done);
/* Frees every queued side-channel frame. */
void ftc__chan_drop_queue(ftc__chan *c);
/* sendmsg without blocking: bytes written, 0 when the socket is full
 * (writable cleared), -1 when the connection broke (group failed). */
ssize_t ftc__chan_sendv(ftc__tcp *g, ftc__chan *c, struct iovec *iov, int niov);
/* A connection to peer broke: reads what its side channel holds first,
 * so an ABORT it sent before going away gives the real reason. True if
 * the group failed on the way. */
bool ftc__chan_heard_why(ftc__tcp *g, int peer);
/* The peer's end closed (err 0: end of stream) or broke (err: fails the
 * group). Returns false. */
bool ftc__chan_lost(ftc__tcp *g, ftc__chan *c, int err);
/* Parses the next header out of the stage and checks that it comes from
 * this group, this epoch and this peer. exact: read no byte past the
 * header (its payload is large and goes straight to its place). false:
 * more bytes are needed, or the group failed. */
bool ftc__chan_next_header(ftc__tcp *g, ftc__chan *c, bool exact);
/* Moves the current message's payload to c->dst (NULL: drops it), from
 * the stage first, then straight from the socket for large remainders.
 * true once all of it is there. */
bool ftc__chan_take_payload(ftc__tcp *g, ftc__chan *c);

/* Decodes a received header and checks that it comes from this group,
 * this epoch and c's peer. false: the group failed. */
bool ftc__chan_decode_header(ftc__tcp *g, ftc__chan *c,
                             const uint8_t in[FTC__PGW_HDR], ftc__pgw_hdr *h);
/* The header of the current collective's k-th message on a channel. */
void ftc__coll_header(const ftc__tcp *g, uint32_t k, size_t len,
                      uint8_t out[FTC__PGW_HDR]);
/* c's peer closed its end while the current collective still needs c:
 * fails the group with the peer's reason if its side channel has one. */
void ftc__chan_peer_gone(ftc__tcp *g, ftc__chan *c, const ftc__plan_chan *pc);
/* Checks c->hdr against the next receive of the plan on c. false: the
 * message is for a later collective or must wait for a dependency, or it
 * does not fit (the group failed). */
bool ftc__chan_coll_check(ftc__tcp *g, ftc__chan *c, const ftc__plan_chan *pc);

/* ---- shm_lane.c: after the mesh, offers and takes a shared-memory lane
 * on every collective channel to a rank of this host (g->transport). */
int ftc__shm_connect(ftc__tcp *g, ftc__deadline dl);
void ftc__shm_lane_close(ftc__chan *c);
/* The two halves of a lane's set-up, each -1 with why when it fails. The
 * lower rank makes a fresh segment for c (nonce: written inside); the
 * higher maps the one an offer names, after checking every field of it
 * (the path is one of the peer's lane segments, of a lane's size, holding
 * the nonce). */
int ftc__shm_lane_create(ftc__chan *c, uint8_t nonce[FTC__SHM_NONCE], char *why,
                         size_t cap);
int ftc__shm_lane_open(ftc__chan *c, uint32_t pid, int32_t fd, uint64_t ring,
                       const uint8_t nonce[FTC__SHM_NONCE], char *why,
                       size_t cap);
/* ---- shm_ring.c (driver only) */
/* Moves c's messages through its lane; true if anything moved. */
bool ftc__shm_pump(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc);
/* Before the driver sleeps: asks the peers of waiting lanes to ring, then
 * looks once more. true: something moved (do not sleep). */
bool ftc__shm_arm(ftc__tcp *g);

/* ---- tune.c: socket options of a connected channel (non-blocking,
 * NODELAY, buffers, congestion control). FTC_EINVAL when the congestion
 * control named in the options is refused. */
int ftc__chan_tune(ftc__tcp *g, ftc__chan *c);
/* FTC_EINVAL if the congestion control named in o cannot be used. */
int ftc__tcp_check_congestion(const ftc_pg_opts *o);

/* g->hosts from every rank's host key (ftc__pg_host_key; host_keys NULL,
 * or any key 0: unknown, no two-level layout). hosts.c. */
int ftc__tcp_hosts(ftc__tcp *g, const uint64_t *host_keys);

/* ---- p2p.c (driver only) */
/* Queues a send on its side channel or posts a receive. */
void ftc__p2p_take(ftc__tcp *g, ftc__op *op);
/* A queued send was written out. */
void ftc__p2p_sent(ftc__tcp *g, ftc__op *op);
/* Finds where an incoming P2P payload goes (a posted receive, or a new
 * unexpected message within the limits). false: the group failed. */
bool ftc__p2p_match_header(ftc__tcp *g, ftc__chan *c);
/* The P2P payload on c is complete. */
void ftc__p2p_received(ftc__tcp *g, ftc__chan *c);
/* Completes posted receives that an earlier unexpected message fits. */
bool ftc__p2p_match_unexpected(ftc__tcp *g);
/* The pending p2p op with the earliest deadline (NULL if none). */
ftc__op *ftc__p2p_next_deadline(ftc__tcp *g);
void ftc__p2p_fail_all(ftc__tcp *g, int rc, const char *msg);
void ftc__p2p_free(ftc__tcp *g);

/* ---- mesh.c: connect the full mesh (blocking, until dl). chans are the
 * group's arrays; fills fd and name of every channel to every peer. */
int ftc__mesh_connect(ftc__tcp *g, ftc__pg_listener *l,
                      const char *const *addrs, ftc__deadline dl);

#endif
