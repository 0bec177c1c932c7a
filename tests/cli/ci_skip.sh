#!/usr/bin/env bash
# Honest CI: under CI=true a test that cannot run fails; elsewhere it skips (exit 77).
# 1. The helpers, as a test uses them: a script sourcing tests/cli/lib.sh (or
#    tests/e2e/cluster.sh) whose prerequisite is missing calls skip, or exits 77 itself, or
#    exits 77 through e2e_down's trap: under CI=true it exits 1 saying why, without CI (unset
#    or false) 77; a passing or failing script keeps its status either way.
# 2. Criterion counts a skip as a pass (exit 0), printing "[SKIP]" under --verbose.
# 3. This build's own registrations (ctest --show-only=json-v1: a unit test's command and
#    properties, a cli test's, an e2e test's) run such a skipping Criterion binary and such
#    scripts in a ctest of their own with CI unset: with GS_CI ON in CMakeCache.txt each one
#    fails (and a passing Criterion binary still passes); with it OFF the unit one passes and
#    the scripts are reported skipped.
. "$(dirname "$0")/lib.sh"
BUILD="$(cd "$(dirname "$GS")" && pwd)"
[ -f "$BUILD/CMakeCache.txt" ] || skip "no CMakeCache.txt beside $GS"
command -v ctest >/dev/null || skip "no ctest"

# child CI BODY: run a script that sources the helpers, then BODY, with CI set to the value
# given (- : unset); its status in $TMP/rc, its output in $TMP/child
child() {
    local ci="$1" body="$2"
    printf '%s\n' "$body" > "$TMP/child.sh"
    if [ "$ci" = - ]; then
        (unset CI; bash "$TMP/child.sh" "$GS" "$SRC" "$SHARED") > "$TMP/child" 2>&1
    else
        CI="$ci" bash "$TMP/child.sh" "$GS" "$SRC" "$SHARED" > "$TMP/child" 2>&1
    fi
    echo $? > "$TMP/rc"
}
# want CI BODY RC [TEXT]: the child exits RC (and prints TEXT)
want() {
    child "$1" "$2"
    local got
    got="$(cat "$TMP/rc")"
    if [ "$got" != "$3" ]; then
        fail "CI=$1: exit $got, want $3: $2"; sed 's/^/    /' "$TMP/child" | head -5
        return
    fi
    ok
    [ -z "${4:-}" ] || has "$TMP/child" "$4"
}
LIB=". '$SRC/tests/cli/lib.sh'"
CLUSTER=". '$SRC/tests/e2e/cluster.sh'"
MISSING="$TMP/no-such-prerequisite"
CI_FAIL="FAIL: a test may not skip under CI=true"

# 1. the helpers
for ci in - false; do
    want $ci "$LIB; [ -e '$MISSING' ] || skip 'no prerequisite'" 77 "skipped: no prerequisite"
    want $ci "$LIB; [ -e '$MISSING' ] || exit 77" 77
    want $ci "$CLUSTER; [ -e '$MISSING' ] || skip 'no prerequisite'" 77 "skipped: no prerequisite"
    want $ci "$CLUSTER; E2E_DIR='$TMP/e2e'; mkdir -p \$E2E_DIR; trap e2e_down EXIT; exit 77" 77
done
want true "$LIB; [ -e '$MISSING' ] || skip 'no prerequisite'" 1 "$CI_FAIL"
want true "$LIB; [ -e '$MISSING' ] || exit 77" 1 "$CI_FAIL"
want true "$CLUSTER; [ -e '$MISSING' ] || skip 'no prerequisite'" 1 "$CI_FAIL"
want true "$CLUSTER; E2E_DIR='$TMP/e2e'; mkdir -p \$E2E_DIR; trap e2e_down EXIT; exit 77" 1 \
    "$CI_FAIL"
[ ! -e "$TMP/e2e" ] && ok || fail "e2e_down left its folder"
for ci in - true; do
    want $ci "$LIB; ok; finish" 0
    want $ci "$LIB; fail 'broken'; finish" 1 "FAIL: broken"
done

# 2. Criterion: a skip is a pass, "[SKIP]" under --verbose
cc="$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' "$BUILD/CMakeCache.txt")"
flags="$(pkg-config --cflags --libs criterion)" || skip "no pkg-config for criterion"
printf '#include <criterion/criterion.h>\nTest(ci, cannot_run_here) { cr_skip_test("no GPU"); }\n' \
    > "$TMP/skip.c"
printf '#include <criterion/criterion.h>\nTest(ci, runs) { cr_assert_eq(1, 1); }\n' > "$TMP/pass.c"
for t in skip pass; do
    # shellcheck disable=SC2086
    "$cc" "$TMP/$t.c" $flags -o "$TMP/$t" > "$TMP/cc.err" 2>&1 ||
        { fail "compiling a Criterion test:"; sed 's/^/    /' "$TMP/cc.err" | head -5; finish; exit; }
done
expect 0 "$TMP/skip" --jobs 1 --verbose && has "$TMP/err" "[SKIP] ci::cannot_run_here"
expect 0 "$TMP/pass" --jobs 1 --verbose && has "$TMP/err" "[PASS] ci::runs"

# 3. this build's registrations, run by ctest on the skipping children
printf '%s\n' "$LIB; [ -e '$MISSING' ] || skip 'no prerequisite'" > "$TMP/cli_skip.sh"
printf '%s\n' "$CLUSTER; [ -e '$MISSING' ] || skip 'no prerequisite'" > "$TMP/e2e_skip.sh"
mkdir -p "$TMP/ctest"
ctest --test-dir "$BUILD" --show-only=json-v1 > "$TMP/tests.json" 2>"$TMP/err" ||
    { fail "ctest --show-only:"; sed 's/^/    /' "$TMP/err" | head -5; }
python3 - "$TMP/tests.json" "$TMP" "$GS" "$SRC" "$SHARED" > "$TMP/ctest/CTestTestfile.cmake" \
    2>"$TMP/err" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
tmp, gs, src, shared = sys.argv[2:6]
def labelled(label):  # the first registered test of a label whose program is built
    for t in tests:
        for p in t.get("properties", []):
            if p["name"] == "LABELS" and label in p["value"] and "command" in t:
                return t
    sys.stderr.write("no %s test is built\n" % label)
    sys.exit(3)
def q(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'
# (whose registration is copied, name here, command here): the real unit test's arguments
# after its program for the Criterion binaries; the scripts take what a cli or e2e test takes
rows = [("unit", "unit_skip", [tmp + "/skip"]),
        ("unit", "unit_pass", [tmp + "/pass"]),
        ("cli", "cli_skip", ["bash", tmp + "/cli_skip.sh", gs, src, shared]),
        ("e2e", "e2e_skip", ["bash", tmp + "/e2e_skip.sh", gs, gs])]
for label, name, cmd in rows:
    t = labelled(label)
    if name.startswith("unit"):
        cmd = cmd + t["command"][1:]
    print("add_test(%s %s)" % (name, " ".join(q(c) for c in cmd)))
    props = []
    for p in t.get("properties", []):
        if p["name"] in ("ENVIRONMENT", "FAIL_REGULAR_EXPRESSION", "PASS_REGULAR_EXPRESSION",
                         "SKIP_REGULAR_EXPRESSION", "SKIP_RETURN_CODE"):
            v = p["value"]
            v = ";".join(v) if isinstance(v, list) else v
            props.append("%s %s" % (p["name"], q(v)))
    if props:
        print("set_tests_properties(%s PROPERTIES %s)" % (name, " ".join(props)))
PY
case $? in
0) ;;
3) skip "$(cat "$TMP/err")" ;;
*) fail "reading this build's registrations:"; sed 's/^/    /' "$TMP/err" | head -5 ;;
esac
(unset CI; cd "$TMP/ctest" && ctest --test-dir "$TMP/ctest") > "$TMP/ctest.out" 2>&1
crc=$?
verdict() { # verdict NAME: Passed, Failed or Skipped, as ctest reported the test
    sed -n "s/.*Test *#[0-9]*: $1 \.* *\**\([A-Za-z]*\).*/\1/p" "$TMP/ctest.out" | head -1
}
if grep -q '^GS_CI:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
    [ "${CI:-}" = true ] && ok || fail "GS_CI is ON, yet this test runs without CI=true"
    wants="unit_skip=Failed unit_pass=Passed cli_skip=Failed e2e_skip=Failed"
    [ $crc -ne 0 ] && ok || fail "ctest passed skipped tests under GS_CI"
else
    wants="unit_skip=Passed unit_pass=Passed cli_skip=Skipped e2e_skip=Skipped"
    [ $crc -eq 0 ] && ok || fail "ctest failed without GS_CI (exit $crc)"
fi
for w in $wants; do
    got="$(verdict "${w%%=*}")"
    if [ "$got" = "${w#*=}" ]; then ok; else
        fail "${w%%=*}: ctest says '$got', want ${w#*=}"; sed 's/^/    /' "$TMP/ctest.out" | head -20
    fi
done
finish
