#!/usr/bin/env python3
"""The naming rule (docs/decisions.md, "API: one naming rule, one teardown
family, outputs before the timeout"): a name with the public prefix `ftc_`
is declared in include/ftc/; everything internal to the library, the CLI,
the tests and the benches is `ftc__`. Prints each
violation as file:line: name and exits 1 if there is any.

String literals are skipped: they carry wire names (Prometheus metrics such
as ftc_lighthouse_quorums_total) and the exported plugin entry symbol, which
are not C identifiers of this tree."""
import re
import subprocess
import sys

files = subprocess.run(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard",
     "*.c", "*.h"], capture_output=True, text=True, check=True).stdout.split()
public = set()
for f in files:
    if f.startswith("include/ftc/"):
        public |= set(re.findall(r"\bftc_[a-z][a-z0-9_]*", open(f).read()))

string = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# A trailing underscore is a prefix in a comment or a token paste, not a name.
name = re.compile(r"\bftc_[a-z][a-z0-9_]*[a-z0-9]\b")
bad = 0
for f in files:
    if f.startswith("include/"):
        continue
    for n, line in enumerate(open(f), 1):
        for m in name.findall(string.sub('""', line)):
            if m not in public:
                print(f"{f}:{n}: {m} has the public prefix but is not "
                      "declared in include/ftc (internal names are ftc__)")
                bad += 1
sys.exit(1 if bad else 0)
