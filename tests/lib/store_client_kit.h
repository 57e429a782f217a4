/* Shared by the store client's unit, integration and interop tests: value
 * assertions, counters, and a call (a get) blocked on another thread,
 * cancelled from the test's thread. */
#ifndef FTC_TESTS_STORE_CLIENT_KIT_H
#define FTC_TESTS_STORE_CLIENT_KIT_H

#include <pthread.h>
#include <stdatomic.h>

#include "ftc/store.h"

#include <stddef.h>
#include <stdint.h>

/* Asserts that get(key) returns exactly want (want_len bytes; the value
 * buffer is non-NULL even when empty). */
void sck_expect_value(ftc_store_client *c, const char *key, const void *want,
                      size_t want_len, int64_t timeout_ms);
/* The same for a NUL-terminated want. */
void sck_expect_str(ftc_store_client *c, const char *key, const char *want,
                    int64_t timeout_ms);
/* Connects to addr in dialect with a connect timeout of tk_ms(30000);
 * NULL on failure (usable in child processes: no assertion). */
ftc_store_client *sck_connect(const char *addr, int dialect);

/* Counters: requests the server has taken (a parked WAIT counts), and a
 * client's writes (requests or pipelines sent) and TCP connects. */
uint64_t sck_requests(ftc_store_server *srv);
uint64_t sck_writes(ftc_store_client *c);
uint64_t sck_connects(ftc_store_client *c);

/* Asserts that set(key, v) succeeds. */
void sck_set_str(ftc_store_client *c, const char *key, const char *v,
                 int64_t timeout_ms);

typedef struct sck_blocked {
    ftc_store_client *client;
    const char *key;
    int (*call)(ftc_store_client *c, const char *key);
    pthread_t thread;
    atomic_int done;
    int rc;
} sck_blocked;

/* Starts a thread blocked in call(client, key). */
void sck_block_in(sck_blocked *b, ftc_store_client *client, const char *key,
                  int (*call)(ftc_store_client *c, const char *key));
/* Starts a thread blocked in get(key) with an infinite timeout. */
void sck_block_in_get(sck_blocked *b, ftc_store_client *client,
                      const char *key);
/* Cancels (through canceller, the client or one of its views) until the
 * get returns, joins the thread and returns the get's result. A cancel
 * that lands before the get started is dropped, hence the repetition. */
int sck_cancel_and_join(sck_blocked *b, ftc_store_client *canceller);

#endif
