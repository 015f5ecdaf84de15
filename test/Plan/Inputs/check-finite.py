"""Checks that every number in a parc-plan --json report is finite and that
no byte count, FLOP count or time is negative (headroom, a difference, may
be). Prints one line per offending field and exits 1 if there is one."""
import json
import math
import sys

report = json.load(sys.stdin)
bad = []
count = 0


def walk(value, path):
    global count
    if isinstance(value, dict):
        for key, item in value.items():
            walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            walk(item, f"{path}[{index}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        count += 1
        if not math.isfinite(value) or (value < 0 and "headroom" not in path):
            bad.append(f"{path} = {value}")


walk(report, "")
for line in bad:
    print("bad number:", line)
print(f"{count} numbers, {len(bad)} bad")
sys.exit(1 if bad or count == 0 else 0)
