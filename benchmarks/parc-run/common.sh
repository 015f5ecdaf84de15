# Shared by the parc-run benchmarks (sourced): a scratch directory, both
# sides left at their default threads, the three Llama sizes, the median
# step time of a parc-run log and the table row of a setting's pairs.
py=/usr/bin/python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS

# CONFIG (from the repository root):STEPS:PARAMETERS, smallest first.
llama_sizes=("examples/tiny/llama-tiny.json:12:4.6 M"
             "benchmarks/parc-run/models/llama-30m.json:8:31.6 M"
             "benchmarks/parc-run/models/llama-125m.json:5:124.7 M")

# Median step time in seconds of a parc-run log (rank 0, steps 2..N), from
# tokens/s: parc_step LOG TOKENS_PER_STEP.
parc_step() {
  "$py" - "$1" "$2" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r["rank"] == 0 and r["step"] > 1]
print(f"{statistics.median(int(sys.argv[2]) / r['tokens_per_s'] for r in rows):.6f}")
PY
}

# One table row: pair_row NAME PARAMS THREADS EXTRA OURS:THEIRS...; EXTRA is
# printed as the last column when not empty.
pair_row() {
  "$py" - "$@" <<'PY'
import statistics, sys
name, params, threads, extra, *pairs = sys.argv[1:]
ours = [float(p.split(":")[0]) for p in pairs]
theirs = [float(p.split(":")[1]) for p in pairs]
ratios = [a / b for a, b in zip(ours, theirs)]
label = "defaults" if threads == "default" else "1 (OMP_NUM_THREADS=1)"
print(f"| {name} | {params} | {label} | {statistics.median(ours):.4f} | "
      f"{statistics.median(theirs):.4f} | {statistics.median(ratios):.2f} | "
      + ", ".join(f"{r:.2f}" for r in ratios) + " |"
      + (f" {extra} |" if extra else ""))
PY
}
