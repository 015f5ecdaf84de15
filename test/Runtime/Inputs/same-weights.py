#!/usr/bin/env python3
"""Checks that two `parc-run --dump` files hold the same parameters, bit
for bit (the gradients, batch and loss are not compared).

    same-weights.py A.safetensors B.safetensors
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import parameter_names, read_safetensors  # noqa: E402

a, b = read_safetensors(sys.argv[1]), read_safetensors(sys.argv[2])
params = lambda d: sorted(parameter_names(d))
if params(a) != params(b):
    sys.exit("same-weights.py: the files name different parameters")
differ = [n for n in params(a) if not bool((a[n] == b[n]).all())]
print("%d parameters, %d differ%s" % (len(params(a)), len(differ), (": " + ", ".join(differ[:5])) if differ else ""))
sys.exit(1 if differ else 0)
