/* Library threads: named, and with every signal blocked so signals reach
 * the application's own threads. */
#ifndef FTC_BASE_THREAD_H
#define FTC_BASE_THREAD_H

#include <pthread.h>

int ftc__thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
                      void *arg);

#endif
