# `ftc bench ft` end to end with tiny sizes: every section must print its
# JSON lines (quorum and step with a change, both faults, a heal against
# its baseline); the numbers are not checked.
ftc_add_test(ft_bench_test
  COMMAND ftc_cli bench ft --json --quorum-groups 3 --step-groups 3
          --steps 3 --changes 1 --fault-groups 3 --trials 1
          --heal-mib 8 --sources 2 --reps 1
  TIMEOUT 180 LABELS integration threaded
  PASS_REGEX "\"what\":\"quorum\",\"groups\":3,\"kind\":\"change\".*\"what\":\"step\",\"groups\":3,\"kind\":\"change\".*\"fault\":\"kill-9\".*\"fault\":\"sigstop\".*\"what\":\"heal\",\"mib\":8,\"sources\":2"
  FAIL_REGEX "failed")
# Issue 19's smoke test: one process simulating 1,024 replica groups'
# leaders (an event loop, compact answers) completes quorum rounds and a
# leave-and-rejoin on one lighthouse; the times are not checked. Not
# under the sanitizers: slowed several times, the one thread falls behind
# its own heartbeats (ft_bench_test runs the same code with 3 groups).
ftc_add_test(ft_bench_quorum_1024_test
  COMMAND ftc_cli bench ft --json --what quorum --quorum-groups 1024
          --steps 3 --changes 1
  TIMEOUT 300 LABELS integration nosan
  PASS_REGEX "\"groups\":1024,\"kind\":\"fast\",\"samples\":[1-9][0-9]*.*\"groups\":1024,\"kind\":\"change\",\"samples\":[1-9]"
  FAIL_REGEX "failed|Timeout")
# --what partition checks what it needs before it touches anything (the
# harness, the trainer, root): a missing harness is named with its option
# and the bench exits 1 (the run itself needs root and takes a minute:
# README, "Network partitions").
ftc_add_test(ft_bench_partition_needs_test
  COMMAND sh -c "$<TARGET_FILE:ftc_cli> bench ft --what partition --hosts-script /nonexistent/testhosts.sh || echo exit=$?"
  TIMEOUT 30 LABELS integration
  PASS_REGEX "test-host harness /nonexistent/testhosts.sh \\(--hosts-script\\): No such file or directory.*exit=1")
