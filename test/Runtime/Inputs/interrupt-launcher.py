#!/usr/bin/env python3
"""Starts `parc-run --nproc N ... --log LOG`, waits for its first logged step,
sends the launcher SIGNAL (SIGINT as Ctrl-C would, or SIGTERM as a
scheduler would), and checks that the launcher exits 128 + SIGNAL and that
none of its workers is left, alive or as a zombie.

    interrupt-launcher.py INT|TERM LOG parc-run args...
"""
import os
import signal
import subprocess
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
log, command = sys.argv[2], sys.argv[3:]
launcher = subprocess.Popen(command)
deadline = time.time() + 120
while not (os.path.exists(log) and os.path.getsize(log) > 0):
    if launcher.poll() is not None or time.time() > deadline:
        sys.exit(f"interrupt-launcher.py: the run ended or stalled before a step")
    time.sleep(0.05)
children = open(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read().split()
os.kill(launcher.pid, sig)
status = launcher.wait(timeout=60)
if status != 128 + sig:
    sys.exit(f"interrupt-launcher.py: launcher exited {status}, expected {128 + sig}")
left = []
for pid in children:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        left.append(f"{pid} ({state})")
    except OSError:
        pass
if left:
    sys.exit(f"interrupt-launcher.py: workers left behind: {' '.join(left)}")
print(f"launcher exited {status}; {len(children)} workers stopped and reaped")
