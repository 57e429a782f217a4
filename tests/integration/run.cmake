# `ftc run` (the launcher): the real ftc binary runs run_fake_trainer, a
# stand-in trainer that follows the launcher contract; plus unit tests of
# the launcher's pure parts (tools/ftc/run/run_*.c).
add_executable(run_fake_trainer ${CMAKE_CURRENT_LIST_DIR}/run_fake_trainer.c)
foreach(t run_cli_test run_restart_test run_inject_test run_signal_test)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${t}.c)
    ftc_add_test(${t}
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                 KITS run DEPENDS ftc_cli run_fake_trainer
                 ARGS $<TARGET_FILE:ftc_cli> $<TARGET_FILE:run_fake_trainer>
                 LABELS integration TIMEOUT 120)
  endif()
endforeach()
set(RUN_PARTS event lines inject stats env opts)
list(TRANSFORM RUN_PARTS REPLACE "(.+)" "${PROJECT_SOURCE_DIR}/tools/ftc/run/run_\\1.c")
ftc_add_test(run_parts_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/run_parts_test.c ${RUN_PARTS}
                     ${PROJECT_SOURCE_DIR}/tools/ftc/cli_args.c
             LABELS unit TIMEOUT 60)
target_include_directories(run_parts_test PRIVATE ${PROJECT_SOURCE_DIR}/tools/ftc)
# A finished job run again under its name: the real trainer's groups end
# ("ended") rather than train it again.
ftc_add_test(run_finished_test
             SOURCES ${CMAKE_CURRENT_LIST_DIR}/run_finished_test.c
             KITS run
             ARGS $<TARGET_FILE:ftc_cli> $<TARGET_FILE:train_ddp>
             DEPENDS ftc_cli train_ddp train_diloco
             LABELS integration TIMEOUT 300)
