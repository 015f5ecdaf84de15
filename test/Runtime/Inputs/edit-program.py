#!/usr/bin/env python3
"""Edits one parc.program of a lowered .mlir file, for tests of what parc-run
refuses in a plan.bin that passed the MLIR verifier.

usage: edit-program.py FILE PROGRAM drop-first TEXT
       edit-program.py FILE PROGRAM replace-first OLD NEW
       edit-program.py FILE PROGRAM header OLD NEW

drop-first removes the first line of the program holding TEXT;
replace-first replaces OLD by NEW on the first such line; header replaces
OLD by NEW on the program's own line. Writes the result to stdout and fails
when nothing matched.
"""
import sys


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    path, program, action, old = argv[:4]
    new = argv[4] if len(argv) > 4 else None
    lines = open(path).read().split("\n")
    inside, done = False, False
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("parc.program @"):
            inside = stripped.startswith(f"parc.program @{program} ")
            if inside and action == "header" and old in line and not done:
                line, done = line.replace(old, new, 1), True
        elif inside and not done and old in line:
            if action == "drop-first":
                done = True
                continue
            if action == "replace-first":
                line, done = line.replace(old, new, 1), True
        out.append(line)
    if not done:
        sys.exit(f"{path}: no '{old}' in program @{program} to {action}")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
