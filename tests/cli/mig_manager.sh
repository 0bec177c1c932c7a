#!/usr/bin/env bash
# `gpusched mig validate` checks the MigManager document beside the mig-parted ConfigMap (the
# article's nvidia-mig-config.yaml has both): read as the scheduler reads it, its spec.config
# against the file's ConfigMap, each gpuClients[].migDevice against the configs, with file:line.
. "$(dirname "$0")/lib.sh"
A="$SRC/deploy/article/nvidia-mig-config.yaml"
expect 0 "$GS" mig validate "$A" && has "$TMP/out" "1 MigManager"
expect 0 "$GS" mig validate "$A" --gpu A100-80GB && has "$TMP/out" "1 MigManager"
bad() { # bad NAME LINE TEXT SED-EXPR [ARGS]
    local name="$1" line="$2" text="$3" expr="$4"; shift 4
    sed "$expr" "$A" > "$TMP/$name.yaml"
    expect 2 "$GS" mig validate "$TMP/$name.yaml" "$@" && {
        has "$TMP/err" "$name.yaml:$line: MigManager"
        has "$TMP/err" "$text"
    }
}
bad uncarved 56 "gpuClients[1].migDevice: no config of this file carves 1g.20gb" \
    's/migDevice: "1g.10gb"/migDevice: "1g.20gb"/'
bad h200 56 "1g.18gb is not an A100-80GB profile; A100-80GB offers" \
    's/migDevice: "1g.10gb"/migDevice: "1g.18gb"/' --gpu A100-80GB
bad config 43 "spec.config: 'other' names no ConfigMap of this file (it holds nvidia-mig-config)" \
    's/  config: nvidia-mig-config/  config: other/'
bad number 56 "gpuClients[1].migDevice: expected a MIG profile" 's/migDevice: "1g.10gb"/migDevice: 7/'
bad api 38 "apiVersion 'nvidia.com/v1': expected nvidia.com/v1alpha1" \
    's|apiVersion: nvidia.com/v1alpha1|apiVersion: nvidia.com/v1|'
bad selector 50 "gpuClients[0].podSelector.matchLabels.workload" 's/workload: "llm-inference"/workload: [a, b]/'
# a file without a MigManager is checked as before
sed '/^---$/,$d' "$A" > "$TMP/configmap.yaml"
expect 0 "$GS" mig validate "$TMP/configmap.yaml" &&
    if grep -q MigManager "$TMP/out"; then fail "a MigManager where there is none"; else ok; fi
finish
