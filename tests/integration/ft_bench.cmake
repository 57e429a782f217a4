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
