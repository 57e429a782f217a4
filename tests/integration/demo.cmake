# `ftc demo` with the real example trainers under injected kills (both
# algorithms): the training loop end to end.
ftc_add_test(demo_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/demo_test.c
             KITS run
             ARGS $<TARGET_FILE:ftc_cli> $<TARGET_FILE:train_ddp>
             DEPENDS ftc_cli train_ddp train_diloco ft_minimal
             LABELS integration TIMEOUT 600)
