#!/usr/bin/env python3
"""Edits the steps of one program of a plan.bin, for tests of what parc-run
refuses in a plan.bin no MLIR verifier has seen (an edited or stale file).
The MLIR verifier refuses the same programs as IR, so the edit is made on
the file itself: flatc turns it into JSON with the plan's schema, the edit
applies, flatc turns it back.

usage: edit-plan.py SCHEMA IN OUT --set PATH VALUE
       edit-plan.py SCHEMA IN OUT PROGRAM drop-first KIND
       edit-plan.py SCHEMA IN OUT PROGRAM drop-last KIND
       edit-plan.py SCHEMA IN OUT PROGRAM duplicate-first KIND
       edit-plan.py SCHEMA IN OUT PROGRAM set-first KIND FIELD VALUE

KIND is a StepKind name (Wait, Free, AllGather, ...); the edit applies to
the program's first (drop-last: last) step of that kind and fails when there
is none. --set replaces the field PATH of the plan: keys separated by `/`,
where a `key=value` component picks the list entry whose `key` is `value`
(`params/path=lm_head.weight/tp`); VALUE is JSON.
"""
import json
import os
import subprocess
import sys
import tempfile


def main(argv):
    if len(argv) < 7:
        sys.exit(__doc__)
    schema, source, target, program, action, kind = argv[1:7]
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary",
                        "-o", work, schema, "--", source], check=True)
        name = os.path.splitext(os.path.basename(source))[0]
        path = os.path.join(work, name + ".json")
        plan = json.load(open(path))
        if program == "--set":
            set_field(plan, action, json.loads(kind), source)
        else:
            edit_steps(plan, program, action, kind, argv, source)
        json.dump(plan, open(path, "w"))
        subprocess.run(["flatc", "--binary", "-o", work, schema, path],
                       check=True)
        os.replace(os.path.join(work, name + ".bin"), target)


def set_field(plan, path, value, source):
    parts = path.split("/")
    node = plan
    for part in parts[:-1]:
        if "=" in part:
            key, want = part.split("=", 1)
            node = next((e for e in node if e.get(key) == want), None)
            if node is None:
                sys.exit(f"{source}: no entry with {key} = {want}")
        elif part in node:
            node = node[part]
        else:
            sys.exit(f"{source}: no field {part} in {path}")
    node[parts[-1]] = value


def edit_steps(plan, program, action, kind, argv, source):
    steps = next((p["steps"] for p in plan.get("programs", [])
                  if p.get("name") == program), None)
    if steps is None:
        sys.exit(f"{source}: no program '{program}'")
    order = reversed(list(enumerate(steps))) if action == "drop-last" \
        else enumerate(steps)
    at = next((i for i, s in order if s.get("kind", "Buffer") == kind),
              None)
    if at is None:
        sys.exit(f"{source}: program '{program}' has no {kind} step")
    if action in ("drop-first", "drop-last"):
        del steps[at]
    elif action == "duplicate-first":
        steps.insert(at + 1, dict(steps[at]))
    elif action == "set-first":
        steps[at][argv[7]] = json.loads(argv[8])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
