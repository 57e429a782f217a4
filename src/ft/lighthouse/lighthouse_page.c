/* The dashboard page (GET /): the embedded template with a snapshot of the
 * jobs and of one job rendered into it as HTML, so the page reads without
 * JavaScript (the tables); with it, the page's script redraws the same
 * parts and the plots every second. Also the charting library it loads
 * (GET /assets/chart.min.js, Debian's libjs-chart.js embedded at build
 * time). */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse_chart.h"
#include "ft/lighthouse_page.h"

/* Where the template takes the snapshot. */
#define MARK_JOBS "<!--ftc:jobs-->"
#define MARK_DETAIL "<!--ftc:detail-->"

/* Text as HTML: the five characters that can change its meaning escaped
 * (enough for text and for double-quoted attribute values). */
static int esc(ftc__buf *b, const char *s)
{
    int rc = 0;
    for (; rc == 0 && *s != '\0'; s++) {
        switch (*s) {
        case '&':
            rc = ftc__buf_printf(b, "&amp;");
            break;
        case '<':
            rc = ftc__buf_printf(b, "&lt;");
            break;
        case '>':
            rc = ftc__buf_printf(b, "&gt;");
            break;
        case '"':
            rc = ftc__buf_printf(b, "&quot;");
            break;
        case '\'':
            rc = ftc__buf_printf(b, "&#39;");
            break;
        default:
            rc = ftc__buf_append(b, s, 1);
        }
    }
    return rc;
}

/* A cell: a JSON value as text ("" for null or absent), escaped. */
static int cell(ftc__buf *b, const json_t *v)
{
    int rc = ftc__buf_printf(b, "<td>");
    if (rc == 0 && json_is_string(v)) {
        rc = esc(b, json_string_value(v));
    } else if (rc == 0 && json_is_integer(v)) {
        rc = ftc__buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    }
    return rc == 0 ? ftc__buf_printf(b, "</td>") : rc;
}

/* A cell with a duration in milliseconds, "" for null. */
static int cell_ms(ftc__buf *b, const json_t *v)
{
    return json_is_integer(v)
               ? ftc__buf_printf(b, "<td>%" JSON_INTEGER_FORMAT " ms</td>",
                                 json_integer_value(v))
               : ftc__buf_printf(b, "<td></td>");
}

/* A cell with a wall-clock time of day in UTC (the server knows no
 * viewer's time zone; the script shows local time). */
static int cell_clock(ftc__buf *b, const json_t *v)
{
    time_t t = (time_t)(json_integer_value(v) / 1000);
    struct tm tm;
    char text[16] = "";
    if (json_is_integer(v) && gmtime_r(&t, &tm) != NULL) {
        strftime(text, sizeof(text), "%H:%M:%S", &tm);
    }
    return ftc__buf_printf(b, "<td>%s UTC</td>", text);
}

static int header_row(ftc__buf *b, const char *const *names, size_t n)
{
    int rc = ftc__buf_printf(b, "<tr>");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = ftc__buf_printf(b, "<th>%s</th>", names[i]);
    }
    return rc == 0 ? ftc__buf_printf(b, "</tr>") : rc;
}

static int job_cards(ftc__buf *b, const json_t *jobs, const char *selected)
{
    int rc = 0;
    size_t i;
    const json_t *j;
    json_array_foreach(json_object_get(jobs, "jobs"), i, j)
    {
        const char *name = json_string_value(json_object_get(j, "name"));
        if (rc == 0 && name != NULL) {
            rc = ftc__buf_printf(b, "<a class=\"job%s\" href=\"?job=",
                                 strcmp(name, selected) == 0 ? " sel" : "");
        }
        /* A job name is [A-Za-z0-9_.-] (the API refuses others), so it
         * needs no percent-encoding in the query. */
        rc = rc == 0 && name != NULL ? esc(b, name) : rc;
        rc = rc == 0 && name != NULL ? ftc__buf_printf(b, "\"><b>") : rc;
        rc = rc == 0 && name != NULL ? esc(b, name) : rc;
        rc = rc == 0 && name != NULL ? ftc__buf_printf(b, "</b> <small>") : rc;
        const json_t *h = json_object_get(j, "headline");
        rc = rc == 0 && name != NULL && json_is_string(h)
                 ? esc(b, json_string_value(h))
                 : rc;
        rc = rc == 0 && name != NULL ? ftc__buf_printf(b, "</small></a>") : rc;
    }
    return rc;
}

static int members_table(ftc__buf *b, const json_t *status)
{
    const json_t *q = json_object_get(status, "quorum");
    if (!json_is_object(q)) {
        return 0;
    }
    static const char *const cols[] = {"replica", "step", "manager", "store",
                                       "ranks"};
    int rc = ftc__buf_printf(b, "<section><h2>Members</h2><table>");
    rc = rc == 0 ? header_row(b, cols, 5) : rc;
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(q, "members"), i, m)
    {
        static const char *const keys[] = {"replica_id", "step", "address",
                                           "store_address", "world_size"};
        rc = rc == 0 ? ftc__buf_printf(b, "<tr>") : rc;
        for (size_t k = 0; rc == 0 && k < 5; k++) {
            rc = cell(b, json_object_get(m, keys[k]));
        }
        rc = rc == 0 ? ftc__buf_printf(b, "</tr>") : rc;
    }
    return rc == 0 ? ftc__buf_printf(b, "</table></section>") : rc;
}

static int failures_table(ftc__buf *b, const json_t *status)
{
    const json_t *f =
        json_object_get(json_object_get(status, "history"), "failures");
    if (json_array_size(f) == 0) {
        return 0;
    }
    static const char *const cols[] = {
        "when",      "replica", "cause", "step", "others went on after",
        "back after"};
    int rc = ftc__buf_printf(b, "<section><h2>Failures</h2><table>");
    rc = rc == 0 ? header_row(b, cols, 6) : rc;
    /* Newest first, as the page's script shows them. */
    for (size_t i = json_array_size(f); rc == 0 && i-- > 0;) {
        const json_t *x = json_array_get(f, i);
        rc = ftc__buf_printf(b, "<tr>");
        rc = rc == 0 ? cell_clock(b, json_object_get(x, "wall_ms")) : rc;
        rc = rc == 0 ? cell(b, json_object_get(x, "replica_id")) : rc;
        rc = rc == 0 ? cell(b, json_object_get(x, "cause")) : rc;
        rc = rc == 0 ? cell(b, json_object_get(x, "step")) : rc;
        rc = rc == 0 ? cell_ms(b, json_object_get(x, "survivors_ms")) : rc;
        rc = rc == 0 ? cell_ms(b, json_object_get(x, "back_ms")) : rc;
        rc = rc == 0 ? ftc__buf_printf(b, "</tr>") : rc;
    }
    return rc == 0 ? ftc__buf_printf(b, "</table></section>") : rc;
}

static int detail(ftc__buf *b, const json_t *status)
{
    if (status == NULL) {
        return ftc__buf_printf(b, "<p class=\"muted\">No job yet: managers "
                                  "create their job with their first "
                                  "request.</p>");
    }
    const json_t *head =
        json_object_get(json_object_get(status, "summary"), "headline");
    int rc = ftc__buf_printf(b, "<section><p class=\"headline\">");
    rc = rc == 0 && json_is_string(head) ? esc(b, json_string_value(head)) : rc;
    rc = rc == 0 ? ftc__buf_printf(b, "</p><h2>Job ") : rc;
    rc = rc == 0 ? esc(b, json_string_value(json_object_get(status, "job")))
                 : rc;
    rc = rc == 0 ? ftc__buf_printf(b, "</h2></section>") : rc;
    rc = rc == 0 ? members_table(b, status) : rc;
    return rc == 0 ? failures_table(b, status) : rc;
}

int ftc__lighthouse_page_render(const char *tmpl, const json_t *jobs,
                                const json_t *status, ftc__buf *out)
{
    const char *at_jobs = strstr(tmpl, MARK_JOBS);
    const char *at_detail = strstr(tmpl, MARK_DETAIL);
    if (at_jobs == NULL || at_detail == NULL || at_detail < at_jobs) {
        return ftc__seterr(FTC_EINVAL, "page template lacks its marks");
    }
    const char *selected =
        status != NULL ? json_string_value(json_object_get(status, "job"))
                       : NULL;
    int rc = ftc__buf_append(out, tmpl, (size_t)(at_jobs - tmpl));
    rc = rc == 0 ? job_cards(out, jobs, selected != NULL ? selected : "") : rc;
    const char *mid = at_jobs + strlen(MARK_JOBS);
    rc = rc == 0 ? ftc__buf_append(out, mid, (size_t)(at_detail - mid)) : rc;
    rc = rc == 0 ? detail(out, status) : rc;
    const char *tail = at_detail + strlen(MARK_DETAIL);
    return rc == 0 ? ftc__buf_append(out, tail, strlen(tail)) : rc;
}

ftc__lighthouse_blob *ftc__lighthouse_page(ftc_lighthouse *lh, const char *job)
{
    int64_t now = ftc__now_ms();
    json_t *jobs = ftc__lighthouse_jobs_json(lh, now);
    if (job == NULL || *job == '\0') {
        /* The first job by name, as the page's script selects. */
        const json_t *first = json_array_get(json_object_get(jobs, "jobs"), 0);
        job = json_string_value(json_object_get(first, "name"));
    }
    json_t *status = NULL;
    ftc__lighthouse_job *j = NULL;
    /* An unknown job is not created by a page view. */
    if (jobs != NULL && job != NULL &&
        ftc__lighthouse_job_get(lh, job, false, &j) == 0) {
        status = ftc__lighthouse_status_json(j, now, ftc__wall_ms());
        ftc__lighthouse_job_unlock(j);
    }
    ftc__buf b;
    ftc__buf_init(&b, SIZE_MAX);
    int rc = jobs != NULL ? ftc__lighthouse_page_render(
                                ftc__lighthouse_page_html, jobs, status, &b)
                          : FTC_ENOMEM;
    json_decref(jobs);
    json_decref(status);
    ftc__lighthouse_blob *blob = rc == 0 ? ftc__lighthouse_blob_buf(&b) : NULL;
    ftc__buf_free(&b);
    return blob;
}

const char *ftc__lighthouse_chart_js(size_t *len)
{
    *len = sizeof(ftc__lighthouse_chart_min_js) - 1;
    return ftc__lighthouse_chart_min_js;
}
