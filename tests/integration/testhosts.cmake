# scripts/testhosts.sh (network-namespace test hosts) against a real
# lighthouse and `ftc status`: cut, restore, split, join, and nothing left
# behind. Root only, as make check runs.
ftc_add_test(testhosts_test
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/testhosts_test.sh
                     $<TARGET_FILE:ftc_cli>
                     ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
             TIMEOUT 120 LABELS integration)
