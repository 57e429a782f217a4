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
        in_file = 0
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
                if "step" not in ev or "quorum_id" not in ev:
                    sys.exit(f"{path}: a committed step event without its "
                             f"step or quorum_id: {line.strip()}")
                in_file += 1
                first = quorum_of.setdefault(ev["step"], ev["quorum_id"])
                if first != ev["quorum_id"]:
                    sys.exit(f"step {ev['step']} was committed in quorum "
                             f"{first} and in quorum {ev['quorum_id']} "
                             f"({path})")
        if in_file == 0:
            sys.exit(f"{path}: no committed step (were the events shown?)")
        commits += in_file
    print(f"one quorum per step: {len(quorum_of)} steps, {commits} commits")


if __name__ == "__main__":
    main()
