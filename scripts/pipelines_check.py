#!/usr/bin/env python3
"""The check of `scripts/flood.sh --pipelines`: MEMTRACK OUT_DIR STATS_JSON ROUNDS.

Every process that exec'd one of the hunt's programs must be in the timeline (one exec of each
program a round) and have, after its exec, as many events in the artifact as the other processes
of that program (they all read the same input), and more than none; git's work depends on the
worktree, so a git needs only some events. Prints one summary line, then `PROBLEM ...` lines;
exits 1 when there is a problem.
"""
import collections
import glob
import json
import subprocess
import sys

PROGRAMS = {"wc", "sort", "head", "seq", "tr", "cut", "git"}


def dump(memtrack, *args):
    p = subprocess.run([memtrack, "dump", *args], check=True, capture_output=True, text=True)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def main():
    memtrack, out, stats_path, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    (timeline,) = glob.glob(out + "/*.MemtrackTimeline.msgpack")
    (artifact,) = glob.glob(out + "/*.MemtrackArtifact.msgpack")
    execs = {}  # pid -> (program, time of its last exec), or None: not one of the hunt's
    for e in dump(memtrack, "--timeline", timeline):
        if e["type"] == "exec":
            name = e["path"].rsplit("/", 1)[-1]
            execs[e["pid"]] = (name, e["time"]) if name in PROGRAMS else None
    counts = collections.Counter()
    for e in dump(memtrack, artifact):
        x = execs.get(e["pid"])
        if x and e["timestamp"] >= x[1]:
            counts[e["pid"]] += 1
    by_program = collections.defaultdict(dict)
    for pid, x in execs.items():
        if x:
            by_program[x[0]][pid] = counts[pid]
    problems = []
    for name in sorted(PROGRAMS):
        got = by_program.get(name, {})
        if len(got) != rounds:
            problems.append(f"{name}: {len(got)} execs in the timeline, expected {rounds}")
        usual = collections.Counter(got.values()).most_common(3)
        common = usual[0][0] if usual else 0
        if name != "git" and common == 0:
            problems.append(f"{name}: no events at all")
        for pid, n in sorted(got.items()):
            if n == 0 or (name != "git" and n != common):
                problems.append(f"{name} pid {pid}: {n} events after its exec (the others: {usual})")
    s = json.load(open(stats_path))
    if s.get("loader_hooks_missed"):
        problems.append(f"{s['loader_hooks_missed']} exec'd processes never held by the loader's hook "
                        f"(untrapped {s['loader_missed_untrapped']}, rejected {s['loader_missed_rejected']}, "
                        f"unheld {s['loader_missed_unheld']}, no hook {s['loader_missed_no_hook']})")
    if s["dropped"]:
        problems.append(f"{s['dropped']} records dropped")
    print(f"execs={sum(len(v) for v in by_program.values())} events={sum(counts.values())} "
          f"new_code_stops={s['new_code_stops']} spawn_stops={s['spawn_stops']} dropped={s['dropped']} "
          f"holds_escaped={s['holds_escaped']} spawn_unstopped={s['spawn_unstopped']} "
          f"loader_hooks_missed={s.get('loader_hooks_missed')}")
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
