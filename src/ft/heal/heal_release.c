/* The healing client's last word: every source lending its live state is
 * told, all at once, that this replica no longer needs it, so that the
 * source's round can end without waiting for its bound. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "ft/heal/heal_client_int.h"
#include "ft/http_tls.h"

/* The answer's text is not needed. */
static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* One POST .../release; NULL if out of memory. */
static CURL *release_request(const ftc__heal_client *c, const char *server,
                             int64_t step, const char *replica_id,
                             struct curl_slist *hdrs, ftc__deadline dl)
{
    CURL *e = curl_easy_init();
    char *id = e != NULL ? curl_easy_escape(e, replica_id, 0) : NULL;
    if (id == NULL) {
        curl_easy_cleanup(e);
        return NULL;
    }
    char url[FTC__HEAL_ADDR_MAX + FTC__HEAL_ID_MAX * 3 + 64];
    char what[FTC__HEAL_ID_MAX * 3 + 32];
    snprintf(what, sizeof(what), "release?replica=%s", id);
    curl_free(id);
    ftc__heal_url(server, step, what, url, sizeof(url));
    curl_easy_setopt(e, CURLOPT_URL, url);
    ftc__http_tls_curl(e, c->tls_ca);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    long left = (long)ftc__deadline_left_ms(dl);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left > 0 ? left : 1L);
    if (hdrs != NULL) {
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    return e;
}

size_t ftc__heal_client_release(ftc__heal_client *c, const char *const *servers,
                                size_t n, int64_t step, const char *replica_id,
                                const char *token, ftc__deadline dl)
{
    struct curl_slist *hdrs = NULL;
    CURLM *multi = curl_multi_init();
    CURL **easy = ftc__calloc(n > 0 ? n : 1, sizeof(*easy));
    if (multi == NULL || easy == NULL ||
        ftc__heal_auth_header(token, &hdrs) != 0) {
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        /* A server the token may not go to is not told (its lending
         * ends by its bound); the fetch refused it already. */
        easy[i] =
            token != NULL && ftc__heal_token_may_go(c, servers[i]) != 0
                ? NULL
                : release_request(c, servers[i], step, replica_id, hdrs, dl);
        if (easy[i] != NULL) {
            curl_multi_add_handle(multi, easy[i]);
        }
    }
    int running = 1;
    while (running > 0 && !ftc__heal_client_aborted(c) &&
           !ftc__deadline_expired(dl)) {
        curl_multi_perform(multi, &running);
        int ms = ftc__deadline_poll_ms(dl);
        if (running > 0) {
            curl_multi_poll(multi, NULL, 0, ms < 0 || ms > 100 ? 100 : ms,
                            NULL);
        }
    }
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        long status = 0;
        if (easy[i] != NULL) {
            curl_easy_getinfo(easy[i], CURLINFO_RESPONSE_CODE, &status);
            curl_multi_remove_handle(multi, easy[i]);
            curl_easy_cleanup(easy[i]);
        }
        ok += status == 200;
    }
    ftc__free(easy);
    curl_slist_free_all(hdrs);
    curl_multi_cleanup(multi);
    return ok;
}
