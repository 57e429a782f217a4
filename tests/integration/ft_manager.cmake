# The manager across real processes on loopback (ft_kit.c: a lighthouse
# and stores in the test process, each rank a child).
ftc_add_test(ft_manager_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_manager_test.c
                     ${CMAKE_CURRENT_LIST_DIR}/ft_kit.c
                     ${CMAKE_CURRENT_LIST_DIR}/ft_kit_state.c
                     ${CMAKE_CURRENT_LIST_DIR}/lighthouse_util.c
             LABELS integration threaded TIMEOUT 600)
target_compile_definitions(ft_manager_test PRIVATE
                           FTC_CLI_PATH="$<TARGET_FILE:ftc_cli>")
add_dependencies(ft_manager_test ftc_cli)
