"""Runs a command and succeeds only if it exits with the given status.

lit's `not` accepts any non-zero status; parc-plan's 1 (error) and 2 (valid
but predicted not to fit) must be told apart. Works under lit's internal
shell and under bash alike.

    %python %S/Inputs/exit-code.py 2 parc-plan recipe.yaml
"""

import subprocess
import sys

expected = int(sys.argv[1])
status = subprocess.call(sys.argv[2:])
if status != expected:
    sys.stderr.write(
        "exit-code.py: expected exit status %d, got %d\n" % (expected, status)
    )
    sys.exit(1)
