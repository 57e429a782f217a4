/* Side-channel queueing: liveness frames go ahead of queued p2p data but
 * never into the middle of a frame being written; other control frames
 * keep their place in line. */
#include <string.h>

#include "pg/tcp/tcp_int.h"
#include "testkit.h"

static ftc__outmsg *data_frame(void)
{
    ftc__outmsg *m = ftc__calloc(1, sizeof(*m));
    ftc__pgw_hdr h = {.kind = FTC__PGW_P2P, .len = 1 << 20};
    ftc__pgw_encode(m->hdr, &h);
    m->len = 1 << 20;
    return m;
}

static int kind_of(const ftc__outmsg *m)
{
    return m->hdr[5];
}

static void enqueue(ftc__chan *c, ftc__outmsg *m)
{
    if (c->oq_tail != NULL) {
        c->oq_tail->next = m;
    } else {
        c->oq_head = m;
    }
    c->oq_tail = m;
}

static void pongs_jump_the_queue(void **state)
{
    (void)state;
    ftc__tcp g;
    memset(&g, 0, sizeof(g));
    ftc__chan c;
    memset(&c, 0, sizeof(c));
    c.fd = 0; /* never written here: only queued */
    enqueue(&c, data_frame());
    enqueue(&c, data_frame());
    /* Nothing written yet: the PONG goes first. */
    ftc__chan_queue_ctrl(&g, &c, FTC__PGW_PONG, 7, 0, NULL);
    assert_int_equal(kind_of(c.oq_head), FTC__PGW_PONG);
    /* A frame half written stays first; the PING goes right after it. */
    c.oq_off = 100;
    ftc__chan_queue_ctrl(&g, &c, FTC__PGW_PING, 8, 0, NULL);
    assert_int_equal(kind_of(c.oq_head), FTC__PGW_PONG);
    assert_int_equal(kind_of(c.oq_head->next), FTC__PGW_PING);
    /* An ABORT waits its turn at the end. */
    ftc__chan_queue_ctrl(&g, &c, FTC__PGW_ABORT, 0, FTC_EPEER, "x");
    assert_int_equal(kind_of(c.oq_tail), FTC__PGW_ABORT);
    assert_null(c.oq_tail->next);
    int n = 0;
    for (ftc__outmsg *m = c.oq_head; m != NULL; m = m->next) {
        n++;
    }
    assert_int_equal(n, 5);
    c.oq_off = 0;
    ftc__chan_drop_queue(&c);
    assert_null(c.oq_head);
    assert_null(c.oq_tail);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pongs_jump_the_queue),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
