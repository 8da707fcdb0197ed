#!/usr/bin/env bash
# Runs the wrapper tests (t-*.sh, or those whose names match the arguments)
# and prints "N passed, N failed". Each test's output goes to
# wrapper-tests/work/<test>.log and is shown when the test fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/work"
passed=0
failed=0
failed_names=()
for t in "$here"/t-*.sh; do
  name=$(basename "$t" .sh)
  if [ $# -gt 0 ]; then
    match=0
    for pat in "$@"; do
      case "$name" in *"$pat"*) match=1 ;; esac
    done
    [ $match = 1 ] || continue
  fi
  log="$here/work/$name.log"
  start=$(date +%s)
  if bash "$t" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "ok   $name ($(( $(date +%s) - start ))s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    echo "FAIL $name ($(( $(date +%s) - start ))s); last lines of $log:"
    tail -n 40 "$log" | sed 's/^/    /'
  fi
done
echo "wrapper-tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
