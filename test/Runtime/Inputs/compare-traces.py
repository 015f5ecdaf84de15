#!/usr/bin/env python3
"""Lines up the planner's trace with the runtime's: one picture of predicted
against measured, program step by program step.

usage: compare-traces.py PLAN_TRACE.json RUN_TRACE.json

PLAN_TRACE is parc-plan --trace (one process per rank kind, in program
order), RUN_TRACE parc-run --trace (one process per rank, named after its
program). Both tag each event with the program step it times. For every
step the planner timed, each rank of that program must have executed it in
the first training step under the same name. Prints, per program, how many
steps matched and the measured / predicted total of compute time, then PASS,
or FAIL with the first step that does not line up.
"""
import json
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


plan = load(sys.argv[1])
run = load(sys.argv[2])

# The planner's processes are its rank kinds in program order; the runtime's
# name their program: "rank 1 (@stage_0)".
kinds = sorted({e["pid"] for e in plan if e.get("ph") == "X"})
ranks = {}
for e in run:
    if e.get("ph") == "M" and e.get("name") == "process_name":
        m = re.search(r"\(@(\w+)\)", e["args"]["name"])
        if m:
            ranks[e["pid"]] = m.group(1)
programs = sorted(set(ranks.values()),
                  key=lambda n: int(n.split("_")[1]) if n.startswith("stage_") else 0)
if len(programs) != len(kinds):
    print(f"FAIL: the plan has {len(kinds)} rank kinds, the run {len(programs)} programs")
    sys.exit(1)

executed = {}  # (pid, program step) -> event of the first training step
for e in run:
    if e.get("ph") == "X" and e["args"].get("step") == 1:
        executed.setdefault((e["pid"], e["args"]["program_step"]), e)

failed = False
for kind, program in zip(kinds, programs):
    steps = [e for e in plan if e.get("ph") == "X" and e["pid"] == kind
             and "program_step" in e.get("args", {})]
    pids = [pid for pid, name in ranks.items() if name == program]
    predicted = sum(e["dur"] for e in steps if e.get("cat") == "compute")
    for pid in pids:
        measured = 0.0
        for e in steps:
            got = executed.get((pid, e["args"]["program_step"]))
            if got is None or got["name"] != e["name"]:
                print(f"FAIL: @{program} step {e['args']['program_step']}: "
                      f"planned '{e['name']}', rank pid {pid} executed "
                      f"{repr(got['name']) if got else 'nothing'}")
                failed = True
                break
            if e.get("cat") == "compute":
                measured += got["dur"]
        else:
            print(f"@{program} pid {pid}: {len(steps)} planned steps executed "
                  f"under their names; compute measured/predicted "
                  f"{measured / predicted if predicted else 0:.3g}")
        if failed:
            break
    if failed:
        break
print("FAIL" if failed else "PASS")
sys.exit(1 if failed else 0)
