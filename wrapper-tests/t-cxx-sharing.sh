# C++ units share their template instances and inline functions through
# the repository, whatever else each unit holds:
# - two files that share std::map<std::string,int> and std::vector instances
#   but nothing else: the second prunes every instance the first one has,
#   its object equals a cold compile's (and the first's, compiled after
#   it into another repository, equals its own cold object);
# - a function that needs new instances appended to a file: only it and
#   the new instances are compiled, and the object equals a cold compile's;
# at -O0, -O2, -O2 -g (the repository by default) and -O0 -g (with
# `debug_fragments = true`). With -g, fragments declare the classes they name and
# the glue defines them, so what else a unit uses of a class changes no
# fragment.
# With -g, a unit compiled in another directory shares as much.
# - a shared inline function's string literal stays what it is in a unit
#   with an address-significant array of the same bytes;
# - a member template declared in a header's class and defined in the
#   unit's source goes through the repository at -O2 -g, also after lines
#   are added above it;
# - so does a unit calling a member of a class template instance it only
#   declares, whose type reaches a type of the unit's source;
# - a header's template instance whose code inlines a function of the
#   unit's source keeps that function's lines right after an edit above;
# - three units with dynamic initializers of a header's inline variables
#   and template static members run them as clang-19's program does, and
#   give the same objects in either build order;
# - gdb on a program whose two units share a header's template instances,
#   built at -O0 -g through the repository, shows what it shows in
#   clang-19's build (breakpoints in template members, bt, info args and
#   locals, ptype, list, finish);
# - a C++20 coroutine at -O2 -g goes through the repository (no unit
#   handed to clang), runs as clang-19's build, and after a line added
#   above it gives its cold object;
# - yaml-cpp's regex_yaml.cpp at -O3, compiled after scanner.cpp into one
#   repository, equals its cold compile alone: both hold
#   std::vector<RegEx>'s copy constructor, built on the mutually recursive
#   destructors of RegEx and its vector, which clang emits in another
#   order in each unit (the optimizer now meets them in one order).
source "$(dirname "$0")/lib.sh"
P="$WT_ROOT/programs"
cd "$SCRATCH"

# linkonce SOURCE -O: the inline functions and template instances a C++
# source defines at that level, as clang-19 emits them before optimization.
linkonce() {
  clang++-19 -std=c++17 $2 -S -emit-llvm -Xclang -disable-llvm-passes -o - "$1" \
    | sed -n 's/^define linkonce_odr [^@]*@\([^ (]*\).*/\1/p' | sort -u
}
# compiled_names LOG: the definitions REPOCC_EXPLAIN said were compiled.
compiled_names() {
  sed -n 's/^repocc: explain [^:]*: compiled \([^:]*\): .*/\1/p' "$1" | sort -u
}

cp "$P/share-words.cpp" "$P/share-totals.cpp" .

for O in -O0 -O2 "-O2 -g" "-O0 -g"; do
  # -O2 -g uses the repository by default; -O0 -g when asked.
  case "$O" in "-O0 -g") export REPOCC_DEBUG_FRAGMENTS=true ;; *) unset REPOCC_DEBUG_FRAGMENTS ;; esac
  linkonce share-words.cpp "$O" > words.instances
  linkonce share-totals.cpp "$O" > totals.instances
  comm -12 words.instances totals.instances > shared.instances
  n_shared=$(wc -l < shared.instances)
  note "$O: instances the two files share: $n_shared (of $(wc -l < words.instances) and $(wc -l < totals.instances))"
  [ "$n_shared" -ge 20 ] || fail "the files share too few instances to test anything"
  note "$O: share-totals.cpp after share-words.cpp"
  export REPOCC_DIR="$SCRATCH/repo$O"
  "$REPOCCXX" -std=c++17 $O -c share-words.cpp -o words.o
  "$REPOCC" --zero-stats > /dev/null
  REPOCC_EXPLAIN=1 "$REPOCCXX" -std=c++17 $O -c share-totals.cpp -o totals.o 2> totals.explain
  compiled_names totals.explain > totals.compiled
  again=$(comm -12 shared.instances totals.compiled)
  [ -z "$again" ] || fail "$O: shared instances compiled again: $(echo $again | head -c 600)"
  shared=$(stat_value definitions_shared); pruned=$(stat_value definitions_pruned)
  note "$O: definitions_shared $shared, definitions_pruned $pruned, compiled $(wc -l < totals.compiled)"
  [ "$shared" -gt 0 ] && [ "$shared" = "$pruned" ] \
    || fail "$O: every definition reused came from the other unit (shared $shared, pruned $pruned)"
  grep -q ": reused .*: stored by another unit" totals.explain || fail "$O: REPOCC_EXPLAIN does not say what another unit stored"
  if [ "${O% -g}" = -O0 ]; then
    # At -O0 nothing is inlined away: every shared instance is in both.
    [ "$shared" -ge "$n_shared" ] || fail "$O: $shared reused, $n_shared shared"
  fi
  # Any build order, the same bytes.
  export REPOCC_DIR="$SCRATCH/reverse$O"
  "$REPOCCXX" -std=c++17 $O -c share-totals.cpp -o totals.cold.o
  "$REPOCCXX" -std=c++17 $O -c share-words.cpp -o words.after.o
  cmp totals.o totals.cold.o || fail "$O: share-totals.o built after share-words differs from its cold object"
  cmp words.o words.after.o || fail "$O: share-words.o built after share-totals differs from its cold object"
  case "$O" in *-g*)
    # Compiled in another directory (a CMake project's subdirectory), the
    # second file shares as much.
    export REPOCC_DIR="$SCRATCH/subdir$O"
    mkdir -p sub && cp share-totals.cpp sub/
    "$REPOCCXX" -std=c++17 $O -c share-words.cpp -o words.sub.o
    "$REPOCC" --zero-stats > /dev/null
    (cd sub && "$REPOCCXX" -std=c++17 $O -c share-totals.cpp -o totals.o)
    assert_eq "$O: shared from another directory" "$shared" "$(stat_value definitions_shared)"
    llvm-dwarfdump-19 --verify totals.o > totals.verify || { tail -n 20 totals.verify; fail "$O: the DWARF of share-totals.o does not verify"; }
    llvm-dwarfdump-19 --debug-info totals.o | grep -A4 DW_TAG_compile_unit | has 'DW_AT_name.*"share-words.cpp"' \
      && fail "$O: share-totals.o names the unit that stored its fragments" ;;
  esac
  "$REPOCCXX" $O words.o totals.o -o prog
  clang++-19 -std=c++17 $O share-words.cpp share-totals.cpp -o prog.clang
  assert_eq "$O program" "$(./prog.clang a cat)" "$(./prog a cat)"

  note "$O: a function with new template instances appended"
  export REPOCC_DIR="$SCRATCH/append$O"
  cp "$P/share-words.cpp" grow.cpp
  "$REPOCCXX" -std=c++17 $O -c grow.cpp -o grow.o
  linkonce grow.cpp "$O" > before.instances
  cat "$P/share-append.cpp" >> grow.cpp
  linkonce grow.cpp "$O" > after.instances
  comm -13 before.instances after.instances > new.instances
  { cat new.instances; echo _Z16distinct_lengthsRKSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE; } | sort -u > may.compile
  "$REPOCC" --zero-stats > /dev/null
  REPOCC_EXPLAIN=1 "$REPOCCXX" -std=c++17 $O -c grow.cpp -o grow.o 2> grow.explain
  compiled_names grow.explain > grow.compiled
  extra=$(comm -23 grow.compiled may.compile)
  [ -z "$extra" ] || fail "$O: compiled beyond the new function and its new instances: $(echo $extra | head -c 600)"
  grep -q "compiled _Z16distinct_lengths" grow.explain || fail "$O: the new function was not compiled"
  note "$O: compiled $(stat_value definitions_compiled) (new instances: $(wc -l < new.instances)), pruned $(stat_value definitions_pruned)"
  [ "$(stat_value definitions_pruned)" -ge 50 ] || fail "$O: too little reused after the append"
  # The reused definitions count as time saved (an estimate; no unit cache
  # hit here).
  [ "$(stat_value compile_ms_saved)" -gt 0 ] || fail "$O: definitions reused, and no compile time saved"
  REPOCC_DIR="$SCRATCH/append-cold$O" "$REPOCCXX" -std=c++17 $O -c grow.cpp -o grow.cold.o
  cmp grow.o grow.cold.o || fail "$O: the object after the append differs from a cold compile's"
done

note "-O2: a shared inline function's string literal, and another unit's static array of the same bytes"
# ConstantMerge folds an array whose address matters into a literal of the
# same bytes; the literal then leaves the mergeable strings. The literal is
# a fragment of its own that the first unit stored: the second unit's
# object must not depend on which unit stored it.
cat > literal.h <<'CPP'
#include <string>
inline std::string labelled(const std::string &a) { return a + ": " + a; }
CPP
printf '#include "literal.h"\nstd::string x(const std::string &v) { return labelled(v); }\n' > literal-x.cpp
cat > literal-y.cpp <<'CPP'
#include "literal.h"
const char *separator() { static const char sep[] = ": "; return sep; }
std::string y(const std::string &v) { return labelled(v); }
CPP
cat > literal-main.cpp <<'CPP'
#include <cstdio>
#include <string>
std::string x(const std::string &v);
std::string y(const std::string &v);
const char *separator();
int main() { std::printf("%s|%s|%s\n", x("a").c_str(), separator(), y("b").c_str()); return 0; }
CPP
export REPOCC_DIR="$SCRATCH/literal"
"$REPOCCXX" -std=c++17 -O2 -c literal-x.cpp -o literal-x.o
"$REPOCC" --zero-stats > /dev/null
"$REPOCCXX" -std=c++17 -O2 -c literal-y.cpp -o literal-y.o
[ "$(stat_value definitions_shared)" -gt 0 ] || fail "literal-y.cpp reused nothing literal-x.cpp stored"
REPOCC_DIR="$SCRATCH/literal-cold" "$REPOCCXX" -std=c++17 -O2 -c literal-y.cpp -o literal-y.cold.o
cmp literal-y.o literal-y.cold.o || fail "literal-y.o built after literal-x.cpp differs from its cold object"
"$REPOCCXX" literal-main.cpp literal-x.o literal-y.o -o literal-prog
assert_eq "literal program" "a: a|: |b: b" "$(./literal-prog)"

note "a destructor with an alias, taken from the repository, whose cold code inlined a static helper's unused literals away"
# The destructor stays defined in the warm module (its alias needs a
# definition) with a call to the pruned helper, which keeps the literals
# alive: the object must still hold only what its parts refer to.
cat > checker.cpp <<'CPP'
#include <cstdio>
struct Results { int n; };
struct Checker { ~Checker(); const Results *results_; int type_; };
static bool has_one(const char *, const char *, const char *, const Results &r, int type) {
  if (r.n != 1) { std::printf("expected one, got %d\n", r.n); return false; }
  return type == 2;
}
Checker::~Checker() {
  if (!has_one("*results_", "type_", "substr_", *results_, type_)) std::puts("failure");
}
CPP
printf 'struct Results { int n; };\nstruct Checker { ~Checker(); const Results *results_; int type_; };\nint main(int argc, char **) { Results r{argc}; { Checker c{&r, 3}; } return 0; }\n' > checker-main.cpp
unset REPOCC_DEBUG_FRAGMENTS
for O in -O2 "-O2 -g"; do
  export REPOCC_DIR="$SCRATCH/checker$O"
  "$REPOCCXX" $O -c checker.cpp -o checker.cold.o
  REPOCC_UNIT_CACHE=false "$REPOCCXX" $O -c checker.cpp -o checker.o
  assert_eq "$O checker.cpp: pruned on the second compile" 1 "$(( $(stat_value definitions_pruned) > 0 ))"
  cmp checker.o checker.cold.o || fail "$O: checker.o from the repository differs from its cold object ($(nm checker.o | grep -c rc) literals, cold $(nm checker.cold.o | grep -c rc))"
  "$REPOCCXX" $O checker-main.cpp checker.o -o checker
  assert_eq "$O checker program" "failure" "$(./checker)"
done

note "-O2 -g: a member template declared in a header's class and defined in the unit's source"
# Its specialization's declaration has its line in the unit's source, and
# LLVM uniques it by class and linkage name alone: the anchored line
# rebase once gave up on such a unit and clang compiled it instead.
printf 'class Converter {\n public:\n  explicit Converter(int s) : scale_(s) {}\n  double ToDouble(const char *s) const;\n  float ToFloat(const char *s) const;\n private:\n  template <class It> double Parse(It p, bool negate) const;\n  int scale_;\n};\n' > conv.h
cat > conv.body <<'CPP'
static int digit(char c) { return c - '0'; }
template <class It> double Converter::Parse(It p, bool negate) const {
  double v = 0;
  for (; *p; ++p) v = v * 10 + digit(*p);
  return (negate ? -v : v) * scale_;
}
double Converter::ToDouble(const char *s) const { return *s == '-' ? Parse(s + 1, true) : Parse(s, false); }
float Converter::ToFloat(const char *s) const { return static_cast<float>(Parse(s, false)); }
CPP
printf '#include <cstdio>\n#include "conv.h"\nint main() { Converter c(2); std::printf("%%g %%g\\n", c.ToDouble("-21"), c.ToFloat("4")); return 0; }\n' > conv-main.cpp
(echo '#include "conv.h"'; cat conv.body) > conv.cpp
export REPOCC_DIR="$SCRATCH/conv"
"$REPOCC" --zero-stats > /dev/null
"$REPOCCXX" -O2 -g -c conv.cpp -o conv.o 2> conv.err || fail "conv.cpp: $(cat conv.err)"
[ ! -s conv.err ] || fail "conv.cpp -O2 -g: $(cat conv.err)"
assert_eq "conv.cpp: no fallback to clang" 0 "$(stat_value fallbacks)"
[ "$(stat_value fragments_stored)" -gt 0 ] || fail "conv.cpp -O2 -g stored no fragment"
# Two lines added above: the definitions are reused, the declaration's
# line follows, and the object equals a cold compile's.
(echo '#include "conv.h"'; echo '// one'; echo '// two'; cat conv.body) > conv.cpp
"$REPOCCXX" -O2 -g -c conv.cpp -o conv.o
[ "$(stat_value definitions_pruned)" -gt 0 ] || fail "conv.cpp: nothing reused after two lines were added above"
REPOCC_DIR="$SCRATCH/conv-cold" "$REPOCCXX" -O2 -g -c conv.cpp -o conv.cold.o
cmp conv.o conv.cold.o || fail "conv.o after the edit differs from its cold object"
llvm-dwarfdump-19 --verify conv.o > /dev/null || fail "conv.o: DWARF does not verify"
llvm-dwarfdump-19 conv.o | grep -A3 'DW_AT_name.*"Parse<' | grep -q 'DW_AT_decl_line.*(5)' \
  || fail "conv.o: Parse's declaration line is not 5: $(llvm-dwarfdump-19 conv.o | grep -A3 'DW_AT_name.*"Parse<')"
"$REPOCCXX" -O2 -g conv-main.cpp conv.o -o conv-prog
assert_eq "conv program" "-42 8" "$(./conv-prog)"

note "-O2 -g: a member of a class template instance the unit only declares, its type reaching the unit's source"
# Spec<Local> is dynamic and its vtable is emitted in another unit, so
# clang declares the class only; get()'s declaration (uniqued by class
# and linkage name alone) changes with Local's line while its class does
# not. The anchored rebase once made it distinct, and User<Local>::use's
# fragment, which calls get() in another fragment, then declared get()
# with it: the verifier refused, the unit went to clang with a warning
# (gmock's tests: OnCallSpec<F>::GetAction), and a warm object holding
# that fragment stored was not the cold one.
printf 'template <class T> struct Spec {\n  virtual ~Spec() {}\n  __attribute__((noinline)) const T &get() const { return v; }\n  T v;\n};\ntemplate <class T> struct User {\n  __attribute__((noinline)) int use(const Spec<T> *s) const { return s->get().x + 1; }\n};\n' > spec.h
printf '#include "spec.h"\nstruct Local { int x; };\nSpec<Local> *makeSpec() { static Spec<Local> s; s.v.x = 41; return &s; }\n' > spec-other.cpp
printf 'struct Local { int x; };\nSpec<Local> *makeSpec();\nint main() { User<Local> u; return u.use(makeSpec()); }\n' > spec-main.body
(echo '#include "spec.h"'; cat spec-main.body) > spec-main.cpp
export REPOCC_DIR="$SCRATCH/spec"
"$REPOCC" --zero-stats > /dev/null
mkdir -p spec-modules
REPOCC_DUMP_FRAGMENT_MODULES="$SCRATCH/spec-modules" "$REPOCCXX" -O2 -g -c spec-main.cpp -o spec-main.o 2> spec.err \
  || fail "spec-main.cpp: $(cat spec.err)"
[ ! -s spec.err ] || fail "spec-main.cpp -O2 -g: $(cat spec.err)"
assert_eq "spec-main.cpp: no fallback to clang" 0 "$(stat_value fallbacks)"
# Whether the modules compiled were read back from bitcode (and the
# verifier ran) depends on how many cores were idle: each module as
# compiled must verify, whatever this machine's load.
for m in spec-modules/*.bc; do
  opt-19 -passes=verify -disable-output "$m" 2> spec.err || fail "$m does not verify: $(cat spec.err)"
  [ ! -s spec.err ] || fail "$m: $(head -c 400 spec.err)"
done
llvm-dwarfdump-19 --debug-info spec-main.o | grep -A1 'DW_TAG_call_site$' | grep -q 'call_origin.*_ZNK4SpecI5LocalE3getEv' \
  || fail "spec-main.o: no call site entry for the call to Spec<Local>::get"
# Lines added above Local and main's body edited: use() and get() are
# reused, and the object equals a cold compile's.
(echo '#include "spec.h"'; echo '// one'; echo; sed 's/return u.use(makeSpec());/int k = u.use(makeSpec()); return k;/' spec-main.body) > spec-main.cpp
"$REPOCC" --zero-stats > /dev/null
"$REPOCCXX" -O2 -g -c spec-main.cpp -o spec-main.o 2> spec.err
[ ! -s spec.err ] || fail "spec-main.cpp after the edit: $(cat spec.err)"
assert_eq "spec-main.cpp after the edit: use() and get() reused" 2 "$(stat_value definitions_pruned)"
REPOCC_DIR="$SCRATCH/spec-cold" "$REPOCCXX" -O2 -g -c spec-main.cpp -o spec-main.cold.o 2> spec.err
[ ! -s spec.err ] || fail "spec-main.cpp cold: $(cat spec.err)"
cmp spec-main.o spec-main.cold.o || fail "spec-main.o after the edit differs from its cold object"
llvm-dwarfdump-19 --verify spec-main.o > /dev/null || fail "spec-main.o: DWARF does not verify"
"$REPOCCXX" -O2 -g -c spec-other.cpp -o spec-other.o
"$REPOCCXX" -O2 -g spec-main.o spec-other.o -o spec-prog
./spec-prog && status=0 || status=$?
assert_eq "spec program's exit status" 42 "$status"

note "-O2 -g: a header's template instance with a function of the unit's source inlined, after lines are added above it"
# std::deque<Error>::resize inlines Error's implicit constructor, defined
# at the class's line in the unit's source. The instance's fragment names
# no source file, and its copy of those lines must still be placed where
# the class is now (a warm object once kept the old line).
printf 'class Error {\npublic:\n  std::string message_;\n  const char *extra_ = nullptr;\n};\nint count_errors(int n) {\n  std::deque<Error> errors;\n  errors.resize(n);\n  int total = 0;\n  for (auto &e : errors) total += e.message_.size() + (e.extra_ == nullptr);\n  return total;\n}\n' > errors.body
export REPOCC_DIR="$SCRATCH/errors"
(printf '#include <deque>\n#include <string>\n'; cat errors.body) > errors.cpp
"$REPOCCXX" -O2 -g -c errors.cpp -o errors.first.o
(printf '#include <deque>\n#include <string>\n// 1\n// 2\n// 3\n// 4\n'; cat errors.body) > errors.cpp
"$REPOCC" --zero-stats > /dev/null
"$REPOCCXX" -O2 -g -c errors.cpp -o errors.o
[ "$(stat_value definitions_pruned)" -gt 0 ] || fail "errors.cpp: nothing reused after four lines were added above"
REPOCC_DIR="$SCRATCH/errors-cold" "$REPOCCXX" -O2 -g -c errors.cpp -o errors.cold.o
cmp errors.o errors.cold.o || fail "errors.o after the edit differs from its cold object"
llvm-dwarfdump-19 errors.o | grep -B2 '"_ZN5ErrorC2Ev"' | grep -q 'DW_AT_decl_line.*(7)' \
  || fail "errors.o: Error's constructor is not at line 7: $(llvm-dwarfdump-19 errors.o | grep -B2 '"_ZN5ErrorC2Ev"')"

note "dynamic initializers of a header's inline variables and template static members, in three units, either order"
# Their .init_array entries are keyed by the variables and go in the
# variables' COMDAT groups; once the entry stayed in the glue, where the
# code generator dropped it (the initializer never ran). Either build
# order, the same objects (the `llvm.used` sections' SHF_GNU_RETAIN once
# followed where the allocator put earlier modules' globals).
cp "$P"/inits.h "$P"/inits-a.cpp "$P"/inits-b.cpp "$P"/inits-c.cpp .
clang++-19 -std=c++17 -O2 inits-a.cpp inits-b.cpp inits-c.cpp -pthread -o inits.clang
./inits.clang > inits.expected
grep -q "^A 96 shared literal reg+c 3$" inits.expected || fail "inits: clang-19's program printed $(cat inits.expected)"
for O in -O0 -O2 "-O2 -g"; do
  for u in a b c; do REPOCC_DIR="$SCRATCH/inits$O" "$REPOCCXX" -std=c++17 $O -c inits-$u.cpp -o inits-$u.o; done
  for u in c b a; do REPOCC_DIR="$SCRATCH/inits-rev$O" "$REPOCCXX" -std=c++17 $O -c inits-$u.cpp -o inits-$u.rev.o; done
  for u in a b c; do cmp inits-$u.o inits-$u.rev.o || fail "inits $O: inits-$u.o differs with the units compiled in reverse order"; done
  "$REPOCCXX" -std=c++17 $O inits-a.o inits-b.o inits-c.o -pthread -o inits
  assert_eq "inits $O program" "$(cat inits.expected)" "$(./inits)"
done

note "gdb: a program sharing a header's templates between its units, -O0 -g through the repository, against clang-19's"
cp "$P"/shelf.h "$P"/shelf-labels.cpp "$P"/shelf-main.cpp "$P"/shelf.gdb .
export REPOCC_DIR="$SCRATCH/repo-gdb" REPOCC_DEBUG_FRAGMENTS=true
"$REPOCCXX" -O0 -g -c shelf-labels.cpp -o shelf-labels.o
REPOCC_EXPLAIN=1 "$REPOCCXX" -O0 -g -c shelf-main.cpp -o shelf-main.o 2> shelf-main.explain
grep -q "reused _ZN5shelf5StackINS_5LabelEE4pushERKS1_: stored by another unit" shelf-main.explain \
  || fail "shelf-main.cpp did not reuse Stack<Label>::push from shelf-labels.cpp: $(grep push shelf-main.explain)"
"$REPOCCXX" -O0 -g shelf-labels.o shelf-main.o -o shelf
clang++-19 -O0 -g shelf-labels.cpp shelf-main.cpp -o shelf.clang
assert_eq "shelf output" "$(./shelf.clang)" "$(./shelf)"
session() { gdb -q -batch -nx -x shelf.gdb "./$1" 2>&1 | sed 's/0x[0-9a-f]*/ADDR/g'; }
session shelf.clang > gdb.clang
session shelf > gdb.repocc
grep -q 'shelf::Stack<shelf::Label>::sum (this=ADDR) at ./shelf.h:21' gdb.clang || fail "gdb did not stop in the template member in clang's build: $(cat gdb.clang)"
grep -q 'type = struct shelf::Label {' gdb.clang || fail "gdb cannot show struct Label in clang's build"
diff -u gdb.clang gdb.repocc || fail "gdb sessions differ"
unset REPOCC_DEBUG_FRAGMENTS

note "debug carving: functions holding local types (a lambda, a struct, a class with virtual methods) are carved from the batch and equal their compile alone"
cp "$P"/lambdas.h "$P"/lambdas.cpp .
out=$(REPOCC_DIR="$SCRATCH/repo-lambdas" REPOCC_DEBUG_FRAGMENTS=true REPOCC_CHECK_DEBUG_CARVING=1 REPOCC_TIMINGS=1 \
  "$REPOCCXX" -O2 -g -c lambdas.cpp -o lambdas.o 2>&1) || fail "repocc -O2 -g lambdas.cpp: $out"
case "$out" in *"debug carving differs"*) fail "lambdas.cpp: $out" ;; esac
echo "$out" | grep -Eq "debug batches: ([0-9]+) of \1 fragments .* 0 carved alone" \
  || fail "lambdas.cpp: a fragment was left out of the batch: $out"
assert_eq "lambdas.cpp: units that went to clang" 0 "$(REPOCC_DIR="$SCRATCH/repo-lambdas" stat_value fallbacks)"
"$REPOCCXX" lambdas.o -o lambdas
clang++-19 -O2 -g lambdas.cpp -o lambdas.clang
assert_eq "lambdas output" "$(./lambdas.clang)" "$(./lambdas)"

note "a C++20 coroutine at -O2 -g goes through the repository, also after a line is added above it"
# LLVM's coroutine split makes a frame type whose members point back at it
# (a cycle of uniqued nodes for the line rebase) and copies the
# coroutine's subprogram for each part (three definitions of one name).
cp "$P"/coro.cpp .
export REPOCC_DIR="$SCRATCH/repo-coro"
"$REPOCCXX" -std=c++20 -O2 -g -c coro.cpp -o coro.o || fail "repocc -O2 -g coro.cpp"
assert_eq "coro.cpp: units that went to clang" 0 "$(stat_value fallbacks)"
"$REPOCCXX" coro.o -o coro
clang++-19 -std=c++20 -O2 -g coro.cpp -o coro.clang
assert_eq "coroutine output" "$(./coro.clang)" "$(./coro)"
sed -i '1i // a line above everything' coro.cpp
"$REPOCCXX" -std=c++20 -O2 -g -c coro.cpp -o coro-warm.o || fail "repocc -O2 -g coro.cpp, edited"
assert_eq "coro.cpp edited: units that went to clang" 0 "$(stat_value fallbacks)"
REPOCC_DIR="$SCRATCH/repo-coro-cold" "$REPOCCXX" -std=c++20 -O2 -g -c coro.cpp -o coro-cold.o \
  || fail "repocc -O2 -g coro.cpp, cold"
cmp coro-warm.o coro-cold.o || fail "coro.cpp after an edit is not its cold object"
export REPOCC_DIR="$SCRATCH/repo"

note "yaml-cpp at -O3: regex_yaml.cpp after scanner.cpp (recursive destructors emitted in another order) equals its cold compile"
yaml=$(fetch_debian_source yaml-cpp --skip-patches)
yflags=(-O3 -std=gnu++11 -fvisibility=hidden -DYAML_CPP_USE_VISIBILITY -I"$yaml/include" -I"$yaml/src")
REPOCC_UNIT_CACHE=false REPOCC_DIR="$SCRATCH/repo-yaml" "$REPOCCXX" "${yflags[@]}" -c "$yaml/src/scanner.cpp" -o scanner.o \
  || fail "yaml-cpp scanner.cpp"
REPOCC_UNIT_CACHE=false REPOCC_DIR="$SCRATCH/repo-yaml" "$REPOCCXX" "${yflags[@]}" -c "$yaml/src/regex_yaml.cpp" -o regex-warm.o \
  || fail "yaml-cpp regex_yaml.cpp, warm"
REPOCC_UNIT_CACHE=false REPOCC_DIR="$SCRATCH/repo-yaml-cold" "$REPOCCXX" "${yflags[@]}" -c "$yaml/src/regex_yaml.cpp" -o regex-cold.o \
  || fail "yaml-cpp regex_yaml.cpp, cold"
cmp -s regex-warm.o regex-cold.o \
  || fail "regex_yaml.cpp after scanner.cpp is not its cold object: $(diff <(nm -S regex-cold.o) <(nm -S regex-warm.o) | head -5)"
