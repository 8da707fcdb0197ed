# The whole-build benchmark's smoke mode (benches/builds.py --smoke): lua5.4
# at -O2 built cold, after make clean, after a one-function edit, after ten
# lines added at the top of a source and after a header edit, with
# clang-19, ccache + clang-19 and repocc, one run. The
# test checks that the harness measures every cell and writes its table
# (and chart, gnuplot permitting) and the bytes of each tool's objects and
# programs; it asserts no timing.
source "$(dirname "$0")/lib.sh"
cd "$SCRATCH"
out="$SCRATCH/results"
python3 "$PROJECT_ROOT/benches/builds.py" --smoke --out "$out" > bench.log 2>&1 || { cat bench.log; fail "benches/builds.py --smoke"; }
cat "$out/builds.md"
rows=$(grep -c '^| lua | `-O2` |' "$out/builds.md")
assert_eq "table rows (cold, no-change, edit, shift, header)" 5 "$rows"
if grep '^| lua |' "$out/builds.md" | has '–'; then fail "a cell was not measured"; fi
for s in cold no-change edit shift header; do
  grep -Eq "^\| lua \| \`-O2\` \| $s \| [0-9.]+ s \| [0-9.]+ s \([0-9.]+x\) \| [0-9.]+ s \([0-9.]+x\) \|$" "$out/builds.md" \
    || fail "row $s is malformed"
done
for t in clang ccache repocc; do
  grep -Eq "^\| lua, \`-O2\` \| $t \| [1-9][0-9,]+( \([0-9.]+x\))? \| [1-9][0-9,]+( \([0-9.]+x\))? \|$" "$out/builds.md" \
    || fail "no sizes of $t's objects and programs"
done
if command -v gnuplot > /dev/null; then
  [ -s "$out/builds.png" ] || fail "no chart"
  assert_eq "chart format" "PNG" "$(head -c 4 "$out/builds.png" | tail -c 3)"
fi
