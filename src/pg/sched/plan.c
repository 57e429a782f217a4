/* The plan of a collective (plan.h). */
#include "pg/sched/plan.h"

#include <string.h>

#include "base/base_int.h"

int ftc__plan_init(ftc__plan *p, int nch)
{
    memset(p, 0, sizeof(*p));
    p->ch = ftc__calloc((size_t)nch, sizeof(*p->ch));
    p->active = ftc__calloc((size_t)nch, sizeof(*p->active));
    if (p->ch == NULL || p->active == NULL) {
        ftc__plan_free(p);
        return ftc__seterr(FTC_ENOMEM, "plan: out of memory");
    }
    p->nch = nch;
    return 0;
}

void ftc__plan_free(ftc__plan *p)
{
    for (int i = 0; p->ch != NULL && i < p->nch; i++) {
        ftc__free(p->ch[i].sends);
        ftc__free(p->ch[i].recvs);
    }
    ftc__free(p->ch);
    ftc__free(p->active);
    memset(p, 0, sizeof(*p));
}

void ftc__plan_reset(ftc__plan *p, int dtype, int op, int size)
{
    for (int i = 0; i < p->nactive; i++) {
        ftc__plan_chan *c = &p->ch[p->active[i]];
        c->nsends = c->nrecvs = c->sent = c->recvd = 0;
        c->tmp_need = 0;
        c->active = false;
    }
    p->nactive = 0;
    p->pending = 0;
    p->error = 0;
    p->dtype = dtype;
    p->op = op;
    p->size = size;
}

/* Appends x to a growable list; returns its index or UINT32_MAX. */
static uint32_t push(ftc__plan *p, ftc__xfer **list, uint32_t *n, uint32_t *cap,
                     const ftc__xfer *x)
{
    if (*n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 16;
        ftc__xfer *nl = ftc__realloc(*list, (size_t)ncap * sizeof(**list));
        if (nl == NULL) {
            p->error = ftc__seterr(FTC_ENOMEM, "plan: out of memory");
            return UINT32_MAX;
        }
        *list = nl;
        *cap = ncap;
    }
    (*list)[*n] = *x;
    return (*n)++;
}

static ftc__plan_chan *use(ftc__plan *p, int chan)
{
    ftc__plan_chan *c = &p->ch[chan];
    if (!c->active) {
        c->active = true;
        p->active[p->nactive++] = chan;
    }
    p->pending++;
    return c;
}

uint32_t ftc__plan_send(ftc__plan *p, int chan, const void *src, size_t len,
                        ftc__dep dep)
{
    ftc__plan_chan *c = use(p, chan);
    ftc__xfer x = {.buf = (uint8_t *)src,
                   .len = len,
                   .dep_chan = dep.chan,
                   .dep_count = dep.count,
                   .dep_send = dep.send};
    return push(p, &c->sends, &c->nsends, &c->sends_cap, &x);
}

uint32_t ftc__plan_recv(ftc__plan *p, int chan, void *dst, size_t len,
                        ftc__dep dep)
{
    return ftc__plan_recv_reduce(p, chan, dst, NULL, len, dep, false);
}

uint32_t ftc__plan_recv_reduce(ftc__plan *p, int chan, void *dst, const void *a,
                               size_t len, ftc__dep dep, bool avg)
{
    ftc__plan_chan *c = use(p, chan);
    ftc__xfer x = {.buf = dst,
                   .a = a,
                   .len = len,
                   .dep_chan = dep.chan,
                   .dep_count = dep.count,
                   .dep_send = dep.send,
                   .avg = avg};
    if (a != NULL && len > c->tmp_need) {
        c->tmp_need = len;
    }
    return push(p, &c->recvs, &c->nrecvs, &c->recvs_cap, &x);
}

bool ftc__xfer_ready(const ftc__plan *p, const ftc__xfer *x)
{
    if (x->dep_chan < 0) {
        return true;
    }
    const ftc__plan_chan *d = &p->ch[x->dep_chan];
    return (x->dep_send ? d->sent : d->recvd) >= x->dep_count;
}
