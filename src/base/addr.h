/* Address parsing and formatting: "host:port", "[v6]:port", "v6", "host". */
#ifndef FTC_BASE_ADDR_H
#define FTC_BASE_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

#define FTC_HOST_MAX 256

/* Splits text into host and port. A bare host (or a bare IPv6 literal with
 * several colons) gets default_port; default_port < 0 makes the port
 * mandatory. Returns 0 or FTC_EINVAL with a message naming the problem. */
int ftc__addr_split(const char *text, int default_port, char *host,
                    size_t host_cap, int *port);

/* Joins a host and a port as "host:port", an IPv6 literal as "[v6]:port"
 * (what ftc__addr_split reads back). */
void ftc__addr_join(const char *host, int port, char *out, size_t cap);

/* Formats a socket address as "1.2.3.4:80" or "[::1]:80". */
void ftc__addr_format(const struct sockaddr *sa, char *out, size_t cap);

#endif
