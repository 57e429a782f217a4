# State registered through save/load callbacks across real processes on
# loopback (the trainer of ft_kit.c with FTK_STATE).
ftc_add_test(ft_callbacks_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_callbacks_test.c
                     ${CMAKE_CURRENT_LIST_DIR}/ft_kit.c
                     ${CMAKE_CURRENT_LIST_DIR}/ft_kit_state.c
             LABELS integration threaded TIMEOUT 600)
