"""Plans each published torchtitan measurement of fidelity-rows.json with
parc-plan and sets parc's prediction beside it (docs/fidelity.md).

Prints one markdown row per measurement: published and predicted peak
memory and tokens/s/GPU, and their ratios. Fails (exit 1, a FAIL line) when
a fit/OOM verdict differs from the published run, or a ratio leaves its
tolerance band: --memory LO:HI for the memory ratio (what parc predicts
the caching allocator reserves, over the published peak reserved memory;
both without the CUDA context and NCCL buffers outside the allocator),
--tokens LO:HI for the throughput ratio.
"""
import argparse
import json
import os
import subprocess
import sys


def band(text):
    lo, hi = text.split(":")
    return float(lo), float(hi)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("parc_plan")
    parser.add_argument("jobs", help="directory of the torchtitan job files")
    parser.add_argument("rows")
    parser.add_argument("--memory", type=band, required=True)
    parser.add_argument("--tokens", type=band, required=True)
    args = parser.parse_args()

    failures = 0
    print("| # | job | published reserved | parc allocated | parc reserved | "
          "ratio | published tokens/s/GPU | parc | ratio |")
    for row in json.load(open(args.rows)):
        command = [args.parc_plan, os.path.join(args.jobs, row["job"]),
                   *row["flags"], "--json"]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode not in (0, 1):
            print(f"FAIL {row['id']}: {' '.join(command)} exited "
                  f"{run.returncode}: {run.stderr.strip()}")
            failures += 1
            continue
        plan = json.loads(run.stdout)
        memory = plan["memory"]
        # Both as the allocator counts them: without the fixed overhead.
        allocated = (memory["peak_bytes"] -
                     memory["breakdown"]["fixed_overhead"]) / 2**30
        peak = max(rank["reserved_bytes"] for rank in memory["ranks"]) / 2**30
        tokens = plan["cost"]["tokens_per_s_per_gpu"]
        fits = plan["memory"]["fits"]
        cells = [row["id"], row["what"]]
        if "memory_gib" in row:
            ratio = peak / row["memory_gib"]
            cells += [f"{row['memory_gib']:.2f} GiB", f"{allocated:.2f} GiB",
                      f"{peak:.2f} GiB", f"{ratio:.2f}"]
            if not args.memory[0] <= ratio <= args.memory[1]:
                print(f"FAIL {row['id']}: memory ratio {ratio:.3f} outside "
                      f"{args.memory}")
                failures += 1
        else:
            cells += ["-", f"{allocated:.2f} GiB", f"{peak:.2f} GiB", "-"]
        ratio = tokens / row["tokens"]
        cells += [f"{row['tokens']:,}", f"{tokens:,.1f}", f"{ratio:.2f}"]
        if not args.tokens[0] <= ratio <= args.tokens[1]:
            print(f"FAIL {row['id']}: throughput ratio {ratio:.3f} outside "
                  f"{args.tokens}")
            failures += 1
        if fits != row["fits"]:
            print(f"FAIL {row['id']}: parc says {'fits' if fits else 'OOM'}, "
                  f"the published run {'fit' if row['fits'] else 'OOMed'}")
            failures += 1
        print("| " + " | ".join(cells) + " |")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
