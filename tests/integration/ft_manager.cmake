# The manager across real processes on loopback (tests/lib/ft_kit: a
# lighthouse and stores in the test process, each rank a child).
ftc_add_test(ft_manager_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_manager_test.c
             KITS ft lighthouse DEPENDS ftc_cli
             LABELS integration threaded TIMEOUT 600)
target_compile_definitions(ft_manager_test PRIVATE
                           FTC_CLI_PATH="$<TARGET_FILE:ftc_cli>")
