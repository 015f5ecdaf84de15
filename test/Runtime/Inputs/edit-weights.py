#!/usr/bin/env python3
"""Writes an edited copy of a safetensors file, for parc-run --load-weights
tests.

    edit-weights.py IN OUT params          only the parameters (no grad.*,
                                           batch or loss)
    edit-weights.py IN OUT bf16            the parameters in bfloat16
    edit-weights.py IN OUT rounded         the parameters rounded to
                                           bfloat16, kept in float32
    edit-weights.py IN OUT drop NAME       without tensor NAME
    edit-weights.py IN OUT transpose NAME  NAME transposed (another shape)
    edit-weights.py IN OUT truncate N      the file's first N bytes
    edit-weights.py IN OUT header-length   a header length past the file
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import parameter_names, read_safetensors  # noqa: E402

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        data = t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 \
            else t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


src, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "truncate":
    data = open(src, "rb").read()
    open(out, "wb").write(data[: int(sys.argv[4])])
    sys.exit(0)
if mode == "header-length":
    data = open(src, "rb").read()
    open(out, "wb").write(struct.pack("<Q", len(data)) + data[8:])
    sys.exit(0)
dump = read_safetensors(src)
tensors = {n: dump[n] for n in parameter_names(dump)}
if mode == "bf16":
    tensors = {n: t.to(torch.bfloat16) for n, t in tensors.items()}
elif mode == "rounded":
    tensors = {n: t.to(torch.bfloat16).to(torch.float32) for n, t in tensors.items()}
elif mode == "drop":
    del tensors[sys.argv[4]]
elif mode == "transpose":
    tensors[sys.argv[4]] = tensors[sys.argv[4]].t()
elif mode != "params":
    sys.exit("edit-weights.py: unknown mode '%s'" % mode)
write(out, tensors)
