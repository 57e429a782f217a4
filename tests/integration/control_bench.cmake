# `ftc bench control` end to end, threads and processes, every op: a short
# run must print one JSON line per case (the numbers are not checked).
foreach(mode threads procs)
  if(mode STREQUAL "procs")
    set(flag --procs)
  else()
    set(flag "")
  endif()
  add_test(NAME control_bench_${mode}_test
           COMMAND ftc_cli bench control --ranks 3 --iters 3 ${flag} --json
                   --op barrier,all_gather,all_sum)
  set_tests_properties(control_bench_${mode}_test PROPERTIES
    TIMEOUT 120 LABELS integration
    PASS_REGULAR_EXPRESSION "\"op\":\"all_sum\",\"ranks\":3,.*\"mode\":\"${mode}\""
    FAIL_REGULAR_EXPRESSION "failed")
endforeach()
