/* One client connection: reads into a shared buffer while it has no
 * backlog (so idle connections hold no buffer), decides the dialect from
 * the first bytes, decodes and serves requests strictly in order, and
 * parks behind a WAIT/BARRIER while still watching for CANCEL_WAIT. */
#include <stdio.h>
#include <string.h>

#include "store/server/server_int.h"

/* The least a read into a connection's own buffer asks room for; a
 * request whose size is known gets room for all of it at once (its room
 * is held against the total limit from its header on, server_mem.c). */
#define READ_MIN (16u << 10)
/* An emptied input buffer bigger than this is given back (what stays is
 * counted against the total limit). */
#define KEEP_IN FTC__STORE_CONN_FREE
/* A SET value at least this big is received straight into the store's
 * buffer for it instead of through `in` (one copy less). */
#define SINK_MIN (64u << 10)

/* Where a read goes: the server's shared buffer, the connection's own
 * input buffer, or the value of a big SET (c->sink). */
enum { READ_TO_SHARED, READ_TO_IN, READ_TO_SINK };

store_conn *ftc__conn_new(struct ftc_store_server *srv)
{
    store_conn *c = ftc__calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->srv = srv;
    c->dialect = -1;
    c->auth = srv->auth.has_token ? STORE_AUTH_NONE : STORE_AUTH_OK;
    ftc__kv_client_init(&c->kv);
    ftc__list_init(&c->node);
    ftc__list_init(&c->ready_node);
    ftc__list_init(&c->dirty_node);
    ftc__list_init(&c->stranger_node);
    ftc__list_init(&c->host_node);
    ftc__buf_init(&c->in, srv->limits.max_request_bytes + READ_MIN);
    ftc__buf_init(&c->pending.bytes, SIZE_MAX);
    ftc__buf_init(&c->inflight.bytes, SIZE_MAX);
    uv_tcp_init(&srv->loop, &c->tcp);
    c->tcp.data = c;
    snprintf(c->peer, sizeof(c->peer), "?");
    return c;
}

/* Drops a value being received: the request never happened. */
static void drop_sink(store_conn *c)
{
    if (c->sink != NULL) {
        ftc__kv_unreserve(c->srv->kv, c->sink_held);
        ftc__kv_value_unref(c->sink);
        c->sink = NULL;
    }
}

static void on_closed(uv_handle_t *h)
{
    store_conn *c = h->data;
    ftc__out_destroy(&c->pending);
    ftc__out_destroy(&c->inflight);
    ftc__buf_free(&c->in);
    ftc__conn_uncharge(c);
    ftc__free(c);
}

void ftc__conn_close(store_conn *c, int level, const char *tag,
                     const char *reason)
{
    if (c->closing) {
        return;
    }
    c->closing = 1;
    if (tag != NULL) {
        FTC_LOG_AT(level, tag, "client %s: %s; closing its connection", c->peer,
                   reason);
    }
    drop_sink(c);
    ftc__kv_client_forget(c->srv->kv, &c->kv);
    if (ftc__list_linked(&c->node)) {
        ftc__list_remove(&c->node);
        c->srv->live.connections--;
    }
    if (ftc__list_linked(&c->ready_node)) {
        ftc__list_remove(&c->ready_node);
    }
    if (ftc__list_linked(&c->dirty_node)) {
        ftc__list_remove(&c->dirty_node);
    }
    if (ftc__list_linked(&c->stranger_node)) {
        ftc__list_remove(&c->stranger_node);
    }
    ftc__store_hosts_remove(c);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void protocol_error(store_conn *c, const char *tag, const char *why)
{
    c->srv->live.protocol_errors++;
    ftc__conn_close(c, FTC_LOG_WARN, tag, why);
}

static void set_reading(store_conn *c, int on);

/* Whether to read from the connection: not while its replies are not
 * being read, nor while it is parked with enough input held. */
static int wants_input(const store_conn *c)
{
    return !ftc__conn_output_full(c) &&
           !(c->parked && ftc__buf_size(&c->in) >= FTC__STORE_PARKED_INPUT);
}

/* Serves the held input (in on_check) and reads again, if it may. */
static void resume(store_conn *c)
{
    if (c->closing || c->parked || ftc__conn_output_full(c)) {
        return;
    }
    if (!ftc__list_linked(&c->ready_node)) {
        ftc__list_push_back(&c->srv->ready, &c->ready_node);
        ftc__server_kick(c->srv);
    }
    set_reading(c, 1);
}

void ftc__conn_unpark(store_conn *c, uint8_t reply)
{
    c->parked = 0;
    if (reply == FTC__WAIT_STOP_WAITING) {
        ftc__store_reply_done(c);
    } else {
        ftc__out_u8(c, reply);
    }
    resume(c);
}

void ftc__conn_output_drained(store_conn *c)
{
    if (!c->reading) {
        resume(c);
    }
}

/* Serves the complete requests in p[0, n) in order until the input runs
 * out, one parks the connection, or the connection closes. Returns the
 * bytes consumed. */
static size_t run(store_conn *c, const uint8_t *p, size_t n)
{
    struct ftc_store_server *srv = c->srv;
    size_t off = 0;
    while (!c->closing && !c->parked && !ftc__conn_output_full(c)) {
        if (c->dialect < 0) {
            int d = ftc__wire_detect(p + off, n - off);
            if (d < 0) {
                c->need = 5;
                break;
            }
            c->dialect = d;
            ftc__wire_decoder_init(&c->dec, d);
        }
        ftc__wire_req req;
        size_t need;
        int rc = ftc__wire_decode(&c->dec, p + off, n - off, &srv->limits, &req,
                                  &need);
        if (rc == FTC__WIRE_MORE) {
            /* Refused at its query byte or key, not after its body
             * arrived; and held against the total limit from the
             * header that announces its size. */
            if (c->auth != STORE_AUTH_OK &&
                ftc__store_auth_refuse_early(c, p + off, need)) {
                break;
            }
            ftc__conn_hold_request(c, need);
            break;
        }
        if (rc < 0) {
            protocol_error(c, c->dec.tag, ftc_last_error());
            break;
        }
        c->need = 0;
        srv->live.requests++;
        off += req.size;
        ftc__store_dispatch(c, &req);
        if (c->parked) {
            ftc__wire_decoder_init(&c->look, c->dialect);
            c->look_off = 0;
        }
    }
    return off;
}

/* While parked, scans the buffered requests for a CANCEL_WAIT: it is acted
 * on at once (the parked WAIT is answered WAIT_CANCELED and the cancel
 * itself is removed), while everything before it keeps its turn. Only 2.x
 * has CANCEL_WAIT. */
static void look_for_cancel(store_conn *c)
{
    if (c->dialect != FTC__WIRE_V2) {
        return;
    }
    uint8_t *p = ftc__buf_begin(&c->in);
    size_t n = ftc__buf_size(&c->in);
    while (c->parked && !c->closing && c->look_off < n) {
        ftc__wire_req req;
        size_t need;
        int rc = ftc__wire_decode(&c->look, p + c->look_off, n - c->look_off,
                                  &c->srv->limits, &req, &need);
        if (rc == FTC__WIRE_MORE) {
            return;
        }
        if (rc < 0) {
            protocol_error(c, c->look.tag, ftc_last_error());
            return;
        }
        if (req.op == FTC__OP_CANCEL_WAIT) {
            memmove(p + c->look_off, p + c->look_off + 1, n - c->look_off - 1);
            c->in.len--;
            c->srv->live.requests++;
            ftc__kv_cancel_wait(c->srv->kv, &c->kv);
            ftc__conn_unpark(c, FTC__WAIT_CANCELED);
            return;
        }
        c->look_off += req.size;
    }
}

/* When `in` ends with the head of a big SET, moves the value bytes that
 * came with it into a buffer of the value's full size, where the rest will
 * be read. The store's total limit is checked (and the room held) before
 * that buffer exists; when it does not fit or memory is short, the request
 * takes the ordinary path and fails there as any SET would. */
static void start_sink(store_conn *c)
{
    ftc__wire_str key;
    size_t off;
    uint64_t len;
    uint8_t *p = ftc__buf_begin(&c->in);
    if (c->sink != NULL || c->parked || c->dialect < 0 ||
        !ftc__wire_pending_set(&c->dec, p, &key, &off, &len) ||
        len < SINK_MIN) {
        return;
    }
    if (c->auth != STORE_AUTH_OK &&
        !ftc__store_auth_key_open(&c->srv->auth, key)) {
        ftc__store_auth_refuse_key(c, key);
        return;
    }
    /* The request's room moves from `in` to the value's reservation. */
    size_t need = c->need;
    c->need = 0;
    ftc__conn_account(c);
    uint64_t held;
    ftc__kv_value *v = NULL;
    if (ftc__kv_reserve(c->srv->kv, key.len, (size_t)len, &held) == 0) {
        v = ftc__kv_value_alloc((size_t)len);
        if (v == NULL) {
            ftc__kv_unreserve(c->srv->kv, held);
        }
    }
    if (v == NULL) {
        c->need = need;
        ftc__conn_account(c);
        return;
    }
    size_t have = ftc__buf_size(&c->in) - off;
    memcpy(v->data, p + off, have);
    c->in.len -= have;
    c->sink = v;
    c->sink_got = have;
    c->sink_held = held;
}

/* The whole value of a big SET arrived: serve the SET with it and drop its
 * head from `in`. */
static void finish_sink(store_conn *c)
{
    ftc__wire_str key;
    size_t off;
    uint64_t len;
    uint8_t *p = ftc__buf_begin(&c->in);
    ftc__kv_value *v = c->sink;
    int ok = ftc__wire_pending_set(&c->dec, p, &key, &off, &len);
    if (FTC_NEVER(!ok || off != ftc__buf_size(&c->in) || len != v->len)) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.sink", "lost its request");
        return;
    }
    ftc__kv_unreserve(c->srv->kv, c->sink_held);
    c->sink = NULL;
    c->srv->live.requests++;
    ftc__store_set_value(c, key, v);
    ftc__buf_consume(&c->in, off);
    ftc__wire_decoder_init(&c->dec, c->dialect);
    c->need = 0;
}

/* After new input: scan ahead if parked, apply back-pressure to a parked
 * connection that keeps sending or one that does not read its replies,
 * and give back a big emptied buffer. */
static void after_input(store_conn *c)
{
    if (c->closing) {
        return;
    }
    if (c->parked) {
        look_for_cancel(c);
    } else {
        start_sink(c);
    }
    if (!wants_input(c)) {
        set_reading(c, 0);
    }
    if (ftc__buf_size(&c->in) == 0 && c->in.cap > KEEP_IN) {
        ftc__buf_free(&c->in);
    }
    ftc__conn_account(c);
}

void ftc__conn_process(store_conn *c)
{
    if (c->closing) {
        return;
    }
    size_t used = run(c, ftc__buf_begin(&c->in), ftc__buf_size(&c->in));
    if (c->closing) {
        return;
    }
    ftc__buf_consume(&c->in, used);
    after_input(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    store_conn *c = h->data;
    (void)suggested;
    size_t have = ftc__buf_size(&c->in);
    if (c->sink != NULL) {
        /* Exactly the rest of the value: what follows is the next
         * request's, read into the other buffers. */
        c->read_to = READ_TO_SINK;
        buf->base = (char *)c->sink->data + c->sink_got;
        buf->len = c->sink->len - c->sink_got;
        return;
    }
    if (!c->parked && have == 0) {
        c->read_to = READ_TO_SHARED;
        buf->base = (char *)c->srv->rbuf;
        buf->len = FTC__STORE_RBUF;
        return;
    }
    c->read_to = READ_TO_IN;
    /* The rest of a request whose size is known, in one buffer of exactly
     * its size (held already); else a small read. */
    int exact = c->need > have + READ_MIN;
    size_t want = exact ? c->need - have : READ_MIN;
    if (want > c->in.max - have) {
        want = c->in.max - have;
    }
    if (want == 0 || (exact ? ftc__buf_reserve_exact(&c->in, want)
                            : ftc__buf_reserve(&c->in, want)) != 0) {
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    buf->base = (char *)c->in.data + c->in.len;
    buf->len = c->in.cap - c->in.len;
}

/* Takes nread bytes that arrived in buf (as on_alloc chose) and serves
 * the requests they complete. */
static void take_input(store_conn *c, ssize_t nread, const uv_buf_t *buf)
{
    if (nread < 0) {
        if (nread == UV_ENOBUFS) {
            ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem",
                            "no memory for its input");
        } else {
            ftc__conn_close(c, FTC_LOG_DEBUG, "store.eof",
                            uv_strerror((int)nread));
        }
        return;
    }
    if (c->read_to == READ_TO_SINK) {
        c->sink_got += (size_t)nread;
        if (c->sink_got == c->sink->len) {
            finish_sink(c);
            ftc__conn_process(c);
        }
        return;
    }
    if (c->read_to == READ_TO_IN) {
        c->in.len += (size_t)nread;
        ftc__conn_process(c);
        return;
    }
    /* Straight from the shared buffer: only a partial request (or input
     * behind a parked WAIT) is copied into the connection's own buffer. */
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t used = run(c, p, (size_t)nread);
    if (c->closing) {
        return;
    }
    if (used < (size_t)nread &&
        ftc__buf_append(&c->in, p + used, (size_t)nread - used) != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.nomem",
                        "no memory for its input");
        return;
    }
    after_input(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    store_conn *c = s->data;
    if (nread == 0 || c->closing) {
        return;
    }
    take_input(c, nread, buf);
    /* This read's replies go out now, not with the iteration's batch: the
     * client can go on while the loop serves the other connections that
     * were ready (on a few cores, the client may run meanwhile). Replies
     * to clients that another connection's write released still wait
     * for the end of the iteration, one write each. */
    if (!c->closing && ftc__list_linked(&c->dirty_node)) {
        ftc__list_remove(&c->dirty_node);
        ftc__out_flush(c);
    }
}

static void set_reading(store_conn *c, int on)
{
    if (c->closing || c->reading == on) {
        return;
    }
    int rc = on ? uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read)
                : uv_read_stop((uv_stream_t *)&c->tcp);
    if (rc != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.read", uv_strerror(rc));
        return;
    }
    c->reading = on;
}

void ftc__conn_start(store_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    const struct sockaddr *peer = NULL;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        peer = (const struct sockaddr *)&ss;
        ftc__addr_format(peer, c->peer, sizeof(c->peer));
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
        /* A client on this host: reno, not the system's pacing default
         * (docs/decisions.md). */
        ftc__sock_reno_if_same_host(fd);
    }
    /* Notices peers that vanished without a FIN (a crashed host), so
     * their parked waits and buffers do not stay forever. */
    uv_tcp_keepalive(&c->tcp, 1, 60);
    ftc__list_push_back(&c->srv->conns, &c->node);
    c->srv->live.connections++;
    if (c->auth != STORE_AUTH_OK) {
        ftc__store_auth_greet(c, peer);
    }
    set_reading(c, 1);
}
