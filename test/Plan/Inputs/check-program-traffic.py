"""Checks that the lowered programs and the cost model agree on the traffic.

The cost model replays its own schedule; `--lower-to-schedule` writes the
programs the runtime executes. Both must move the same bytes: this sums the
FSDP all-gathers (result, compute dtype), the FSDP reduce-scatters (operand,
reduce dtype) and the replicas' all-reduces over @dp of the program of the
cost model's slowest stage (`@all_ranks` without a pipeline) and compares
them with the `--json` document's `cost` numbers.

    parc-translate --import-plan plan.bin > plan.mlir
    parc-plan ... --json | %python check-program-traffic.py plan.mlir
"""

import json
import re
import sys

BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i8": 1}
COLLECTIVE = re.compile(
    r"shard\.(all_gather|reduce_scatter|all_reduce) .* on @(\w+) .*"
    r": tensor<(\d+)x(\w+)> -> tensor<(\d+)x(\w+)>")
PROGRAM = re.compile(r"parc\.program @(\w+)")

cost = json.load(sys.stdin)["cost"]
stage = cost["pp"]["slowest_stage"]
want_program = "stage_%d" % stage if cost["pp"]["stages"] > 1 else "all_ranks"

program = None
traffic = {"all_gather": 0, "reduce_scatter": 0, "dp": 0}
with open(sys.argv[1]) as f:
    for line in f:
        m = PROGRAM.search(line)
        if m:
            program = m.group(1)
            continue
        m = COLLECTIVE.search(line)
        if not m or program != want_program:
            continue
        kind, grid, n_in, t_in, n_out, t_out = m.groups()
        if grid == "fsdp" and kind == "all_gather":
            traffic["all_gather"] += int(n_out) * BYTES[t_out]
        elif grid == "fsdp" and kind == "reduce_scatter":
            traffic["reduce_scatter"] += int(n_in) * BYTES[t_in]
        elif grid == "dp" and kind == "all_reduce":
            traffic["dp"] += int(n_in) * BYTES[t_in]

failed = False
for name, got, want in [
    ("all-gather bytes", traffic["all_gather"], cost["all_gather_bytes"]),
    ("reduce-scatter bytes", traffic["reduce_scatter"], cost["reduce_scatter_bytes"]),
    ("dp all-reduce bytes", traffic["dp"], cost["dp"]["bytes"]),
]:
    ok = got == want
    failed |= not ok
    print("%s: @%s %s %d, cost model %d" % ("PASS" if ok else "FAIL",
                                            want_program, name, got, want))
sys.exit(1 if failed else 0)
