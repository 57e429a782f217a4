/* Helpers of the lighthouse integration tests (see lighthouse_kit.h). */
#include "lighthouse_kit.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base_int.h"
#include "testkit.h"

typedef struct sink {
    char *data;
    size_t len;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    sink *s = arg;
    char *grown = realloc(s->data, s->len + size * n + 1);
    if (grown == NULL) {
        return 0;
    }
    memcpy(grown + s->len, p, size * n);
    s->len += size * n;
    grown[s->len] = '\0';
    s->data = grown;
    return size * n;
}

long lt_http(const char *addr, const char *method, const char *path,
             const char *body, const char *token, char **out)
{
    CURL *e = curl_easy_init();
    assert_non_null(e);
    char url[1024], auth[1024];
    snprintf(url, sizeof(url), "http://%s%s", addr, path);
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    if (token != NULL) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    sink s = {NULL, 0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)tk_ms(10000));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    if (body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    }
    long status = 0;
    if (curl_easy_perform(e) == CURLE_OK) {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (out != NULL) {
        *out = s.data;
    } else {
        free(s.data);
    }
    return status;
}

json_t *lt_get_json(const char *addr, const char *path)
{
    char *text = NULL;
    long status = lt_http(addr, "GET", path, NULL, NULL, &text);
    if (status != 200 || text == NULL) {
        fail_msg("GET %s: HTTP %ld %s", path, status, text ? text : "");
    }
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (j == NULL) {
        fail_msg("GET %s: not JSON: %s", path, e.text);
    }
    free(text);
    return j;
}

size_t lt_raw(const char *addr, const char *bytes, size_t len, char *reply,
              size_t cap, int64_t timeout_ms, bool *closed)
{
    char host[256];
    int port;
    TK_OK(ftc__addr_split(addr, -1, host, sizeof(host), &port));
    int fd;
    TK_OK(ftc__sock_connect(host, port, ftc__deadline_in_ms(tk_ms(5000)), NULL,
                            &fd));
    TK_OK(ftc__sock_send_all(fd, bytes, len, ftc__deadline_in_ms(tk_ms(5000)),
                             NULL));
    size_t n = 0;
    *closed = false;
    int64_t end = tk_now_ms() + tk_ms(timeout_ms);
    while (n + 1 < cap) {
        int64_t left = end - tk_now_ms();
        if (left <= 0) {
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) {
            continue;
        }
        ssize_t got = read(fd, reply + n, cap - 1 - n);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
            *closed = true;
            break;
        }
        n += got > 0 ? (size_t)got : 0;
    }
    reply[n] = '\0';
    close(fd);
    return n;
}

int lt_connect_from(const char *from, const char *addr, const char *bytes)
{
    char host[256];
    int port;
    TK_OK(ftc__addr_split(addr, -1, host, sizeof(host), &port));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in src = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
    struct sockaddr_in dst = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port)};
    assert_int_equal(inet_pton(AF_INET, host, &dst.sin_addr), 1);
    assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    /* A refused connection may be closed already: what is sent is lost. */
    (void)!send(fd, bytes, strlen(bytes), MSG_NOSIGNAL);
    return fd;
}

bool lt_is_participant(const char *addr, const char *job, const char *id)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/jobs/%s/status", job);
    char *text = NULL;
    if (lt_http(addr, "GET", path, NULL, NULL, &text) != 200) {
        free(text);
        return false;
    }
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    bool found = false;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "participants"), i, p)
    {
        const char *pid = json_string_value(json_object_get(p, "replica_id"));
        found = found || (pid != NULL && strcmp(pid, id) == 0);
    }
    json_decref(j);
    return found;
}

long long lt_status_int(const char *addr, const char *job, const char *key)
{
    char path[256];
    snprintf(path, sizeof(path), "/v1/jobs/%s/status", job);
    json_t *j = lt_get_json(addr, path);
    long long v = json_integer_value(json_object_get(j, key));
    json_decref(j);
    return v;
}

ftc_lighthouse_client *lt_client(const char *addr)
{
    ftc_lighthouse_client_opts co;
    ftc_lighthouse_client_opts_init(&co);
    co.timeout_ms = tk_ms(20000);
    ftc_lighthouse_client *c;
    TK_OK(ftc_lighthouse_client_create(addr, &co, &c));
    return c;
}

ftc_lighthouse_member lt_member(const char *id, int64_t step)
{
    ftc_lighthouse_member m;
    memset(&m, 0, sizeof(m));
    snprintf(m.replica_id, sizeof(m.replica_id), "%s", id);
    snprintf(m.address, sizeof(m.address), "addr_%s", id);
    snprintf(m.store_address, sizeof(m.store_address), "store_%s:1", id);
    m.step = step;
    m.world_size = 1;
    return m;
}

static void *join_main(void *arg)
{
    lt_join *j = arg;
    j->rc = ftc_lighthouse_client_quorum(j->client, &j->member, j->timeout_ms,
                                         &j->result);
    snprintf(j->error, sizeof(j->error), "%s", ftc_last_error());
    atomic_store(&j->done, true);
    return NULL;
}

void lt_join_start(lt_join *j, ftc_lighthouse_client *c,
                   const ftc_lighthouse_member *m, int64_t timeout_ms)
{
    memset(j, 0, sizeof(*j));
    j->client = c;
    j->member = *m;
    j->timeout_ms = timeout_ms;
    assert_int_equal(pthread_create(&j->thread, NULL, join_main, j), 0);
}

int lt_join_wait(lt_join *j)
{
    pthread_join(j->thread, NULL);
    return j->rc;
}

long lt_find(const ftc_lighthouse_quorum *q, const char *id)
{
    for (size_t i = 0; i < q->n_members; i++) {
        if (strcmp(q->members[i].replica_id, id) == 0) {
            return (long)i;
        }
    }
    return -1;
}
