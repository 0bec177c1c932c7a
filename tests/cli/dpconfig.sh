#!/usr/bin/env bash
# `gpusched dpconfig validate`: an error names the line of the offending key or value, not the
# line of its mapping's first key, and the values NVIDIA's device plugin accepts.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/ok.yaml" <<'Y'
version: v1
flags:
  migStrategy: none
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: envvar
    deviceIDStrategy: uuid
Y
expect 0 "$GS" dpconfig validate "$TMP/ok.yaml" && has "$TMP/out" "valid"
# deviceIDStrategy is on line 7; its mapping's first key (passDeviceSpecs) on line 5
sed 's/deviceIDStrategy: uuid/deviceIDStrategy: serial/' "$TMP/ok.yaml" > "$TMP/id.yaml"
expect 2 "$GS" dpconfig validate "$TMP/id.yaml" && {
    has "$TMP/err" "id.yaml:7: flags.plugin.deviceIDStrategy"
    has "$TMP/err" "expected uuid or index"
}
# the article's --device-list-strategy=configmap, written in the config file
sed 's/deviceListStrategy: envvar/deviceListStrategy: configmap/' "$TMP/ok.yaml" > "$TMP/list.yaml"
expect 2 "$GS" dpconfig validate "$TMP/list.yaml" && {
    has "$TMP/err" "list.yaml:6: flags.plugin.deviceListStrategy"
    has "$TMP/err" "'configmap': expected envvar, volume-mounts, cdi-annotations or cdi-cri"
}
sed 's/deviceListStrategy: envvar/deviceListStrategy: [envvar, cdi-annotations]/' "$TMP/ok.yaml" > "$TMP/two.yaml"
expect 0 "$GS" dpconfig validate "$TMP/two.yaml"
# MPS beside migStrategy mixed: the line of sharing.mps, not line 1
cat > "$TMP/mps.yaml" <<'Y'
version: v1
flags:
  migStrategy: mixed
sharing:
  mps:
    resources:
      - {name: nvidia.com/gpu, replicas: 2}
Y
expect 2 "$GS" dpconfig validate "$TMP/mps.yaml" && has "$TMP/err" "mps.yaml:5: sharing.mps"
finish
