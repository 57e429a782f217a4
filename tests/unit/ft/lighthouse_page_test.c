/* The dashboard's server-side rendering (ftc__lighthouse_page_render):
 * the snapshot lands at the template's marks, hostile names are escaped
 * so they stay text, and a template without its marks is refused. */
#include <stdlib.h>
#include <string.h>

#include "ft/lighthouse/lighthouse.h"
#include "testkit.h"

static const char tmpl[] = "<html><div id=\"jobs\"><!--ftc:jobs--></div>"
                           "<div id=\"detail\"><!--ftc:detail--></div></html>";

static char *render(const char *t, const char *jobs_text,
                    const char *status_text, int *rc)
{
    json_t *jobs = json_loads(jobs_text, 0, NULL);
    json_t *status =
        status_text != NULL ? json_loads(status_text, 0, NULL) : NULL;
    assert_non_null(jobs);
    ftc__buf b;
    ftc__buf_init(&b, 1 << 20);
    *rc = ftc__lighthouse_page_render(t, jobs, status, &b);
    TK_OK(ftc__buf_append_u8(&b, 0));
    json_decref(jobs);
    json_decref(status);
    size_t len;
    return (char *)ftc__buf_detach(&b, &len);
}

static void snapshot_at_the_marks(void **state)
{
    (void)state;
    int rc;
    char *html = render(
        tmpl,
        "{\"jobs\": [{\"name\": \"a\", \"headline\": \"training: 1\"}, "
        "{\"name\": \"b\", \"headline\": \"waiting for the first quorum\"}]}",
        "{\"job\": \"a\", \"summary\": {\"headline\": \"training: 1\"}, "
        "\"quorum\": {\"members\": [{\"replica_id\": \"r:1\", \"step\": 7, "
        "\"address\": \"http://h:1\", \"store_address\": \"h:2\", "
        "\"world_size\": 2}]}, \"history\": {\"failures\": [{\"replica_id\": "
        "\"r:0\", \"cause\": \"disconnect\", \"wall_ms\": 3723000, \"step\": "
        "5, \"survivors_ms\": 25, \"back_ms\": null}]}}",
        &rc);
    TK_OK(rc);
    assert_non_null(strstr(html, "<div id=\"jobs\"><a class=\"job sel\" "
                                 "href=\"?job=a\"><b>a</b> <small>training: "
                                 "1</small></a><a class=\"job\" "
                                 "href=\"?job=b\">"));
    assert_non_null(strstr(html, "<p class=\"headline\">training: 1</p>"));
    assert_non_null(strstr(html, "<tr><td>r:1</td><td>7</td><td>http://h:1"
                                 "</td><td>h:2</td><td>2</td></tr>"));
    /* 3,723 s after the epoch is 01:02:03; a null recovery stays empty */
    assert_non_null(strstr(html, "<tr><td>01:02:03 UTC</td><td>r:0</td><td>"
                                 "disconnect</td><td>5</td><td>25 ms</td>"
                                 "<td></td></tr>"));
    assert_non_null(strstr(html, "</div></html>"));
    free(html);
    /* No job: the cards are empty and the detail says why. */
    html = render(tmpl, "{\"jobs\": []}", NULL, &rc);
    TK_OK(rc);
    assert_non_null(strstr(html, "<div id=\"jobs\"></div><div "
                                 "id=\"detail\"><p class=\"muted\">No job"));
    free(html);
}

static void hostile_names_stay_text(void **state)
{
    (void)state;
    int rc;
    char *html = render(
        tmpl, "{\"jobs\": [{\"name\": \"j\", \"headline\": \"<b>&\"}]}",
        "{\"job\": \"j\", \"summary\": {\"headline\": \"x</p><script>\"}, "
        "\"quorum\": {\"members\": [{\"replica_id\": "
        "\"<img src=x onerror='alert(1)'>\\\"\", \"step\": 1}]}}",
        &rc);
    TK_OK(rc);
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<img"));
    assert_non_null(strstr(html, "<small>&lt;b&gt;&amp;</small>"));
    assert_non_null(strstr(html, "x&lt;/p&gt;&lt;script&gt;</p>"));
    assert_non_null(strstr(html, "<td>&lt;img src=x onerror=&#39;alert(1)"
                                 "&#39;&gt;&quot;</td>"));
    free(html);
}

static void template_without_marks_is_refused(void **state)
{
    (void)state;
    int rc;
    char *html = render("<html></html>", "{\"jobs\": []}", NULL, &rc);
    assert_int_equal(rc, FTC_EINVAL);
    assert_string_equal(html, "");
    free(html);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshot_at_the_marks),
        cmocka_unit_test(hostile_names_stay_text),
        cmocka_unit_test(template_without_marks_is_refused),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
