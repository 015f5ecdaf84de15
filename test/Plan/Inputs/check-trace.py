"""Checks a parc-plan --trace file against the plan's --json document.

    %python %S/Inputs/check-trace.py trace.json plan.json

Fails, saying why, unless the trace is a trace-event JSON object whose
"traceEvents" has, for every process: process and thread names, a compute
and a communication track of "X" events sorted by time that do not overlap,
a "memory" counter ("C") sorted by time whose largest total is the plan's
peak_bytes, totals equal to the sum of the breakdown, and one instant event
"peak: <peak_phase>" at the time of the first counter sample at the peak.
"""

import json
import sys

BREAKDOWN = [
    "sharded_parameters", "unsharded_parameters", "gradients",
    "optimizer_state", "saved_activations", "recompute_working_set",
    "logits_and_loss", "fixed_overhead",
]
EPS = 1e-3  # microseconds


def fail(message):
    sys.exit("check-trace.py: " + message)


with open(sys.argv[1]) as f:
    trace = json.load(f)
with open(sys.argv[2]) as f:
    plan = json.load(f)
if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
    fail("no traceEvents array")
events = trace["traceEvents"]
memory = plan["memory"]
pids = sorted({e["pid"] for e in events})
if not pids:
    fail("no events")
ranks = {r["kind"]: r for r in memory["ranks"]}
overall_peak = 0
for pid in pids:
    mine = [e for e in events if e["pid"] == pid]
    for e in mine:
        if e["ph"] not in ("M", "X", "C", "i"):
            fail("unexpected phase %r" % e["ph"])
        if e["ph"] != "M" and not isinstance(e.get("ts"), (int, float)):
            fail("event without ts: %r" % e)
    meta = {(e["name"], e.get("tid")): e["args"]["name"] for e in mine if e["ph"] == "M"}
    process = meta.get(("process_name", None))
    if not process:
        fail("pid %d has no process_name" % pid)
    kind = process.split(" ")[0]
    if kind not in ranks:
        fail("process %r names no rank kind of the plan" % process)
    tracks = {}
    for (what, tid), name in meta.items():
        if what == "thread_name":
            tracks[name] = tid
    for track in ("compute", "communication"):
        if track not in tracks:
            fail("pid %d has no %s track" % (pid, track))
        steps = [e for e in mine if e["ph"] == "X" and e["tid"] == tracks[track]]
        if not steps:
            fail("%s track of pid %d is empty" % (track, pid))
        end = float("-inf")
        for e in steps:
            if e["dur"] < 0:
                fail("negative duration: %r" % e)
            if e["ts"] < end - EPS:
                fail("%s track overlaps or is unsorted at %r (previous ends at %g)"
                     % (track, e["name"], end))
            end = e["ts"] + e["dur"]
    counter = [e for e in mine if e["ph"] == "C"]
    if not counter or any(e["name"] != "memory" for e in counter):
        fail("pid %d: no memory counter" % pid)
    for a, b in zip(counter, counter[1:]):
        if b["ts"] < a["ts"]:
            fail("memory counter unsorted at ts %g" % b["ts"])
    for e in counter:
        if e["args"]["total"] != sum(e["args"][k] for k in BREAKDOWN):
            fail("memory total is not the sum of its breakdown at ts %g" % e["ts"])
    peak = max(e["args"]["total"] for e in counter)
    rank = ranks[kind]
    if peak != rank["peak_bytes"]:
        fail("memory counter peaks at %d, the plan at %d" % (peak, rank["peak_bytes"]))
    overall_peak = max(overall_peak, peak)
    instants = [e for e in mine if e["ph"] == "i"]
    if len(instants) != 1:
        fail("pid %d: expected one peak instant, got %d" % (pid, len(instants)))
    if instants[0]["name"] != "peak: " + rank["peak_phase"]:
        fail("peak instant %r, the plan's peak phase is %r"
             % (instants[0]["name"], rank["peak_phase"]))
    first = next(e for e in counter if e["args"]["total"] == peak)
    if abs(first["ts"] - instants[0]["ts"]) > EPS:
        fail("peak instant at %g, the counter peaks first at %g"
             % (instants[0]["ts"], first["ts"]))
if overall_peak != memory["peak_bytes"]:
    fail("trace peak %d, plan peak %d" % (overall_peak, memory["peak_bytes"]))
# The step ends with the optimizer, at the predicted step time.
last = max(e["ts"] + e.get("dur", 0) for e in events if e["ph"] == "X")
step_us = plan["cost"]["step_time_s"] * 1e6
if abs(last - step_us) > 1e-6 * step_us + EPS:
    fail("trace ends at %g us, the step takes %g us" % (last, step_us))
print("check-trace.py: ok, %d events, peak %d bytes" % (len(events), overall_peak))
