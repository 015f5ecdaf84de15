#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the repository's own
inputs: examples/, test/** (split-file sections, `// -----` chunks) and
../shared/reference-configs/. The plan.bin seeds are planned with the
release tools in build/bin (skipped where they are not built).

    fuzz/make-corpus.py [--build build]

Seeds are kept small (dozens per target); libFuzzer grows its own corpus in
the directory given first on its command line (scripts/fuzz.sh passes a
scratch directory first, so the tracked seeds stay as written here).
"""
import argparse
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def split_file_sections(path):
    """(name, text) of every `//--- name` section of a split-file test."""
    text = open(path).read()
    parts = re.split(r"^//--- (\S+)\n", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def mlir_chunks(path):
    """The `// -----` chunks of a test, RUN/CHECK comments kept (they are
    comments to the parser)."""
    return [c for c in re.split(r"^// -----\n", open(path).read(), flags=re.M)
            if c.strip()]


MAX_SEED_LAYERS = 6


def shrink_layers(data):
    """A config.json with every stack cut to at most MAX_SEED_LAYERS layers
    (and its per-layer lists, such as layer_types, cut to match).

    An execution imports, verifies and prints the whole model, so a 126-layer
    seed costs 0.24 s under ASan and a 2-layer one 10 ms. Six layers keep
    one of each layer type of the shipped patterns (Gemma's 5 sliding + 1
    full); the fuzzer still mutates the counts themselves. A file that is
    not a JSON object (an error test's input) is kept as written."""
    try:
        config = json.loads(data)
    except ValueError:
        return data
    if not isinstance(config, dict):
        return data

    def cut(node):
        if not isinstance(node, dict):
            return
        layers = node.get("num_hidden_layers")
        if isinstance(layers, int) and layers > MAX_SEED_LAYERS:
            node["num_hidden_layers"] = MAX_SEED_LAYERS
            for key, value in node.items():
                if isinstance(value, list) and len(value) == layers:
                    node[key] = value[:MAX_SEED_LAYERS]
        for value in node.values():
            cut(value)

    before = json.dumps(config, sort_keys=True)
    cut(config)
    if json.dumps(config, sort_keys=True) == before:
        return data
    return (json.dumps(config, indent=2) + "\n").encode()


class Writer:
    def __init__(self, target):
        self.dir = os.path.join(CORPUS, target)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.count = 0

    def add(self, name, data):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)
        self.count += 1


def rel(path):
    return os.path.relpath(path, ROOT).replace("/", "_")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()

    # config.json
    w = Writer("hf-config")
    configs = (glob.glob(f"{ROOT}/examples/**/*.json", recursive=True) +
               glob.glob(f"{ROOT}/test/**/Inputs/*.json", recursive=True) +
               glob.glob(f"{ROOT}/../shared/reference-configs/*.json"))
    seen = set()
    for path in sorted(configs):
        data = shrink_layers(open(path, "rb").read())
        if data in seen:
            continue
        seen.add(data)
        w.add(rel(path) if not path.startswith(f"{ROOT}/..")
              else "shared_" + os.path.basename(path), data)
    for name, text in split_file_sections(f"{ROOT}/test/Import/errors.test"):
        if name.endswith(".json"):
            w.add("errors.test_" + name, text)
    print(f"hf-config: {w.count}")

    # recipes
    w = Writer("recipe")
    for path in sorted(glob.glob(f"{ROOT}/examples/**/*.yaml", recursive=True) +
                       glob.glob(f"{ROOT}/test/Plan/Inputs/**/*.yaml",
                                 recursive=True)):
        w.add(rel(path), open(path, "rb").read())
    for test in sorted(glob.glob(f"{ROOT}/test/Plan/*.test")):
        for name, text in split_file_sections(test):
            if name.endswith((".yaml", ".yml")):
                w.add(os.path.basename(test) + "_" + name, text)
    print(f"recipe: {w.count}")

    # parc IR: hand-written tests and two imported tiny models
    w = Writer("parc-ir")
    for path in sorted(glob.glob(f"{ROOT}/test/**/*.mlir", recursive=True)):
        for i, chunk in enumerate(mlir_chunks(path)):
            if len(chunk) <= 16384:
                w.add(f"{rel(path)}.{i}", chunk)
    translate = os.path.join(args.build, "bin", "parc-translate")
    if os.access(translate, os.X_OK):
        for cfg in [f"{ROOT}/examples/tiny/llama-tiny.json",
                    f"{ROOT}/test/Runtime/Inputs/gemma4-tiny.json"]:
            out = subprocess.run([translate, "--import-hf-config", cfg],
                                 capture_output=True)
            if out.returncode == 0:
                w.add("imported_" + os.path.basename(cfg) + ".mlir",
                      out.stdout)
    print(f"parc-ir: {w.count}")

    # plan.bin, for both plan readers: the layouts test/Runtime runs
    plan_tool = os.path.join(args.build, "bin", "parc-plan")
    w1, w2 = Writer("plan-import"), Writer("runtime-plan")
    if os.access(plan_tool, os.X_OK):
        llama = f"{ROOT}/examples/tiny/llama-tiny.json"
        gemma = f"{ROOT}/test/Runtime/Inputs/gemma4-tiny.json"
        base = ["--hardware", "cpu", "--dtype", "fp32", "--seq", "32"]
        layouts = {
            "llama-w1": [llama, "--gpus", "1", "--mbs", "2"],
            "llama-fsdp2-acc2": [llama, "--gpus", "2", "--mbs", "1", "--gbs", "4"],
            "llama-fsdp2-tp2": [llama, "--gpus", "4", "--mbs", "1", "--tp", "2"],
            "llama-tp2-pp2-1f1b": [llama, "--gpus", "4", "--mbs", "1", "--gbs", "2",
                                   "--tp", "2", "--pp", "2", "--schedule", "1f1b",
                                   "--microbatches", "2"],
            "llama-pp2-gpipe-full": [llama, "--gpus", "2", "--mbs", "1", "--gbs", "4",
                                     "--pp", "2", "--schedule", "gpipe",
                                     "--microbatches", "4", "--remat", "full"],
            "gemma4-fsdp2-selective": [gemma, "--gpus", "2", "--mbs", "1",
                                       "--remat", "selective"],
            "gemma4-pp2-1f1b": [gemma, "--gpus", "2", "--mbs", "1", "--gbs", "4",
                                "--pp", "2", "--schedule", "1f1b",
                                "--microbatches", "4"],
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, argv in layouts.items():
                out = os.path.join(tmp, name + ".bin")
                r = subprocess.run([plan_tool, "--model", argv[0], *base, *argv[1:],
                                    "--emit-plan", out], capture_output=True)
                if r.returncode in (0, 2) and os.path.exists(out):
                    data = open(out, "rb").read()
                    w1.add(name + ".bin", data)
                    w2.add(name + ".bin", data)
                else:
                    print(f"  {name}: parc-plan exit {r.returncode}: "
                          f"{r.stderr.decode()[:200]}", file=sys.stderr)
    print(f"plan-import: {w1.count}, runtime-plan: {w2.count}")

    # checkpoints: manifest, NUL, rank 0's shard (fuzz/fuzz-checkpoint.cpp)
    w = Writer("checkpoint")
    for name, step, params in [
            ("one-param", 3, [("model.embed.weight", 4)]),
            ("two-params", 1, [("model.norm.weight", 2), ("lm_head.weight", 8)]),
            ("empty-rank", 9, [])]:
        w.add(name, checkpoint_seed(step, params))
    print(f"checkpoint: {w.count}")

    # safetensors: small files as --dump and Hugging Face checkpoints write
    w = Writer("safetensors")
    for name, tensors, meta in [
            ("two-f32", [("model.norm.weight", "F32", [4]),
                         ("lm_head.weight", "F32", [2, 4])], True),
            ("bf16-and-ids", [("model.embed_tokens.weight", "BF16", [3, 2]),
                              ("input_ids", "I64", [1, 3])], False),
            ("empty", [], True)]:
        w.add(name, safetensors_seed(tensors, meta))
    print(f"safetensors: {w.count}")


def safetensors_seed(tensors, metadata):
    """A safetensors file of zero-filled tensors: the 8-byte header length,
    the JSON header padded to 8 bytes, the data."""
    size = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8}
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {"format": "pt"}
    for name, dtype, shape in tensors:
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(offset)


PLAN_SUM = 0x00000000C0FFEE00  # fuzz-checkpoint.cpp's kFuzzPlanSum


def fnv1a(data):
    """runtime/lib/PlanFile.cpp's fnv1a (its offset basis, seed 0)."""
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def checkpoint_seed(step, params):
    """A two-rank checkpoint as saveCheckpoint writes it (format 2), with
    rank 0's shard appended after a NUL byte."""
    shard = b"PARCCKPT" + struct.pack("<IQIQI", 2, step, 0, PLAN_SUM, len(params))
    for path, numel in params:
        shard += struct.pack("<I", len(path)) + path.encode()
        shard += struct.pack("<Q", numel) + bytes(12 * numel)
    entries = ", ".join(
        f'{{"rank": {r}, "file": "rank-{r}.bin", "bytes": {len(shard)}, '
        f'"fnv1a": "{fnv1a(shard):016x}"}}' for r in range(2))
    manifest = (f'{{"format": 2, "plan": "{PLAN_SUM:016x}", "world": 2, '
                f'"step": {step}, "shards": [{entries}]}}\n')
    return manifest.encode() + b"\0" + shard


if __name__ == "__main__":
    main()
