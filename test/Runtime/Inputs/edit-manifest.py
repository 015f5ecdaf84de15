"""Edits a parc-run checkpoint manifest the way a broken or hostile one
would look, for the tests that parc-run refuses it.

    edit-manifest.py manifest.json copy-rank0   rank 1's entry = rank 0's
    edit-manifest.py manifest.json copy-sum0    rank 1's size and checksum = rank 0's
    edit-manifest.py manifest.json drop-file0   rank 0's entry without "file"
    edit-manifest.py manifest.json step=VALUE   the step, written verbatim
    edit-manifest.py manifest.json empty        an empty file
"""
import json
import sys

path, edit = sys.argv[1], sys.argv[2]
if edit == "empty":
    open(path, "w").close()
    sys.exit(0)
manifest = json.load(open(path))
shards = manifest["shards"]
if edit == "copy-rank0":
    shards[1].update({k: shards[0][k] for k in ("file", "bytes", "fnv1a")})
elif edit == "copy-sum0":
    shards[1].update({k: shards[0][k] for k in ("bytes", "fnv1a")})
elif edit == "drop-file0":
    del shards[0]["file"]
elif edit.startswith("step="):
    manifest["step"] = "@STEP@"
else:
    sys.exit(f"edit-manifest.py: unknown edit '{edit}'")
text = json.dumps(manifest)
if edit.startswith("step="):
    text = text.replace('"@STEP@"', edit[len("step="):])
open(path, "w").write(text + "\n")
