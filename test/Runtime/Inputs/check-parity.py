#!/usr/bin/env python3
"""Compares parc-run --log files step by step against a reference run.

usage: check-parity.py [--rtol R] [--peak-tolerance T] [--subset] REF.jsonl RUN.jsonl...

Every rank of every run must report the reference's loss and gradient norm at
every step within relative tolerance R (default 1e-5). Prints the largest
relative deltas and each run's measured / predicted peak; with
--peak-tolerance T, a ratio outside [1 - T, 1 + T] fails. With --subset a run
may log only some of the reference's steps (a resumed run).
"""
import json
import sys


def load(path):
    steps = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                entry = json.loads(line)
            except ValueError:
                sys.exit(f"{path}:{number}: not a JSON line")
            for key in ("step", "rank", "loss", "grad_norm", "tokens_per_s",
                        "measured_peak_bytes", "predicted_peak_bytes"):
                if key not in entry:
                    sys.exit(f"{path}:{number}: no key '{key}'")
            steps.setdefault(entry["step"], []).append(entry)
    if not steps:
        sys.exit(f"{path}: no steps logged")
    return steps


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main(argv):
    rtol, tolerance, subset, paths = 1e-5, None, False, []
    i = 0
    while i < len(argv):
        if argv[i] == "--rtol":
            rtol = float(argv[i + 1]); i += 2
        elif argv[i] == "--subset":
            subset = True; i += 1
        elif argv[i] == "--peak-tolerance":
            tolerance = float(argv[i + 1]); i += 2
        else:
            paths.append(argv[i]); i += 1
    if len(paths) < 2:
        sys.exit(__doc__)
    ref = load(paths[0])
    failed = False
    for path in [paths[0]] + paths[1:]:
        run = load(path)
        worst_loss = worst_norm = 0.0
        if (not set(run) <= set(ref)) if subset else sorted(run) != sorted(ref):
            print(f"FAIL {path}: steps {sorted(run)}, reference {sorted(ref)}")
            failed = True
            continue
        for step, entries in sorted(run.items()):
            base = ref[step][0]
            for e in entries:
                dl = rel(e["loss"], base["loss"])
                dn = rel(e["grad_norm"], base["grad_norm"])
                worst_loss, worst_norm = max(worst_loss, dl), max(worst_norm, dn)
                if dl > rtol or dn > rtol:
                    print(f"FAIL {path}: step {step} rank {e['rank']}: loss "
                          f"{e['loss']!r} vs {base['loss']!r}, grad_norm "
                          f"{e['grad_norm']!r} vs {base['grad_norm']!r}")
                    failed = True
        peaks = [e for entries in run.values() for e in entries]
        ratio = max(e["measured_peak_bytes"] / e["predicted_peak_bytes"]
                    for e in peaks if e["predicted_peak_bytes"])
        low = min(e["measured_peak_bytes"] / e["predicted_peak_bytes"]
                  for e in peaks if e["predicted_peak_bytes"])
        print(f"{path}: max rel delta loss {worst_loss:.2e} grad_norm "
              f"{worst_norm:.2e}; measured/predicted peak {low:.3f}..{ratio:.3f}")
        if tolerance is not None and (ratio > 1 + tolerance or
                                      low < 1 - tolerance):
            print(f"FAIL {path}: measured/predicted peak outside "
                  f"1 +- {tolerance}")
            failed = True
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
