# scripts/testhosts.sh (network-namespace test hosts) against a real
# lighthouse and `ftc status`: cut, restore, split, join, and nothing left
# behind. Root only, as make check runs.
ftc_add_test(testhosts_test
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/testhosts_test.sh
                     $<TARGET_FILE:ftc_cli>
                     ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
             TIMEOUT 120 LABELS integration)
# One job over test hosts (ftc run --host per host, a shared lighthouse),
# with a replica group split from the lighthouse's host and healed.
ftc_add_test(run_hosts_test
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_hosts_test.sh
                     $<TARGET_FILE:ftc_cli>
                     ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
                     $<TARGET_FILE:train_ddp>
             TIMEOUT 240 LABELS integration chaos)
