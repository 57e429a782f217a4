#!/usr/bin/env python3
"""Regenerates the per-layer index at the top of docs/decisions.md.

The index lies between the lines `<!-- index start -->` and
`<!-- index end -->`; everything else in the file is left as it is. Each
`## ` heading outside the index is an entry. Its layer is, in this order:
  - a hint on the first line below the heading that is not blank,
    `Layer: NAME` (or `<!-- layer: NAME -->`), for titles whose first words
    do not say it; NAME is a key or a heading of LAYERS below, in any case,
    a part in parentheses ignored ("Layer: API (all layers)");
  - else the first entry of PREFIXES that starts the title (whole words,
    any case), e.g. "Store server: ..." or "pg: ...";
  - else "Other", and a warning names the heading.
Links use the anchors GitHub gives headings (lowercase, punctuation
dropped, spaces to '-', '-1', '-2', ... for repeats).

  scripts/decisions_index.py            rewrite the index
  scripts/decisions_index.py --check    exit 1 if the index is stale
                                        (scripts/lint.sh runs this)
  --file PATH                           another file (tests)
"""
import argparse
import os
import re
import sys
import unicodedata

# key, heading in the index, where the code is.
LAYERS = [
    ("api", "Public API (all layers)", "include/ftc/"),
    ("build", "Build and tooling", "CMakeLists.txt, cmake/, scripts/"),
    ("base", "Base", "src/base/"),
    ("store-server", "Store server", "src/store/server/"),
    ("store-client", "Store client", "src/store/client/"),
    ("control", "Control collectives", "src/control/"),
    ("pg", "Process groups (pg)", "src/pg/, src/pg/tcp/"),
    ("device", "Devices", "src/device/"),
    ("quorum", "ft: quorum", "src/ft/quorum/"),
    ("lighthouse", "ft: lighthouse", "src/ft/lighthouse/"),
    ("manager", "ft: manager", "src/ft/manager/"),
    ("heal", "ft: heal", "src/ft/heal/"),
    ("algo", "algo: training algorithms", "src/algo/"),
    ("tools", "Tools and CLI", "tools/ftc/"),
    ("python", "Python package", "python/, pyproject.toml"),
    ("examples", "Examples and the demo", "examples/, tools/ftc/cmd_demo.c"),
    ("tests", "Tests", "tests/"),
    ("bench", "Benchmarks and performance", "bench/, tools/ftc/bench/"),
]
OTHER = "Other"

# Title prefix -> layer key; the longest matching prefix wins.
PREFIXES = {
    "API": "api",
    "Build": "build",
    "Store server": "store-server",
    "Store waiters": "store-server",
    "Store client": "store-client",
    "Store bench": "bench",
    "Store targets": "bench",
    "Control": "control",
    "pg": "pg",
    "device": "device",
    "Quorum": "quorum",
    "Lighthouse": "lighthouse",
    "Dashboard": "lighthouse",
    "Manager": "manager",
    "Healing": "heal",
    "algo": "algo",
    "Launcher": "tools",
    "CLI": "tools",
    "Bench": "bench",
    "Examples": "examples",
    "Tests": "tests",
    "Python": "python",
}

START = "<!-- index start -->"
END = "<!-- index end -->"
HINT = re.compile(r"^(?:<!--\s*)?layer:\s*(.*?)\s*(?:-->)?\s*$", re.I)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def heading_text(title):
    """The text GitHub renders for a heading's markdown."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links, images
    t = re.sub(r"<[^>]+>", "", t)  # inline HTML
    return t.replace("`", "")


def slug(title):
    out = []
    for ch in heading_text(title).lower():
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def layer_of_hint(name):
    """The key NAME stands for (a key or a heading of LAYERS), or None."""
    want = re.sub(r"\(.*?\)", "", name).strip().lower()
    for key, label, _ in LAYERS:
        if want in (key, label.lower(), re.sub(r"\(.*?\)", "",
                                               label).strip().lower()):
            return key
    return None


def layer_of_prefix(title):
    for prefix in sorted(PREFIXES, key=len, reverse=True):
        if re.match(re.escape(prefix) + r"\b", title, re.I):
            return PREFIXES[prefix]
    return None


def parse(lines, start, end):
    """Entries outside the index as (title, anchor, layer key or None, why)."""
    seen = {}
    entries = []
    fence = None
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif m.group(1)[0] == fence:
                fence = None
            continue
        m = HEADING.match(line) if fence is None else None
        if not m:
            continue
        title = m.group(2)
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchor = base if n == 0 else "%s-%d" % (base, n)
        if len(m.group(1)) != 2 or start <= i <= end:
            continue
        why = None
        key = layer_of_prefix(title)
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        hint = HINT.match(lines[j]) if j < len(lines) else None
        if hint:
            key = layer_of_hint(hint.group(1))
            if key is None:
                why = "unknown layer '%s'" % hint.group(1)
        if key is None and why is None:
            why = "no known title prefix and no layer hint"
        entries.append((title, anchor, key, why))
    return entries


def render(entries):
    out = [START,
           "<!-- Generated by scripts/decisions_index.py from the headings "
           "below; do not edit by hand. -->"]
    groups = [(k, label, where) for k, label, where in LAYERS]
    groups.append((None, OTHER, None))
    for key, label, where in groups:
        mine = [e for e in entries if e[2] == key]
        if not mine:
            continue
        out.append("")
        out.append("**%s**%s" % (label, " (%s)" % where if where else ""))
        for title, anchor, _, _ in mine:
            out.append("- [%s](#%s)" % (title, anchor))
    out.append(END)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the index is stale, change nothing")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--file", default=os.path.join(root, "docs",
                                                   "decisions.md"))
    args = ap.parse_args()
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    try:
        start, end = lines.index(START), lines.index(END)
    except ValueError:
        print("%s: no '%s' ... '%s' lines" % (args.file, START, END),
              file=sys.stderr)
        return 1
    if end < start:
        print("%s: the index markers are out of order" % args.file,
              file=sys.stderr)
        return 1
    entries = parse(lines, start, end)
    for title, _, _, why in entries:
        if why:
            print("%s: '%s' goes under %s: %s (add a line 'Layer: KEY' "
                  "below it; keys: %s)"
                  % (args.file, title, OTHER, why,
                     ", ".join(k for k, _, _ in LAYERS)), file=sys.stderr)
    new = "\n".join(lines[:start] + render(entries) + lines[end + 1:])
    if new == text:
        return 0
    if args.check:
        print("%s: the index is stale (run scripts/decisions_index.py)"
              % args.file, file=sys.stderr)
        return 1
    with open(args.file, "w", encoding="utf-8") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
