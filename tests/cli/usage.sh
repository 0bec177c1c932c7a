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
finish
