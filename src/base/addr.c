/* Parsing and printing host:port addresses, IPv4, IPv6 and names. */
#include "base/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

static int parse_port(const char *s, int *port)
{
    if (*s == '\0' || strlen(s) > 5) {
        return -1;
    }
    long v = 0;
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        v = v * 10 + (*p - '0');
    }
    if (v > 65535) {
        return -1;
    }
    *port = (int)v;
    return 0;
}

static int copy_host(const char *start, size_t n, char *host, size_t cap,
                     const char *text)
{
    if (n == 0) {
        return ftc__seterr(FTC_EINVAL, "address '%s': empty host", text);
    }
    if (n >= cap) {
        return ftc__seterr(FTC_EINVAL, "address '%s': host too long", text);
    }
    memcpy(host, start, n);
    host[n] = '\0';
    return 0;
}

int ftc__addr_split(const char *text, int default_port, char *host,
                    size_t host_cap, int *port)
{
    if (text == NULL) {
        return ftc__seterr(FTC_EINVAL, "address is NULL");
    }
    const char *port_text = NULL;
    int rc;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL) {
            return ftc__seterr(FTC_EINVAL, "address '%s': missing ']'", text);
        }
        rc = copy_host(text + 1, (size_t)(close - text - 1), host, host_cap,
                       text);
        if (rc != 0) {
            return rc;
        }
        if (close[1] == ':') {
            port_text = close + 2;
        } else if (close[1] != '\0') {
            return ftc__seterr(FTC_EINVAL, "address '%s': junk after ']'",
                               text);
        }
    } else {
        const char *colon = strchr(text, ':');
        if (colon != NULL && strchr(colon + 1, ':') == NULL) {
            rc = copy_host(text, (size_t)(colon - text), host, host_cap, text);
            port_text = colon + 1;
        } else {
            /* No colon, or several: a name or a bare IPv6 literal. */
            rc = copy_host(text, strlen(text), host, host_cap, text);
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (port_text == NULL) {
        if (default_port < 0) {
            return ftc__seterr(FTC_EINVAL, "address '%s': port missing", text);
        }
        *port = default_port;
        return 0;
    }
    if (parse_port(port_text, port) != 0) {
        return ftc__seterr(FTC_EINVAL, "address '%s': bad port '%s'", text,
                           port_text);
    }
    return 0;
}

void ftc__addr_join(const char *host, int port, char *out, size_t cap)
{
    if (strchr(host, ':') != NULL) {
        snprintf(out, cap, "[%s]:%d", host, port);
    } else {
        snprintf(out, cap, "%s:%d", host, port);
    }
}

void ftc__addr_format(const struct sockaddr *sa, char *out, size_t cap)
{
    char ip[INET6_ADDRSTRLEN];
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, cap, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, cap, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, cap, "?");
    }
}
