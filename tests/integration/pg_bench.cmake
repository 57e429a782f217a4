# `ftc bench pg` end to end with its default options (3 ranks, every op, a
# size that pipelines and one that does not): every op must print its JSON
# line for the last size; the numbers are not checked. A second run sets
# every tuning option the bench passes to ftc_pg_opts.
ftc_add_test(pg_bench_test
  COMMAND ftc_cli bench pg --ranks 3 --sizes 4K,300K --iters 2 --budget 1
          --json
  TIMEOUT 120 LABELS integration
  PASS_REGEX "\"op\":\"allreduce\",\"ranks\":3,\"bytes\":307200.*\"op\":\"broadcast\",\"ranks\":3,\"bytes\":307200.*\"op\":\"allgather\",\"ranks\":3,\"bytes\":307200.*\"op\":\"reduce_scatter\",\"ranks\":3,\"bytes\":307200.*\"op\":\"alltoall\",\"ranks\":3,\"bytes\":307200"
  FAIL_REGEX "failed|invalid")
ftc_add_test(pg_bench_tuned_test
  COMMAND ftc_cli bench pg --ranks 2 --op allreduce --sizes 1M --iters 2
          --budget 1 --json --algo ring --streams 2 --segment 64K --spin 0
  TIMEOUT 120 LABELS integration
  PASS_REGEX "\"op\":\"allreduce\",\"ranks\":2,\"bytes\":1048576"
  FAIL_REGEX "failed|invalid")
# --backend: a missing backend prints one line and the others run; rows
# name their backend.
ftc_add_test(pg_bench_backends_test
  COMMAND ftc_cli bench pg --ranks 2 --op allreduce --sizes 4K --iters 2
          --budget 1 --json --backend nosuch,tcp
  TIMEOUT 120 LABELS integration
  PASS_REGEX "nosuch: not available: .*libftc_pg_nosuch.*\"backend\":\"tcp\",\"op\":\"allreduce\",\"ranks\":2,\"bytes\":4096|\"backend\":\"tcp\",\"op\":\"allreduce\",\"ranks\":2,\"bytes\":4096.*nosuch: not available: .*libftc_pg_nosuch"
  FAIL_REGEX "failed|invalid")
