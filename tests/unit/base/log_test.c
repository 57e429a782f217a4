/* Levels, parsing and the embedding program's log handler. */
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handler_gets_enabled_levels_only),
        cmocka_unit_test(level_names_parse),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
