# State registered through save/load callbacks across real processes on
# loopback (the trainer of tests/lib/ft_kit with FTK_STATE).
ftc_add_test(ft_callbacks_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_callbacks_test.c
             KITS ft
             LABELS integration threaded TIMEOUT 600)
