#!/usr/bin/env bash
# `gpusched mig`: the article's MIG config validates; invalid configs exit 2 naming the line.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/ok.yaml" <<'Y'
version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  mixed:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - devices: [1]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - devices: [2, 3]
      mig-enabled: false
Y
expect 0 "$GS" mig validate "$TMP/ok.yaml" && has "$TMP/out" "valid mig-parted config"
expect 0 "$GS" mig validate "$TMP/ok.yaml" --gpu A100-SXM4-80GB
if [ -f "$SHARED/seed/examples/nvidia-mig-config.yaml" ]; then
    expect 0 "$GS" mig validate "$SHARED/seed/examples/nvidia-mig-config.yaml" &&
        has "$TMP/out" "mixed"
fi
bad() { # bad NAME LINE TEXT SED-EXPR [ARGS]
    local name="$1" line="$2" text="$3" expr="$4"; shift 4
    sed "$expr" "$TMP/ok.yaml" > "$TMP/$name.yaml"
    expect 2 "$GS" mig validate "$TMP/$name.yaml" "$@" && {
        has "$TMP/err" "$name.yaml:$line:"
        has "$TMP/err" "$text"
    }
}
bad eight 7 "at most 7" 's/"1g.10gb": 7/"1g.10gb": 8/'
bad unknown 7 "not a MIG profile" 's/"1g.10gb": 7/"1g.11gb": 7/'
bad four 12 "at most 1" 's/"3g.40gb": 2/"4g.40gb": 2/'
bad other 12 "not a MIG profile of A100-80GB" 's/"3g.40gb": 2/"3g.71gb": 2/' --gpu A100-80GB
bad h200 12 "not a MIG profile" 's/"3g.40gb": 2/"3g.71gb": 2/'
bad broken 11 "invalid YAML" 's/devices: \[0\]/devices: [0/'
expect 2 "$GS" mig validate "$TMP/missing.yaml"
expect 0 "$GS" mig profiles --gpu H200-141GB && {
    has "$TMP/out" "3g.71gb"
    has "$TMP/out" "nvidia.com/mig-1g.18gb.me"
}
expect 0 "$GS" mig layouts --gpu A100-80GB && has "$TMP/out" "maximal layouts"
expect 0 "$GS" mig plan --gpu A100-80GB --demand 3g.40gb=1,1g.10gb=3 && has "$TMP/out" "1 GPU"
expect 2 "$GS" mig plan --gpu A100-80GB --demand 9g.9gb=1
expect 2 "$GS" mig profiles --gpu L40S-48GB
expect 2 "$GS" mig profiles --gpu NoSuchGPU
finish
