# The install tree and pkg-config file, used from outside the source tree:
# a moved install prefix still builds and runs the README's example and a
# probe, shared and static. Sanitized builds are skipped by label (their
# library needs the sanitizer runtime in every program that links it).
ftc_add_test(install_test
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/install_test.sh
                     ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                     ${CMAKE_C_COMPILER} ${CMAKE_CURRENT_BINARY_DIR}/install_test
             TIMEOUT 300 LABELS integration nosan)
