"""Checks a parc-plan --auto --json document against itself and, given the
--json document of the emitted recipe planned again, against that plan.

    check-auto.py search.json                 # the counts add up, ranked in order
    check-auto.py search.json winner.json     # the winner plans to its numbers

Fails naming what disagrees.
"""

import json
import sys


def fail(message):
    sys.stderr.write("check-auto.py: %s\n" % message)
    sys.exit(1)


search = json.load(open(sys.argv[1]))["search"]
counts = search["counts"]
parts = (
    counts["refused"]
    + counts["planned_oom"]
    + counts["implied_oom"]
    + counts["state_oom"]
    + counts["dominated"]
    + counts["ranked"]
)
if parts != counts["enumerated"]:
    fail("refused + OOM + dominated + ranked = %d, enumerated %d" % (parts, counts["enumerated"]))
if counts["predicted_oom"] != counts["planned_oom"] + counts["implied_oom"] + counts["state_oom"]:
    fail("predicted_oom is not planned_oom + implied_oom + state_oom")
if sum(r["count"] for r in search["refusals"]) != counts["refused"]:
    fail("the refusals' counts do not add up to %d" % counts["refused"])
ranked = search["ranked"]
steps = [r["step_time_s"] for r in ranked]
if steps != sorted(steps):
    fail("ranked plans are not fastest first: %s" % steps)
for r in ranked:
    if r["headroom_bytes"] < 0:
        fail("ranked plan %d does not fit" % r["rank"])
    if r["peak_bytes"] != max(p["peak_bytes"] for p in r["peaks"]):
        fail("ranked plan %d: peak_bytes is not its largest rank kind's" % r["rank"])
    shards = r["fsdp"] * r["tp"] * r["pp"]
    if r["peak_bytes"] < search["state_bytes"] / shards:
        fail("ranked plan %d peaks below the sharded-state bound the search prunes with" % r["rank"])
    if (r["rank"] == 1) != (r["loses_on"] is None):
        fail("ranked plan %d: loses_on" % r["rank"])

if len(sys.argv) > 2:
    plan = json.load(open(sys.argv[2]))
    winner = ranked[0]
    if plan["status"] != "fits":
        fail("the emitted recipe plans to status %s" % plan["status"])
    # The search ranks by device memory: what the allocator reserves.
    if plan["memory"]["device_peak_bytes"] != winner["peak_bytes"]:
        fail(
            "the emitted recipe peaks at %d bytes, the search reported %d"
            % (plan["memory"]["device_peak_bytes"], winner["peak_bytes"])
        )
    peaks = [(r["kind"], r["device_peak_bytes"]) for r in plan["memory"]["ranks"]]
    if peaks != [(p["kind"], p["peak_bytes"]) for p in winner["peaks"]]:
        fail("per rank kind: %s, the search reported %s" % (peaks, winner["peaks"]))
    if plan["cost"]["step_time_s"] != winner["step_time_s"]:
        fail(
            "the emitted recipe steps in %r s, the search reported %r"
            % (plan["cost"]["step_time_s"], winner["step_time_s"])
        )
    for key in ("dp", "fsdp", "tp", "pp", "micro_batch_size", "remat",
                "fsdp_reshard_after_forward", "fsdp_grad_sync"):
        if plan["plan"][key] != winner[key]:
            fail("%s: the emitted recipe plans %r, the search %r" % (key, plan["plan"][key], winner[key]))
