/* Server start-up and log capture for the store server's tests. */
#include "store_server_kit.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "testkit.h"

#define MAX_LINES 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char lines[MAX_LINES][320];
static int nlines;

static void capture(void *arg, int level, const char *tag, const char *msg)
{
    (void)arg;
    (void)level;
    pthread_mutex_lock(&lock);
    if (nlines < MAX_LINES) {
        snprintf(lines[nlines++], sizeof(lines[0]), "%s|%s", tag, msg);
    }
    pthread_mutex_unlock(&lock);
    fprintf(stderr, "log: %s: %s\n", tag, msg);
}

int ssk_logged(const char *tag, const char *text)
{
    int n = 0;
    size_t tl = strlen(tag);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nlines; i++) {
        if (strncmp(lines[i], tag, tl) == 0 && lines[i][tl] == '|' &&
            (text == NULL || strstr(lines[i] + tl + 1, text) != NULL)) {
            n++;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

ftc_store_server *ssk_start(const ftc_store_server_opts *opts)
{
    static int installed;
    pthread_mutex_lock(&lock);
    nlines = 0; /* each server starts a fresh log */
    pthread_mutex_unlock(&lock);
    if (!installed) {
        ftc_log_set_handler(capture, NULL);
        installed = 1;
    }
    ftc_store_server_opts o;
    if (opts != NULL) {
        o = *opts;
    } else {
        ftc_store_server_opts_init(&o);
    }
    o.bind_host = "127.0.0.1";
    o.port = 0;
    ftc_store_server *srv = NULL;
    TK_OK(ftc_store_server_create(&o, &srv));
    assert_true(ftc_store_server_port(srv) > 0);
    return srv;
}

ftc_store_server_stats ssk_stats(ftc_store_server *srv)
{
    ftc_store_server_stats st;
    TK_OK(ftc_store_server_stats_get(srv, &st));
    return st;
}

void ssk_stop(ftc_store_server *srv)
{
    ftc_store_server_destroy(srv);
    assert_int_equal(ssk_logged("store.stop", NULL), 0);
    assert_int_equal(ssk_logged("base.never", NULL), 0);
}
