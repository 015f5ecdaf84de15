#!/usr/bin/env bash
# The whole test suite: set up, then run the lit tests and the unit tests and
# report one count. Exits non-zero when any test fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" || exit 1
cd "$root/build"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

/usr/lib/llvm-22/bin/lit -sv test 2>&1 | tee "$log"
lit_status=${PIPESTATUS[0]}
lit_passed=$(grep -Eo '^ *Passed *: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
lit_failed=$(grep -Eo '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *: *[0-9]+' "$log" |
  awk -F: '{ n += $2 } END { print n + 0 }')
[[ -n "$lit_failed" ]] || lit_failed=0

./bin/parc-unittests 2>&1 | tee "$log"
unit_status=${PIPESTATUS[0]}
unit_passed=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
unit_failed=$(grep -Eo '^\[  FAILED  \] [0-9]+ tests?, listed' "$log" | grep -Eo '[0-9]+' | head -1 || echo 0)
[[ -n "$unit_failed" ]] || unit_failed=0
if ((unit_status != 0 && unit_failed == 0)); then unit_failed=1; fi
if ((lit_status != 0 && lit_failed == 0)); then lit_failed=1; fi

echo
echo "lit: $lit_passed passed, $lit_failed failed; unit: $unit_passed passed, $unit_failed failed"
echo "$((lit_passed + unit_passed)) passed, $((lit_failed + unit_failed)) failed"
((lit_status == 0 && unit_status == 0))
