/* Levels, parsing, the embedding program's log handler, and JSON lines
 * (FTC_LOG_FORMAT=json, set by main before the first line): any message
 * gives one object per line that parses, with its fields. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json_quote.h"
#include "base/log.h"
#include "testkit.h"

static char seen_tag[64];
static char seen_msg[256];
static int seen_level;
static int seen_count;

static void capture(void *arg, int level, const char *tag, const char *msg)
{
    (void)arg;
    seen_level = level;
    seen_count++;
    snprintf(seen_tag, sizeof(seen_tag), "%s", tag);
    snprintf(seen_msg, sizeof(seen_msg), "%s", msg);
}

static void handler_gets_enabled_levels_only(void **state)
{
    (void)state;
    ftc_log_set_handler(capture, NULL);
    ftc_log_set_level(FTC_LOG_WARN);
    seen_count = 0;
    FTC_LOG_INFO("test.info", "hidden %d", 1);
    assert_int_equal(seen_count, 0);
    FTC_LOG_WARN("test.warn", "shown %d", 2);
    assert_int_equal(seen_count, 1);
    assert_int_equal(seen_level, FTC_LOG_WARN);
    assert_string_equal(seen_tag, "test.warn");
    assert_string_equal(seen_msg, "shown 2");
    ftc_log_set_level(FTC_LOG_OFF);
    FTC_LOG_ERROR("test.error", "hidden");
    assert_int_equal(seen_count, 1);
    ftc_log_set_handler(NULL, NULL);
}

static void level_names_parse(void **state)
{
    (void)state;
    assert_int_equal(ftc_log_level_parse("debug"), FTC_LOG_DEBUG);
    assert_int_equal(ftc_log_level_parse("INFO"), FTC_LOG_INFO);
    assert_int_equal(ftc_log_level_parse("warn"), FTC_LOG_WARN);
    assert_int_equal(ftc_log_level_parse("error"), FTC_LOG_ERROR);
    assert_int_equal(ftc_log_level_parse("off"), FTC_LOG_OFF);
    assert_int_equal(ftc_log_level_parse("loud"), -1);
    assert_int_equal(ftc_log_level_parse(NULL), -1);
}

/* The literal of s, parsed back by jansson (which rejects invalid UTF-8
 * and bad escapes); NULL if it does not parse. */
static char *round_trip(const char *s, size_t cap)
{
    char lit[512];
    assert_true(cap <= sizeof(lit));
    size_t n = ftc__json_quote(lit, cap, s);
    assert_int_equal(n, strlen(lit));
    assert_true(n < cap);
    json_t *v = json_loadb(lit, n, JSON_DECODE_ANY, NULL);
    char *back = v != NULL ? strdup(json_string_value(v)) : NULL;
    json_decref(v);
    return back;
}

static void json_quote_any_input(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"a \"quote\" and \\", "a \"quote\" and \\"},
        {"line\nbreak\ttab\r\x01\x1f", "line\nbreak\ttab\r\x01\x1f"},
        {"caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5"},
        /* invalid: a lone byte, an overlong '/', a surrogate, a cut
         * sequence, past U+10FFFF: each byte becomes U+FFFD */
        {"x\xffy", "x\xef\xbf\xbdy"},
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf4\x90\x80\x80",
         "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *back = round_trip(cases[i].in, 512);
        assert_non_null(back);
        assert_string_equal(back, cases[i].out);
        free(back);
    }
    /* Too long for the buffer: cut at a whole character, still closed. */
    char *back = round_trip("ab\xc3\xa9\"", 6);
    assert_string_equal(back, "ab");
    free(back);
    back = round_trip("\"\"\"", 5);
    assert_string_equal(back, "\"");
    free(back);
}

/* What FTC_LOG_WARN writes to stderr while fn runs. */
static char *stderr_of(void (*fn)(void))
{
    char path[] = "/tmp/ftc-log-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    assert_int_equal(dup2(fd, 2), 2);
    fn();
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    static char text[16384];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    close(fd);
    assert_true(n > 0);
    text[n] = '\0';
    return text;
}

static void log_some(void)
{
    ftc_log_set_level(FTC_LOG_INFO);
    FTC_LOG_WARN("store.oversize", "value of %d B refused: \"%s\"", 7,
                 "k\x01\xff");
    FTC_LOG_INFO("manager", "no dot in the tag");
    char big[1500];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    FTC_LOG_ERROR("pg.failed", "%s", big);
    ftc_log_set_level(FTC_LOG_WARN);
}

static void json_lines_parse(void **state)
{
    (void)state;
    char *text = stderr_of(log_some);
    static const char *const tags[] = {"store.oversize", "manager",
                                       "pg.failed"};
    static const char *const components[] = {"store", "manager", "pg"};
    static const char *const levels[] = {"warn", "info", "error"};
    int lines = 0;
    for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL;
         line = nl + 1, lines++) {
        *nl = '\0';
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (o == NULL) {
            fail_msg("line %d is not JSON: %s (%s)", lines, line, err.text);
        }
        assert_true(lines < 3);
        const char *time = json_string_value(json_object_get(o, "time"));
        assert_non_null(time); /* 2026-12-04T17:15:11.128Z */
        assert_int_equal(strlen(time), 24);
        assert_int_equal(time[10], 'T');
        assert_int_equal(time[23], 'Z');
        assert_string_equal(json_string_value(json_object_get(o, "level")),
                            levels[lines]);
        assert_string_equal(json_string_value(json_object_get(o, "tag")),
                            tags[lines]);
        assert_string_equal(json_string_value(json_object_get(o, "component")),
                            components[lines]);
        assert_int_equal(json_integer_value(json_object_get(o, "pid")),
                         getpid());
        assert_string_equal(json_string_value(json_object_get(o, "replica")),
                            "replica_\"7\"");
        assert_int_equal(json_integer_value(json_object_get(o, "rank")), 3);
        const char *msg = json_string_value(json_object_get(o, "message"));
        assert_non_null(msg);
        if (lines == 0) {
            assert_string_equal(msg,
                                "value of 7 B refused: \"k\x01\xef\xbf\xbd\"");
        } else if (lines == 2) {
            assert_int_equal(strlen(msg), 1023); /* as text lines cut it */
        }
        json_decref(o);
    }
    assert_int_equal(lines, 3);
}

int main(int argc, char **argv)
{
    /* Read at the first line written to stderr (none before this). */
    setenv("FTC_LOG_FORMAT", "json", 1);
    setenv("FTC_REPLICA_ID", "replica_\"7\"", 1);
    setenv("FTC_GROUP_RANK", "3", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handler_gets_enabled_levels_only),
        cmocka_unit_test(level_names_parse),
        cmocka_unit_test(json_quote_any_input),
        cmocka_unit_test(json_lines_parse),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
