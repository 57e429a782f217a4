#!/usr/bin/env bash
# Style checks run by `make check`: clang-format conformance and banned
# functions (as curl's checksrc does). Prints every violation, exits 1 if any.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
                       '*.c' '*.h' | sort -u)
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
    echo "lint: $f is not clang-formatted (run: clang-format -i $f)"
    status=1
  fi
done
# Unbounded or unsafe string/number functions are banned everywhere; raw
# allocation is banned outside src/base (use ftc__malloc and friends) and
# the plugins (device/xpu, pg/nccl), shared objects that do not link libftc.
banned='\b(strcpy|strcat|sprintf|vsprintf|gets|atoi|atol|atoll|strtok)\s*\('
if grep -nE "$banned" "${files[@]}" /dev/null; then
  echo "lint: banned function above (see docs/decisions.md)"
  status=1
fi
raw_alloc='(^|[^_a-z])(malloc|calloc|realloc|free|strdup)\s*\('
if grep -nE "$raw_alloc" $(printf '%s\n' "${files[@]}" | grep '^src/' | \
     grep -vE '^src/(base|device/xpu|pg/nccl)/') /dev/null | grep -v 'ftc__'; then
  echo "lint: raw allocation outside src/base (use ftc__malloc etc.)"
  status=1
fi
# The per-layer index of docs/decisions.md is written from its headings.
python3 scripts/decisions_index.py --check || status=1
# The naming rule: ftc_ only for names declared in include/ftc/.
python3 scripts/lint_names.py || status=1
# A merge's conflict markers left in any tracked text file.
if git grep -nE '^(<<<<<<<|>>>>>>>) ' -- . ':!*.py' ; then
  echo "lint: merge conflict markers above"
  status=1
fi
exit $status
