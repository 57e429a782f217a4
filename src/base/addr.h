/* Address parsing and formatting: "host:port", "[v6]:port", "v6", "host". */
#ifndef FTC_BASE_ADDR_H
#define FTC_BASE_ADDR_H

#include <stdbool.h>
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

/* Whether every address host resolves to is a loopback one (127/8, ::1,
 * IPv4-mapped 127/8): traffic to it never leaves this host. false for an
 * empty host, "*" and a name that does not resolve. */
bool ftc__addr_loopback_only(const char *host);
/* The same, counting the addresses of this host's interfaces too: what is
 * sent to them stays inside this host (in its network namespace). */
bool ftc__addr_this_host(const char *host);

#endif
