# Real torch 1.13 and torch 2.x TCPStore clients against our server. The
# interpreters are FTC_TORCH1_PYTHON and FTC_TORCH2_PYTHON; a missing one
# fails the test.
ftc_add_test(store_server_interop_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_server_interop_test.c
             KITS store_server
             ARGS ${FTC_TORCH1_PYTHON} ${FTC_TORCH2_PYTHON}
                  ${CMAKE_CURRENT_LIST_DIR}
             LABELS interop threaded TIMEOUT 600)
