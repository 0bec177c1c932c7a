#!/usr/bin/env bash
# Exit codes and --help everywhere: 0 ok, 1 runtime failure, 2 bad input.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" --help && has "$TMP/out" "usage: gpusched"
expect 2 "$GS"
expect 2 "$GS" frobnicate && has "$TMP/err" "unknown command"
expect 0 "$GS" sim --help && has "$TMP/out" "gpusched sim openb"
expect 0 "$GS" sim openb --help
expect 0 "$GS" mig --help && has "$TMP/out" "gpusched mig plan"
expect 0 "$GS" mig validate --help
expect 2 "$GS" sim --frob
expect 2 "$GS" sim --format xml
expect 2 "$GS" sim scenario "$TMP/nothing.yaml"
printf 'duration: 1h\nnode_groups: [{name: a, gpu: B9000, nodes: 1}]\n' > "$TMP/s.yaml"
expect 2 "$GS" sim scenario "$TMP/s.yaml" && has "$TMP/err" "s.yaml:2: node_groups[0].gpu"
expect 2 "$GS" --log-level loud sim
# the version is project(VERSION), which the chart's appVersion and the image tag follow
v="$(sed -En 's/^project.gpusched VERSION ([0-9.]+) .*/\1/p' "$SRC/CMakeLists.txt")"
expect 0 "$GS" version && has "$TMP/out" "gpusched $v"
expect 0 "$GS" --version && has "$TMP/out" "gpusched $v"
grep -qx "appVersion: \"\?$v\"\?" "$SRC/charts/gpusched/Chart.yaml" && ok ||
    fail "charts/gpusched/Chart.yaml appVersion is not $v"
# Every flag in a command's table (src/cli) is in its --help, but for those left out on purpose.
undocumented=" agent:--config agent:--device-plugin-dir main:--version main:-h main:--help "
for pair in main: scheduler:scheduler,extender,explain agent:agent sim:sim scenario:sim \
    advise:advise mig:mig top:top; do
    file="${pair%%:*}"; cmds="${pair#*:}"; : > "$TMP/help"
    if [ -z "$cmds" ]; then "$GS" --help >> "$TMP/help"; fi
    for c in ${cmds//,/ }; do "$GS" "$c" --help >> "$TMP/help"; done
    flags="$(grep -o 'GS_CLI_[A-Z_]*("-[-a-z0-9]*"' "$SRC/src/cli/$file.c" | sed 's/.*("//; s/"$//' | sort -u)"
    [ -n "$flags" ] || fail "no flag table found in src/cli/$file.c"
    for f in $flags; do
        case "$undocumented" in *" $file:$f "*) continue ;; esac
        if grep -qE -- "(^|[^a-z0-9-])$f([^a-z0-9-]|$)" "$TMP/help"; then ok; else fail "$f of src/cli/$file.c is not in its --help"; fi
    done
done
finish
