"""Plans random layouts (fixed seed) three ways -- remat none, full and
budget -- and checks what the budgeted remat promises:

  * it plans wherever the plan without remat plans;
  * where the plan without remat fits within the margin, it recomputes
    nothing and peaks where that plan does;
  * where full remat fits, it fits too, within the device less the margin,
    and its step is no slower than full remat's.

    check-remat-budget.py DRAWS PARC-PLAN MODELS-DIR

Prints one line per draw; fails naming the draw that breaks a promise.
"""

import json
import os
import random
import subprocess
import sys

draws = int(sys.argv[1])
tool = sys.argv[2]
models = sys.argv[3]


def plan(args):
    done = subprocess.run([tool, "--json"] + args, capture_output=True, text=True)
    doc = json.loads(done.stdout)
    return doc


def fail(draw, message):
    sys.stderr.write("check-remat-budget.py: draw %d: %s\n" % (draw, message))
    sys.exit(1)


rng = random.Random(20261206)
counts = {"fits_plain": 0, "budget_only": 0, "both": 0, "neither": 0}
speedups = []
for draw in range(draws):
    model = rng.choice(["llama-3.1-8b", "qwen2.5-0.5b", "gemma4-31b", "llama-3.1-70b"])
    hardware = rng.choice(["h100-80gb", "a100-80gb", "h200-141gb", "b200-192gb"])
    tp = rng.choice([1, 1, 2])
    fsdp = 8 // tp
    mbs = rng.choice([1, 2, 4])
    seq = rng.choice([2048, 4096, 8192])
    accumulation = rng.choice([1, 2])
    margin = rng.choice(["0", "0.05", "0.1", "0.2"])
    args = [
        "--model", os.path.join(models, model + ".json"),
        "--hardware", hardware, "--gpus", "8", "--seq", str(seq),
        "--mbs", str(mbs), "--gbs", str(mbs * fsdp * accumulation),
        "--tp", str(tp), "--fsdp", str(fsdp),
        "--set", "parallel.remat_margin=" + margin,
    ]
    if tp > 1:
        args += ["--sequence-parallel=true", "--loss-parallel=true"]
    plain = plan(args + ["--remat", "none"])
    full = plan(args + ["--remat", "full"])
    budget = plan(args + ["--remat", "budget"])
    name = "%s on 8 x %s, tp %d, mbs %d, seq %d, accumulation %d, margin %s" % (
        model, hardware, tp, mbs, seq, accumulation, margin)
    if (plain["status"] == "error") != (budget["status"] == "error"):
        fail(draw, "%s: plain %s, budget %s" % (name, plain["status"], budget["status"]))
    if plain["status"] == "error":
        print("draw %d: %s: refused" % (draw, name))
        continue
    capacity = budget["memory"]["capacity_bytes"]
    target = capacity * (1 - float(margin))
    peak = budget["memory"]["device_peak_bytes"]
    if plain["memory"]["device_peak_bytes"] <= target:
        counts["fits_plain"] += 1
        if budget["cost"]["flops"]["recompute"] != 0:
            fail(draw, "%s: fits without remat, yet the budget recomputes" % name)
        if peak != plain["memory"]["device_peak_bytes"]:
            fail(draw, "%s: fits without remat, yet the budget peaks elsewhere" % name)
    elif full["status"] == "fits" and full["memory"]["device_peak_bytes"] <= target:
        counts["both"] += 1
        if peak > target:
            fail(draw, "%s: full remat fits within the margin, the budget peaks at %d > %d"
                 % (name, peak, target))
        if budget["cost"]["step_time_s"] > full["cost"]["step_time_s"] * 1.0001:
            fail(draw, "%s: budget step %.4f s slower than full remat's %.4f s"
                 % (name, budget["cost"]["step_time_s"], full["cost"]["step_time_s"]))
        speedups.append(full["cost"]["step_time_s"] / budget["cost"]["step_time_s"])
    elif budget["status"] == "fits" and peak <= target:
        counts["budget_only"] += 1
    else:
        counts["neither"] += 1
    step = budget["cost"]["step_time_s"] if budget.get("cost") else float("nan")
    print("draw %d: %s: %s, peak %.2f of %.2f GiB target, step %.4f s" % (
        draw, name, budget["status"], peak / 2**30, target / 2**30, step))
print("checked %d draws: %s" % (draws, counts))
if speedups:
    print("full remat's step over the budget's where both fit: min %.3f, median %.3f, max %.3f"
          % (min(speedups), sorted(speedups)[len(speedups) // 2], max(speedups)))
