#!/usr/bin/env python3
"""Replays fuzz reproducers (fuzz/regressions/<target>/) through the tool
that reads that input, and checks that the tool refuses it cleanly: an exit
status in 1..127 (not a signal, not 128+N), an "error:" in its output, and
no sanitizer or LLVM crash report.

    replay.py --tool TOOL --target TARGET FILE...
    replay.py --check-covered REGRESSIONS_DIR TESTS_DIR

TARGET is the fuzz target's name without "fuzz-": hf-config, recipe,
parc-ir, plan-import, runtime-plan. --check-covered fails when a reproducer
is named by no test in TESTS_DIR, so that a saved reproducer always runs.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

CRASH_MARKERS = [
    "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
    "UndefinedBehaviorSanitizer", "PLEASE submit a bug report",
    "Stack dump:", "terminate called", "Assertion `",
]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def command(tool, target, path, scratch):
    if target == "hf-config":
        return [tool, "--import-hf-config", path, "-o", os.devnull]
    if target == "plan-import":
        return [tool, "--import-plan", path, "-o", os.devnull]
    if target == "parc-ir":
        return [tool, path, "--discover-layers", "--apply-remat",
                "--apply-fsdp=shards=8", "--estimate-memory", "-o", os.devnull]
    if target == "runtime-plan":
        # The loader, then readRankLayout and verifyPrograms (parc-run's
        # planWorld), which refuse a plan before any worker trains; a plan
        # they accept would train as world 1 (the timeout bounds it).
        return [tool, path]
    if target == "recipe":
        # The fuzzer resolves models against examples/llama-3.1-8b: replay
        # from a directory that sees the same ../models and ../tiny.
        examples = os.path.join(SRC, "examples")
        base = os.path.join(scratch, "recipe")
        os.makedirs(base, exist_ok=True)
        for entry in os.listdir(examples):
            if entry != "llama-3.1-8b":
                os.symlink(os.path.join(examples, entry),
                           os.path.join(scratch, entry))
        for entry in os.listdir(os.path.join(examples, "llama-3.1-8b")):
            os.symlink(os.path.join(examples, "llama-3.1-8b", entry),
                       os.path.join(base, entry))
        recipe = os.path.join(base, "reproducer.yaml")
        with open(path, "rb") as src, open(recipe, "wb") as dst:
            dst.write(src.read())
        return [tool, recipe]
    raise SystemExit(f"replay.py: unknown target '{target}'")


def replay(tool, target, path, timeout):
    with tempfile.TemporaryDirectory() as scratch:
        argv = command(tool, target, path, scratch)
        try:
            run = subprocess.run(argv, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"timed out after {timeout} s"
    out = run.stdout.decode(errors="replace")
    rc = run.returncode
    problems = []
    if rc < 0 or rc >= 128:
        problems.append(f"killed by a signal (exit status {rc})")
    elif rc == 0:
        problems.append("exit status 0 (the input was accepted)")
    for marker in CRASH_MARKERS:
        if marker in out:
            problems.append(f"'{marker}' in the output")
    if "error:" not in out:
        problems.append("no 'error:' in the output")
    if problems:
        tail = "\n".join(out.splitlines()[-20:])
        return "; ".join(problems) + "\n  " + " ".join(argv) + "\n" + tail
    return None


def check_covered(regressions, tests):
    named = ""
    for name in os.listdir(tests):
        if name.endswith(".test"):
            named += open(os.path.join(tests, name)).read()
    missing = []
    targets = os.listdir(regressions) if os.path.isdir(regressions) else []
    for target in sorted(targets):
        d = os.path.join(regressions, target)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f"fuzz/regressions/{target}/{f}" not in named:
                missing.append(f"fuzz/regressions/{target}/{f}")
    for m in missing:
        print(f"error: {m} is replayed by no test in {tests}")
    return 1 if missing else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool")
    ap.add_argument("--target")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--check-covered", nargs=2,
                    metavar=("REGRESSIONS_DIR", "TESTS_DIR"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.check_covered:
        return check_covered(*args.check_covered)
    failed = 0
    for path in args.files:
        why = replay(args.tool, args.target, path, args.timeout)
        if why:
            print(f"FAIL {path}: {why}")
            failed += 1
        else:
            print(f"ok   {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
