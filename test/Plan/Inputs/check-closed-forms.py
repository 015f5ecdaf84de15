"""Checks a parc-plan --json document against DESIGN.md's closed forms.

The pipeline bubble the cost model measures on its replay of the explicit
schedule must match (p - 1) / m for GPipe and 1F1B and (p - 1) / (v m) for
interleaved 1F1B; the model FLOPs per token must match 6N plus the causal
attention term 6 L H_q d (s + 1) of every attention layer (the PaLM count
halved for causality), with N the trainable parameters less the input
embedding table (a lookup, no matmul). Prints each
comparison and fails when one is off by more than the tolerance.

    parc-plan --json recipe.yaml | %python check-closed-forms.py \
        --bubble-tolerance 0.02 --flops-tolerance 0.01 --attention L,H,D \
        --embedding VOCAB,HIDDEN
"""

import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--bubble-tolerance", type=float, default=0.02)
parser.add_argument("--flops-tolerance", type=float, default=0.01)
parser.add_argument(
    "--attention",
    help="layers,query heads,head dim of the attention layers for the "
    "6N + attention check (omit to skip it)",
)
parser.add_argument("--embedding", default="0,0",
                    help="vocab,hidden of the input embedding table")
args = parser.parse_args()
doc = json.load(sys.stdin)
failed = False


def compare(what, got, want, tolerance):
    global failed
    error = abs(got - want) / want if want else abs(got)
    ok = error <= tolerance
    failed |= not ok
    print("%s: %s %.6g, closed form %.6g, off by %.2f%%"
          % ("PASS" if ok else "FAIL", what, got, want, error * 100))


pp = doc["cost"].get("pp")
if pp:
    p, m, v = pp["stages"], pp["microbatches"], pp["chunks"]
    closed = (p - 1) / ((v if pp["schedule"] == "interleaved-1f1b" else 1) * m)
    compare("bubble", pp["bubble"], closed, args.bubble_tolerance)
    compare("reported closed form", pp["closed_form_bubble"], closed, 1e-9)

if args.attention:
    layers, heads, dim = (int(x) for x in args.attention.split(","))
    seq = doc["plan"]["seq_len"]
    vocab, hidden = (int(x) for x in args.embedding.split(","))
    n = doc["model"]["trainable_parameters"] - vocab * hidden
    want = 6 * n + 6 * layers * heads * dim * (seq + 1)
    compare("model FLOPs per token", doc["cost"]["model_flops_per_token"],
            want, args.flops_tolerance)

sys.exit(1 if failed else 0)
