#!/usr/bin/env python3
"""Checks that README.md lists exactly the model types the importer supports:
reads the importer's refusal of an unknown type (stdin), which prints the
family table's list, and the README's "Supported `model_type`s" paragraph.

usage: readme-model-types.py README.md < importer-stderr
"""
import re
import sys

error = sys.stdin.read()
m = re.search(r"\(supported: ([^)]*)\)", error)
if not m:
    sys.exit(f"no supported list in the importer's error: {error!r}")
table = [t.strip() for t in m.group(1).split(",")]
text = open(sys.argv[1]).read()
p = re.search(r"Supported `model_type`s:(.*?)\.\s", text, re.S)
if not p:
    sys.exit("README.md has no 'Supported `model_type`s:' paragraph")
readme = re.findall(r"`([a-z0-9_]+)`", p.group(1))
missing = [t for t in table if t not in readme]
extra = [t for t in readme if t not in table]
if missing or extra:
    sys.exit(f"README.md's model types differ from the family table: "
             f"missing {missing}, not supported {extra}")
print(f"README lists the {len(table)} model types of the family table")
