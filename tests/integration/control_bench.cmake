# `ftc bench control` end to end, threads and processes, every op: a short
# run must print one JSON line per case (the numbers are not checked).
foreach(mode threads procs)
  if(mode STREQUAL "procs")
    set(flag --procs)
  else()
    set(flag "")
  endif()
  ftc_add_test(control_bench_${mode}_test
    COMMAND ftc_cli bench control --ranks 3 --iters 3 ${flag} --json
            --op barrier,all_gather,all_sum
    TIMEOUT 120 LABELS integration
    PASS_REGEX "\"op\":\"all_sum\",\"ranks\":3,.*\"mode\":\"${mode}\""
    FAIL_REGEX "failed")
endforeach()
# Issue 3's scale target: one barrier of 1,024 ranks (threads, each with
# its own connection) on one store. About a second on 2 cores; it needs
# about 2,100 descriptors (the bench raises its soft limit and says so
# when the hard one is too low).
ftc_add_test(control_bench_1024_test
  COMMAND ftc_cli bench control --op barrier --ranks 1024 --iters 3 --json
  TIMEOUT 300 LABELS integration
  PASS_REGEX "\"op\":\"barrier\",\"ranks\":1024,"
  FAIL_REGEX "failed")
