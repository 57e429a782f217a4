/* Holding a tcp group's engine still from a test thread, to look at its
 * state or to line up what arrives before it runs again. */
#ifndef FTC_TEST_ENGINE_HOLD_H
#define FTC_TEST_ENGINE_HOLD_H

#include "pg/tcp/tcp_int.h"

/* Stops g's engine: with a user thread counted in want (as
 * ftc__tcp_wait counts itself) its progress thread does not drive, and
 * this returns once nobody does. Until engine_release, the state the
 * engine keeps may be read under g->mu. */
void engine_hold(ftc__tcp *g);

/* Marks what a wake-up would (the n channels readable) and lets the
 * engine go (engine_hold). */
void engine_release(ftc__tcp *g, ftc__chan *const *readable, int n);

#endif
