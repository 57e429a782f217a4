/* Sealed records (src/base/auth.c): a seal verifies only for the key,
 * label, context and text it was made for; anything else, a missing or
 * malformed seal included, is FTC_EAUTH. */
#include <string.h>

#include "base/auth.h"
#include "base/base_int.h"
#include "testkit.h"

static void seals_bind_key_label_context_and_text(void **state)
{
    (void)state;
    uint8_t key[FTC__AUTH_KEY], other[FTC__AUTH_KEY];
    TK_OK(ftc__auth_key("seal-secret", key));
    TK_OK(ftc__auth_key("another", other));
    const char text[] = "127.0.0.1:4000|00000000deadbeef";
    size_t n = sizeof(text) - 1;
    char rec[sizeof(text) + FTC__AUTH_SEAL_EXTRA];
    memcpy(rec, text, n);
    ftc__auth_seal(key, "label", "ctx", text, n, rec + n);
    size_t len = n + FTC__AUTH_SEAL_EXTRA, got = 0;
    TK_OK(ftc__auth_unseal(key, "label", "ctx", rec, len, &got));
    assert_int_equal(got, n);
    TK_EXPECT(ftc__auth_unseal(other, "label", "ctx", rec, len, &got),
              FTC_EAUTH);
    TK_EXPECT(ftc__auth_unseal(key, "label2", "ctx", rec, len, &got),
              FTC_EAUTH);
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx2", rec, len, &got),
              FTC_EAUTH);
    /* label and context are NUL-separated: moving a byte between them
     * does not give the same input. */
    TK_EXPECT(ftc__auth_unseal(key, "labelc", "tx", rec, len, &got), FTC_EAUTH);
    rec[3] ^= 1;
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx", rec, len, &got), FTC_EAUTH);
    rec[3] ^= 1;
    rec[len - 1] = rec[len - 1] == '0' ? '1' : '0';
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx", rec, len, &got), FTC_EAUTH);
    rec[len - 1] = 'g'; /* not hex */
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx", rec, len, &got), FTC_EAUTH);
    /* No seal at all, or too short to hold one. */
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx", text, n, &got), FTC_EAUTH);
    TK_EXPECT(ftc__auth_unseal(key, "label", "ctx", "", 0, &got), FTC_EAUTH);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seals_bind_key_label_context_and_text),
    };
    return tk_main(argc, argv, NULL, 0, tests);
}
