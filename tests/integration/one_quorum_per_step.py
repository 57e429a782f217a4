"""No step of a job was committed by two quorums (split brain): reads the
FTC_EVENT step lines that `ftc run --show-events` printed (one file per
launcher) and fails when two commits of one step name different quorum
ids. Every replica group's rank 0 reports each commit with the id of the
quorum it committed in.

usage: one_quorum_per_step.py RUN_OUTPUT...
"""
import json
import sys


def main():
    quorum_of = {}  # step -> the quorum id its first commit named
    commits = 0
    for path in sys.argv[1:]:
        with open(path, errors="replace") as f:
            for line in f:
                at = line.find("FTC_EVENT ")
                if at < 0:
                    continue
                try:
                    ev = json.loads(line[at + len("FTC_EVENT "):])
                except ValueError:
                    continue
                if ev.get("kind") != "step" or not ev.get("committed"):
                    continue
                commits += 1
                first = quorum_of.setdefault(ev["step"], ev["quorum_id"])
                if first != ev["quorum_id"]:
                    sys.exit(f"step {ev['step']} was committed in quorum "
                             f"{first} and in quorum {ev['quorum_id']} "
                             f"({path})")
    if commits == 0:
        sys.exit("no committed step in " + " ".join(sys.argv[1:]))
    print(f"one quorum per step: {len(quorum_of)} steps, {commits} commits")


if __name__ == "__main__":
    main()
