#!/usr/bin/env bash
# `gpusched mig`: the article's MIG config validates (invalid configs exit 2 naming the line);
# profiles, layouts and fewest-GPU plans for every MIG model, named as GFD or nvidia-smi names it.
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
bad unknown 7 "1g.11gb is not an A100-80GB profile" 's/"1g.10gb": 7/"1g.11gb": 7/'
bad four 12 "at most 1" 's/"3g.40gb": 2/"4g.40gb": 2/'
bad other 12 "3g.71gb is not an A100-80GB profile; A100-80GB offers 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb (closest: 3g.40gb)" 's/"3g.40gb": 2/"3g.71gb": 2/' --gpu A100-80GB
# one GPU named by two entries of a config
bad twice 13 "GPU 0 is also in mig-configs.mixed[0].devices (line 9)" 's/devices: \[1\]/devices: [1, 0]/'
bad all 17 "all takes in GPU 0, already in mig-configs.mixed[0].devices (line 9)" 's/devices: \[2, 3\]/devices: all/'
bad h200 12 "3g.71gb is not an A100-80GB profile" 's/"3g.40gb": 2/"3g.71gb": 2/'
bad broken 11 "invalid YAML" 's/devices: \[0\]/devices: [0/'
expect 2 "$GS" mig validate "$TMP/missing.yaml"
expect 0 "$GS" mig profiles --gpu H200-141GB && {
    has "$TMP/out" "3g.71gb"
    has "$TMP/out" "nvidia.com/mig-1g.18gb.me"
}
expect 0 "$GS" mig layouts --gpu A100-80GB && has "$TMP/out" "maximal layouts"
expect 0 "$GS" mig plan --gpu A100-80GB --demand 3g.40gb=1,1g.10gb=3 && has "$TMP/out" "1 GPU"
expect 2 "$GS" mig plan --gpu A100-80GB --demand 9g.9gb=1
# the fewest GPUs: an A100 holds one 1g.10gb+me beside six 1g.10gb, so 2 GPUs, not 3
expect 0 "$GS" mig plan --gpu A100-80GB --demand 1g.10gb+me=2,1g.10gb=12 && {
    has "$TMP/out" "A100-80GB: 2 GPUs"
    has "$TMP/out" "gpu 1: 1x1g.10gb+me + 6x1g.10gb"
}
# media engines: a +me.all instance shares its GPU only with -me ones
expect 0 "$GS" mig plan --gpu RTXPRO6000-96GB --demand 1g.24gb+me.all=1,1g.24gb=3 &&
    has "$TMP/out" "RTXPRO6000-96GB: 2 GPUs"
expect 0 "$GS" mig plan --gpu RTXPRO6000-96GB --demand 1g.24gb+me.all=1,1g.24gb-me=3 &&
    has "$TMP/out" "RTXPRO6000-96GB: 1 GPU"
# every MIG model, named as GFD's nvidia.com/gpu.product names it or as nvidia-smi prints it
for gpu in "NVIDIA-A100-PCIE-40GB=1g.5gb+me" "NVIDIA-A100-80GB-PCIe=7g.80gb" \
    "NVIDIA-A30=nvidia.com/mig-2g.12gb.me" "NVIDIA-H100-NVL=3g.47gb" \
    "NVIDIA-GH200-480GB=3g.48gb" "NVIDIA GH200 144G HBM3e=7g.144gb" \
    "NVIDIA-B200=7g.180gb" \
    "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition=nvidia.com/mig-1g.24gb.me.all" \
    "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb=7g.40gb"; do
    expect 0 "$GS" mig profiles --gpu "${gpu%%=*}" && has "$TMP/out" "${gpu#*=}"
    expect 0 "$GS" mig layouts --gpu "${gpu%%=*}" && has "$TMP/out" "maximal layouts"
    expect 0 "$GS" mig layouts --gpu "${gpu%%=*}" --all && has "$TMP/out" "valid layouts"
done
# 4-slice grids: A30 and RTX PRO 6000 Blackwell have 4 compute and 4 memory slices
expect 0 "$GS" mig layouts --gpu "NVIDIA A30" && {
    has "$TMP/out" "A30-24GB: 8 maximal layouts"
    has "$TMP/out" "1x2g.12gb+me + 1x2g.12gb"
    has "$TMP/out" "2g.12gb@0 2g.12gb+me@2"
}
expect 0 "$GS" mig profiles --gpu A30-24GB && has "$TMP/out" "1g.6gb         14       1        1 0,1,2,3"
expect 0 "$GS" mig layouts --gpu RTXPRO6000-96GB && {
    has "$TMP/out" "3x1g.24gb-me + 1x1g.24gb+me.all"
    has "$TMP/out" "1g.24gb+me.all@0 1g.24gb-me@1 1g.24gb-me@2 1g.24gb-me@3"
}
expect 0 "$GS" mig plan --gpu A30 --demand 4g.24gb=1,2g.12gb=3,1g.6gb=2 && has "$TMP/out" "3 GPUs"
expect 0 "$GS" mig plan --gpu A30 --demand 1g.6gb+me=1,2g.12gb+me=1 && has "$TMP/out" "2 GPUs"
cat > "$TMP/a30.yaml" <<'Y'
version: v1
mig-configs:
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.6gb": 2
        "2g.12gb": 1
  media:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.6gb+me": 1
        "2g.12gb+me": 1
Y
expect 2 "$GS" mig validate "$TMP/a30.yaml" --gpu NVIDIA-A30 && has "$TMP/err" "cannot share"
sed -i '/^  media:/,$d' "$TMP/a30.yaml"
expect 0 "$GS" mig validate "$TMP/a30.yaml" --gpu NVIDIA-A30
expect 2 "$GS" mig profiles --gpu NVIDIA-H20-3e
# every profile prints its SMs and memory: NVML's figure, or a lower bound marked >=
for gpu in A100-40GB A100-80GB H100-80GB H100-PCIe-80GB H100-NVL-94GB H200-141GB A30-24GB \
    GH200-96GB GH200-144GB B200-180GB RTXPRO6000-96GB; do
    expect 0 "$GS" mig profiles --gpu "$gpu" &&
        if awk 'NR > 2 && /nvidia.com/ && ($7 ~ /^(>=)?0$/ || $8 ~ /^(>=)?0$/)' "$TMP/out" | grep -q .; then
            fail "$gpu: a profile with 0 SMs or 0 MiB"; cat "$TMP/out"
        else ok; fi
done
expect 0 "$GS" mig profiles --gpu B200 && {
    has "$TMP/out" "3g.90gb         9       3        4 0,4                2   >=54    >=90624"
    has "$TMP/out" "1g.23gb        19       1        1 0,1,2,3,4,5,6      7     18      20992"
}
# H20 and B300: MIG silicon, no published instance figures: refused, saying why
for gpu in NVIDIA-H20 NVIDIA-B300-SXM6-AC; do
    expect 2 "$GS" mig profiles --gpu "$gpu" && has "$TMP/err" "no public source gives"
    expect 2 "$GS" mig plan --gpu "$gpu" --demand 1g.12gb=1 && has "$TMP/err" "MIG is not offered"
done
# the article's H200 sizes (7 x 20 GB, 2 x 70 GB) are named with NVIDIA's profiles
expect 2 "$GS" mig plan --gpu H200-141GB --demand 1g.20gb=7 &&
    has "$TMP/err" "1g.20gb is not an H200-141GB profile; H200-141GB offers 1g.18gb, 1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (closest: 1g.18gb)"
expect 2 "$GS" mig plan --gpu H200-141GB --demand 3g.70gb=2 && has "$TMP/err" "(closest: 3g.71gb)"
expect 2 "$GS" mig profiles --gpu L40S-48GB
expect 2 "$GS" mig profiles --gpu NoSuchGPU
finish
