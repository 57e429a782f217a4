/* Shared by the store server's integration and interop tests: start a
 * server with asserted success, read its stats, and capture its log lines
 * so tests can assert the warnings a hostile client causes. */
#ifndef FTC_TESTS_STORE_SERVER_KIT_H
#define FTC_TESTS_STORE_SERVER_KIT_H

#include "ftc/store.h"

/* Starts a server on 127.0.0.1 port 0 (opts may be NULL; its bind_host and
 * port are overridden), installs the log capture and empties it. */
ftc_store_server *ssk_start(const ftc_store_server_opts *opts);
ftc_store_server_stats ssk_stats(ftc_store_server *srv);
/* Stops the server and asserts the stop was clean (uv_loop_close returned
 * 0) and no "impossible" branch was hit while it ran. */
void ssk_stop(ftc_store_server *srv);
/* How many captured log lines have tag and contain text (NULL: any). */
int ssk_logged(const char *tag, const char *text);

#endif
