#!/usr/bin/env python3
"""Checks that parc-run executed its plan: every rank ran every step of its
program, in program order, once per training step, and nothing else.

usage: check-executed.py LOWERED.mlir TRACE.json

LOWERED.mlir is the planner's own IR of the plan (parc-plan --emit-mlir),
TRACE.json what parc-run --trace wrote. The expected sequence is read from
the IR's parc.program ops with this script's own parser, not from plan.bin,
so the compiler's text and the runtime's execution are compared end to end.
Prints one line per rank and PASS, or FAIL with the first difference.
"""
import json
import re
import sys

# parc.alloc kinds as plan.bin's AllocKind names them.
ALLOC_KINDS = {"gradients": "Gradients", "gradient_shards": "GradientShards",
               "logits": "Logits"}


def expected_programs(path):
    programs, current, origin = {}, None, {}
    for line in open(path):
        text = line.strip()
        m = re.match(r"parc\.program @(\w+) ", text)
        if m:
            current = programs.setdefault(m.group(1), [])
            origin = {}
            continue
        if current is None:
            continue
        if text == "}":
            current = None
            continue
        result = re.match(r"(%[\w.]+) = ", text)
        result = result.group(1) if result else None
        body = text.split(" = ", 1)[1] if result else text
        m = re.match(r"parc\.buffer (\w+) \"([^\"]*)\"", body)
        if m:
            origin[result] = ("buffer", m.group(1), m.group(2))
            current.append(f"buffer {m.group(1)} {m.group(2) or 'root'}")
            continue
        m = re.match(r"parc\.(forward|backward|recompute)_step \"([^\"]*)\"(?: part \"(\w+)\")?", body)
        if m:
            what = m.group(2) or ("embedding" if m.group(3) == "head" else "loss")
            current.append(f"{m.group(1)} {what}")
            continue
        m = re.match(r"parc\.save \"([^\"]*)\"(?: part \"(\w+)\")?", body)
        if m:
            what = m.group(1) or ("embedding" if m.group(2) == "head" else "loss")
            origin[result] = ("save", None, what)
            current.append(f"save {what}")
            continue
        m = re.match(r"parc\.alloc (\w+) \"([^\"]*)\"", body)
        if m:
            kind = ALLOC_KINDS[m.group(1)]
            origin[result] = ("alloc", kind, m.group(2))
            current.append(f"alloc {kind} {m.group(2) or 'root'}")
            continue
        m = re.match(r"parc\.free (%[\w.]+)", body)
        if m:
            kind, buf, of = origin[m.group(1)]
            if kind == "save":
                current.append(f"free saved {of}")
            elif kind == "alloc":
                current.append(f"free {buf} {of or 'root'}")
            else:
                current.append(f"free {of or 'root'}")
            continue
        m = re.match(r"parc\.wait (%[\w.]+)", body)
        if m:
            kind, buf, of = origin[m.group(1)]
            what = "reduce-scatter" if buf == "gradient" else "all-gather"
            current.append(f"wait {what} {of or 'root'}")
            continue
        if body.startswith("parc.clip_grad_norm"):
            current.append("clip grad norm")
            continue
        if body.startswith("parc.optimizer_step"):
            current.append("optimizer step")
            continue
        m = re.match(r"shard\.(all_gather|reduce_scatter|all_reduce|send|recv) (%[\w.]+) on @(\w+)", body)
        if m:
            op, operand, grid = m.groups()
            kind, buf, of = origin[operand]
            if result:
                origin[result] = (kind, buf, of)
            unit = of or "root"
            if op == "all_gather":
                name = f"all-gather {unit}" if buf == "param_shard" else f"all-gather {buf} {of}"
            elif op == "reduce_scatter":
                name = f"reduce-scatter {unit}" if buf == "gradient" else f"reduce-scatter {buf} {of}"
            elif op == "all_reduce":
                name = f"all-reduce {grid} {unit}"
            else:
                grads = buf == "activation_grad"
                name = f"{op} activation gradients" if grads else f"{op} activations"
            current.append(name)
            continue
        sys.exit(f"{path}: step the checker does not know: {text}")
    return programs


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    programs = expected_programs(argv[0])
    events = json.load(open(argv[1]))["traceEvents"]
    ranks = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            m = re.match(r"rank (\d+) \(@(\w+)\)", e["args"]["name"])
            ranks[e["pid"]] = (int(m.group(1)), m.group(2))
    if not ranks:
        sys.exit(f"{argv[1]}: no ranks")
    failed = False
    for pid, (rank, program) in sorted(ranks.items(), key=lambda r: r[1]):
        want = programs.get(program)
        if want is None:
            print(f"FAIL rank {rank}: ran @{program}, which the plan does not have")
            failed = True
            continue
        ran = [e for e in events if e.get("pid") == pid and e.get("ph") == "X"]
        steps = sorted({e["args"]["step"] for e in ran})
        ok = True
        for step in steps:
            seq = [(e["args"]["program_step"], e["name"]) for e in ran
                   if e["args"]["step"] == step]
            expect = list(enumerate(want))
            if seq != expect:
                first = next((i for i, (a, b) in enumerate(zip(seq, expect)) if a != b),
                             min(len(seq), len(expect)))
                got = seq[first] if first < len(seq) else "nothing"
                exp = expect[first] if first < len(expect) else "nothing"
                print(f"FAIL rank {rank} @{program} step {step}: at {first} ran {got}, program has {exp}")
                ok = False
                break
        print(f"rank {rank} @{program}: {len(steps)} steps x {len(want)} program steps executed in order" if ok else "")
        failed |= not ok
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
