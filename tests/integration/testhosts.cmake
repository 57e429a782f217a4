# scripts/testhosts.sh (network-namespace test hosts) against a real
# lighthouse and `ftc status`: cut, restore, split, join, and nothing left
# behind. Root only, as make check runs.
ftc_add_test(testhosts_test
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/testhosts_test.sh
                     $<TARGET_FILE:ftc_cli>
                     ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
             TIMEOUT 120 LABELS integration)
# One job over test hosts (ftc run --host per host, a shared lighthouse),
# three groups of two ranks unless said: one group split from the
# lighthouse's host; two groups of one rank split from each other (no
# majority: the job stalls); one group split from the other two, and two
# split from each other with the third reaching both (reports leave one
# out); a training host's link flapping; the chaos schedule (two groups
# of one rank on each of two hosts, each launcher killing or stopping one
# every 3 s, host 2 split from the lighthouse's for 3 s). Each heals and
# ends bit-identical. pair, flap and chaos run the same code paths as the
# others, longer: not again under the sanitizers (docs/decisions.md, CI
# time).
foreach(mode lighthouse peers majority pair flap chaos)
  set(labels integration chaos)
  if(mode MATCHES "^(pair|flap|chaos)$")
    list(APPEND labels nosan)
  endif()
  ftc_add_test(run_hosts_${mode}_test
               COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_hosts_test.sh
                       $<TARGET_FILE:ftc_cli>
                       ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
                       $<TARGET_FILE:train_ddp> ${mode}
               TIMEOUT 240 LABELS ${labels})
endforeach()
# A job that outlives its lighthouse's host: three lighthouses elected
# through a 3-member etcd on test hosts 0-2, two replica groups on 3-4;
# the leader's host dies, then etcd loses its quorum and gets it back.
# Not under the sanitizers (a minute of training; lighthouse_ha_test runs
# the election code there).
ftc_add_test(run_ha_test
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_ha_test.sh
                     $<TARGET_FILE:ftc_cli>
                     ${PROJECT_SOURCE_DIR}/scripts/testhosts.sh
                     $<TARGET_FILE:train_ddp>
             TIMEOUT 240 LABELS integration chaos nosan)
