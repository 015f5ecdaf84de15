#!/usr/bin/env python3
"""Plans and runs small configurations drawn at random from a fixed seed and
reports each one's measured / predicted peak memory.

usage: sweep.py --seed S --count N --tolerance T --work DIR

Each configuration draws the family (llama, qwen2, gemma4_text), hidden
size, layers, heads and KV heads, vocabulary, sequence, micro-batch,
gradient accumulation, the FSDP / TP / PP degrees (at most 4 ranks), the
pipeline schedule, the remat mode and whether embeddings are tied; nobody
picks them by hand. Each is planned by parc-plan (fp32, cpu profile) and run
by parc-run for 2 steps. A configuration the planner refuses is drawn again
(and counted). Prints every ratio and the distribution; exits 1 when a ratio
is outside 1 +- T or a run fails.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys


def draw(rng):
    family = rng.choice(["llama", "qwen2", "gemma4_text"])
    head_dim = rng.choice([8, 16, 32])
    heads = rng.choice([2, 4])
    kv = rng.choice([h for h in (1, 2, 4) if heads % h == 0])
    hidden = rng.choice([32, 48, 64, 96])
    layers = rng.randint(1, 4)
    config = {
        "model_type": family,
        "torch_dtype": "float32",
        "hidden_size": hidden,
        "intermediate_size": rng.choice([2, 3, 4]) * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "vocab_size": rng.randint(256, 1000),
        "max_position_embeddings": 512,
        "tie_word_embeddings": rng.random() < 0.5,
    }
    if family == "gemma4_text":
        config.update({
            "num_global_key_value_heads": kv,
            "global_head_dim": head_dim * 2,
            "sliding_window": 8,
            "layer_types": ["sliding_attention"] * (layers - 1) + ["full_attention"],
            "hidden_size_per_layer_input": 0,
            "num_kv_shared_layers": 0,
            "enable_moe_block": False,
        })
    layout = {
        "seq": rng.choice([16, 32, 64, 128]),
        "mbs": rng.choice([1, 2]),
        "accum": rng.choice([1, 2]),
        "fsdp": rng.choice([1, 2]),
        "tp": rng.choice([1, 1, 2]),
        "pp": rng.choice([1, 1, 2]) if layers >= 2 else 1,
        "schedule": rng.choice(["gpipe", "1f1b"]),
        "remat": rng.choice(["none", "full", "selective"]),
    }
    if layout["fsdp"] * layout["tp"] * layout["pp"] > 4:
        layout["fsdp"] = 1
    return config, layout


def plan_args(plan, model, layout, out):
    ranks = layout["fsdp"] * layout["tp"] * layout["pp"]
    micro = layout["accum"] * (2 if layout["pp"] > 1 else 1)
    gbs = layout["mbs"] * layout["fsdp"] * micro
    args = [plan, "--model", model, "--hardware", "cpu", "--gpus", str(ranks),
            "--dtype", "fp32", "--seq", str(layout["seq"]), "--mbs",
            str(layout["mbs"]), "--gbs", str(gbs), "--remat", layout["remat"],
            "--emit-plan", out]
    if layout["tp"] > 1:
        args += ["--tp", str(layout["tp"])]
    if layout["pp"] > 1:
        args += ["--pp", str(layout["pp"]), "--fsdp", str(layout["fsdp"]),
                 "--schedule", layout["schedule"], "--microbatches", str(micro)]
    return args, ranks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--tolerance", type=float, required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--plan", default="parc-plan")
    ap.add_argument("--run", default="parc-run")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = random.Random(a.seed)
    ratios, refused, failed = [], 0, False
    while len(ratios) < a.count:
        config, layout = draw(rng)
        n = len(ratios)
        model = os.path.join(a.work, f"c{n}.json")
        with open(model, "w") as f:
            json.dump(config, f)
        out = os.path.join(a.work, f"c{n}.bin")
        args, ranks = plan_args(a.plan, model, layout, out)
        planned = subprocess.run(args, capture_output=True, text=True)
        if planned.returncode == 1:
            refused += 1
            continue
        log = os.path.join(a.work, f"c{n}.jsonl")
        if os.path.exists(log):
            os.remove(log)
        run = [a.run, out, "--steps", "2", "--quiet", "--log", log]
        if ranks > 1:
            run = [a.run, "--nproc", str(ranks)] + run[1:]
        ran = subprocess.run(run, capture_output=True, text=True)
        desc = (f"{config['model_type']} h{config['hidden_size']} "
                f"L{config['num_hidden_layers']} heads {config['num_attention_heads']}/"
                f"{config['num_key_value_heads']} vocab {config['vocab_size']} "
                f"{'tied' if config['tie_word_embeddings'] else 'untied'} seq {layout['seq']} "
                f"mbs {layout['mbs']} x {layout['accum']} fsdp {layout['fsdp']} "
                f"tp {layout['tp']} pp {layout['pp']}"
                f"{' ' + layout['schedule'] if layout['pp'] > 1 else ''} remat {layout['remat']}")
        if ran.returncode != 0:
            print(f"FAIL c{n} {desc}: parc-run exited {ran.returncode}: {ran.stderr.strip()[-300:]}")
            failed = True
            ratios.append(float("nan"))
            continue
        worst = None
        for line in open(log):
            r = json.loads(line)["peak_ratio"]
            if worst is None or abs(r - 1) > abs(worst - 1):
                worst = r
        ratios.append(worst)
        bad = abs(worst - 1) > a.tolerance
        failed |= bad
        print(f"{'FAIL ' if bad else ''}c{n} {desc}: measured/predicted {worst:.3f}")
    good = [r for r in ratios if r == r]
    print(f"{len(ratios)} configurations ({refused} drawn and refused by the planner): "
          f"measured/predicted min {min(good):.3f} median {statistics.median(good):.3f} "
          f"max {max(good):.3f}")
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
