/* Error codes, names and the thread-local message. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "base/err.h"
#include "testkit.h"

#define CODE_OF(code, text) code,
static const int all_codes[] = {FTC__ERR_CODES(CODE_OF)};
#undef CODE_OF
#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

static void every_code_has_a_name_and_text(void **state)
{
    (void)state;
    /* The table is the header's codes, 0 down to FTC_EFINISHED, in order;
     * FTC__ERR_LOWEST (what peers' codes are checked against) is its
     * last. */
    assert_int_equal(N_CODES, 1 - FTC_EFINISHED);
    assert_int_equal(all_codes[N_CODES - 1], FTC__ERR_LOWEST);
    for (size_t i = 0; i < N_CODES; i++) {
        int code = all_codes[i];
        assert_int_equal(code, -(int)i);
        assert_string_not_equal(ftc_err_name(code), "FTC_E?");
        assert_string_not_equal(ftc_strerror(code), "unknown error");
        assert_true(strncmp(ftc_err_name(code), "FTC_", 4) == 0);
        assert_true(ftc_strerror(code)[0] != '\0');
    }
    assert_string_equal(ftc_err_name(FTC_ETIMEDOUT), "FTC_ETIMEDOUT");
    assert_string_equal(ftc_strerror(FTC_ETIMEDOUT), "timed out");
}

static void names_and_texts_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_CODES; i++) {
        for (size_t j = i + 1; j < N_CODES; j++) {
            assert_string_not_equal(ftc_err_name(all_codes[i]),
                                    ftc_err_name(all_codes[j]));
            assert_string_not_equal(ftc_strerror(all_codes[i]),
                                    ftc_strerror(all_codes[j]));
        }
    }
}

static void unknown_codes_say_so(void **state)
{
    (void)state;
    const int unknown[] = {1, 42, FTC_EFINISHED - 1, -999, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        assert_string_equal(ftc_err_name(unknown[i]), "FTC_E?");
        assert_string_equal(ftc_strerror(unknown[i]), "unknown error");
    }
}

static void seterr_returns_code_and_formats(void **state)
{
    (void)state;
    assert_int_equal(ftc__seterr(FTC_EMSGSIZE, "value %d B > max %d", 9, 8),
                     FTC_EMSGSIZE);
    assert_string_equal(ftc_last_error(), "value 9 B > max 8");
    assert_int_equal(ftc__adderr(FTC_EMSGSIZE, "set '%s'", "k"), FTC_EMSGSIZE);
    assert_string_equal(ftc_last_error(), "set 'k': value 9 B > max 8");
    ftc__clearerr();
    assert_string_equal(ftc_last_error(), "");
}

static void errno_maps_by_meaning(void **state)
{
    (void)state;
    assert_int_equal(ftc__seterr_errno(ECONNRESET, "recv"), FTC_EPEER);
    assert_non_null(strstr(ftc_last_error(), "recv: "));
    assert_int_equal(ftc__seterr_errno(ENOMEM, "x"), FTC_ENOMEM);
    assert_int_equal(ftc__seterr_errno(EBADF, "x"), FTC_ESYS);
}

static void *other_thread(void *arg)
{
    (void)arg;
    ftc__seterr(FTC_EPEER, "other thread");
    return NULL;
}

static void message_is_per_thread(void **state)
{
    (void)state;
    ftc__seterr(FTC_EINVAL, "mine");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, NULL);
    assert_string_equal(ftc_last_error(), "mine");
}

static void long_messages_are_truncated_not_overflowed(void **state)
{
    (void)state;
    char big[2048];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ftc__seterr(FTC_EINVAL, "%s", big);
    assert_true(strlen(ftc_last_error()) < sizeof(big));
    assert_true(strlen(ftc_last_error()) > 100);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_a_name_and_text),
        cmocka_unit_test(names_and_texts_are_distinct),
        cmocka_unit_test(unknown_codes_say_so),
        cmocka_unit_test(seterr_returns_code_and_formats),
        cmocka_unit_test(errno_maps_by_meaning),
        cmocka_unit_test(message_is_per_thread),
        cmocka_unit_test(long_messages_are_truncated_not_overflowed),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
