#!/usr/bin/env python3
"""Fails if a parc-run process whose command line names $PARC_PLAN is alive
(a worker that outlived its launcher). The path comes from the environment so
that the shell running this check does not match itself."""
import os
import sys

plan = os.environ["PARC_PLAN"]
left = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if argv and argv[0].endswith(b"parc-run") and plan.encode() in argv:
        left.append(pid)
if left:
    sys.exit(f"parc-run workers still alive: {' '.join(left)}")
print("no workers left")
