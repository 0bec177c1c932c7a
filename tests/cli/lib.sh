# Shared helpers for the CLI tests: gpusched=$1 source=$2 shared=$3
set -u
GS="$1"
SRC="$2"
SHARED="$3"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
pass=0
ok() { pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect CODE CMD...: run, keep stdout/stderr in $TMP/out $TMP/err
expect() {
    local want="$1"; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" != "$want" ]; then
        fail "exit $got, want $want: $*"; sed 's/^/    /' "$TMP/err" | head -5
        return 1
    fi
    ok
}
has() { # has FILE TEXT
    if grep -qF -- "$2" "$1"; then ok; else fail "'$2' not in $1:"; sed 's/^/    /' "$1" | head -8; fi
}
finish() {
    echo "$pass passed, $failures failed"
    [ "$failures" -eq 0 ]
}
