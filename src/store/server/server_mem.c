/* A connection's memory, counted in max_total_bytes with the store's data:
 * its input buffer (or, from the moment a request's header announces its
 * size, the whole request) and its queued replies. Work that would pass
 * the limit is refused when it is announced, before its bytes arrive or
 * its reply is built, by closing that connection alone. A connection whose
 * replies are not being read stops being served and read
 * (docs/decisions.md, "The store counts its buffers"). */
#include <inttypes.h>
#include <stdio.h>

#include "store/server/server_int.h"

static uint64_t batch_footprint(const store_batch *b)
{
    return (uint64_t)b->bytes.cap + (uint64_t)b->cap_segs * sizeof(store_seg);
}

/* The input buffer, or the request it is receiving when that needs more.
 * A big SET's value has its own reservation in the store (sink_held). */
static uint64_t input_footprint(const store_conn *c, size_t need)
{
    return c->sink == NULL && need > c->in.cap ? need : c->in.cap;
}

static uint64_t footprint(const store_conn *c, size_t need)
{
    return input_footprint(c, need) + batch_footprint(&c->pending) +
           batch_footprint(&c->inflight);
}

void ftc__conn_account(store_conn *c)
{
    uint64_t now = footprint(c, c->need);
    ftc__kv *kv = c->srv->kv;
    if (now > c->charged) {
        ftc__kv_charge(kv, now - c->charged);
    } else {
        ftc__kv_uncharge(kv, c->charged - now);
    }
    c->charged = now;
}

void ftc__conn_uncharge(store_conn *c)
{
    ftc__kv_uncharge(c->srv->kv, c->charged);
    c->charged = 0;
}

/* Whether the connection may grow from its current charge to `to` bytes:
 * always within FTC__STORE_CONN_FREE (so a full store still answers small
 * requests, and reads go on), else only while the total limit allows. On
 * refusal closes the connection naming what was refused. */
static int may_grow(store_conn *c, uint64_t to, const char *what)
{
    if (to <= c->charged || to <= FTC__STORE_CONN_FREE ||
        ftc__kv_afford(c->srv->kv, to - c->charged) == 0) {
        return 1;
    }
    char why[320];
    snprintf(why, sizeof(why), "%s of %" PRIu64 " B refused: %s", what,
             to - c->charged, ftc_last_error());
    c->srv->live.protocol_errors++;
    ftc__conn_close(c, FTC_LOG_WARN, "store.full", why);
    return 0;
}

int ftc__conn_hold_request(store_conn *c, size_t need)
{
    ftc__conn_account(c);
    if (!may_grow(c, footprint(c, need), "a request")) {
        return 0;
    }
    c->need = need;
    ftc__conn_account(c);
    return 1;
}

int ftc__conn_hold_output(store_conn *c, uint64_t n)
{
    ftc__conn_account(c);
    return may_grow(c, c->charged + n, "a reply");
}

int ftc__conn_output_full(const store_conn *c)
{
    return c->pending.total + c->inflight_left >= FTC__STORE_OUTPUT_PAUSE;
}
