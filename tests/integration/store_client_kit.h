/* Shared by the store client's unit, integration and interop tests: a get
 * blocked on another thread, cancelled from the test's thread. */
#ifndef FTC_TESTS_STORE_CLIENT_KIT_H
#define FTC_TESTS_STORE_CLIENT_KIT_H

#include <pthread.h>
#include <stdatomic.h>

#include "ftc/store.h"

typedef struct sck_blocked {
    ftc_store_client *client;
    const char *key;
    pthread_t thread;
    atomic_int done;
    int rc;
} sck_blocked;

/* Starts a thread blocked in get(key) with an infinite timeout. */
void sck_block_in_get(sck_blocked *b, ftc_store_client *client,
                      const char *key);
/* Cancels (through canceller, the client or one of its views) until the
 * get returns, joins the thread and returns the get's result. A cancel
 * that lands before the get started is dropped, hence the repetition. */
int sck_cancel_and_join(sck_blocked *b, ftc_store_client *canceller);

#endif
