/* Shared by the control tests: one embedded ftc store per test binary. */
#ifndef FTC_TESTS_CONTROL_KIT_H
#define FTC_TESTS_CONTROL_KIT_H

/* cmocka group setup/teardown: start and stop the store. */
int control_kit_setup(void **state);
int control_kit_teardown(void **state);
/* "127.0.0.1:<port>" of the store, valid between setup and teardown. */
const char *control_kit_addr(void);

#endif
