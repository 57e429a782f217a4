# TLS on the lighthouse and healing servers (certificates made by openssl
# for the run) and the rule that keeps a token off the wire in clear text.
ftc_add_test(tls_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/tls_test.c
             LABELS integration threaded TIMEOUT 300)
