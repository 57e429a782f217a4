/* Parsing and printing host:port addresses, IPv4, IPv6 and names. */
#include "base/addr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
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

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)sa;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)sa;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
               (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) &&
                a->sin6_addr.s6_addr[12] == 127);
    }
    return false;
}

/* Whether sa is an address of one of this host's interfaces. */
static bool is_local(const struct sockaddr *sa, const struct ifaddrs *ifs)
{
    for (const struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
        const struct sockaddr *a = i->ifa_addr;
        if (a == NULL || a->sa_family != sa->sa_family) {
            continue;
        }
        if (sa->sa_family == AF_INET &&
            ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
                ((const struct sockaddr_in *)(const void *)sa)
                    ->sin_addr.s_addr) {
            return true;
        }
        if (sa->sa_family == AF_INET6 &&
            memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                   &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                   sizeof(struct in6_addr)) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether every address host resolves to is loopback, or with ifs, an
 * address of this host. */
static bool all_addresses(const char *host, const struct ifaddrs *ifs,
                          bool with_ifs)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (host[0] == '\0' || strcmp(host, "*") == 0 ||
        getaddrinfo(host, NULL, &hints, &res) != 0) {
        return false;
    }
    bool all = res != NULL;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        all = all && (is_loopback(ai->ai_addr) ||
                      (with_ifs && is_local(ai->ai_addr, ifs)));
    }
    freeaddrinfo(res);
    return all;
}

bool ftc__addr_loopback_only(const char *host)
{
    return all_addresses(host, NULL, false);
}

bool ftc__addr_this_host(const char *host)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) {
        return ftc__addr_loopback_only(host);
    }
    bool all = all_addresses(host, ifs, true);
    freeifaddrs(ifs);
    return all;
}
