#!/usr/bin/env bash
# `gpusched agent`: inspect shows what the fake backend holds (profiles against the catalog,
# instances, readings) and changes nothing; mig-plan is the MIG manager's dry run; without the NVIDIA library it reports no GPUs and
# says why; bad descriptions and flags exit 2 naming what was wrong; the agent runs without a
# cluster and serves /metrics for the time asked.
. "$(dirname "$0")/lib.sh"
cat > "$TMP/gpus.json" <<'J'
{"gpus": [{"model": "A100-80GB", "mig": true,
           "instances": [{"profile": "3g.40gb", "start": 0}, {"profile": "1g.10gb", "start": 6}]},
          {"model": "H100-80GB", "temp_c": 71, "util": 40}]}
J
cp "$TMP/gpus.json" "$TMP/before.json"
expect 0 "$GS" agent inspect --fake "$TMP/gpus.json" && {
    has "$TMP/out" "backend fake: 2 GPUs"
    has "$TMP/out" "MIG enabled"
    has "$TMP/out" "starts {0,4}  3g.40gb"
    has "$TMP/out" "instance GI 1: 3g.40gb at start 0"
    has "$TMP/out" "instance GI 2: 1g.10gb at start 6"
    has "$TMP/out" "71 C"
}
cmp -s "$TMP/gpus.json" "$TMP/before.json" && ok || fail "inspect changed the description"
# no driver library here: no GPUs, and the reason
if ! ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then
    expect 0 "$GS" agent inspect && { has "$TMP/out" "backend nvml: 0 GPUs"; has "$TMP/err" "no GPUs"; }
fi
echo '{"gpus": [{"model": "A100-80GB", "mig": true, "instances": [{"profile": "3g.40gb", "start": 2}]}]}' > "$TMP/bad.json"
expect 2 "$GS" agent inspect --fake "$TMP/bad.json" && has "$TMP/err" "gpus[0].instances[0]"
# a second 1g.10gb+me: NVML allows one per GPU (the profile's max count)
echo '{"gpus": [{"model": "H100-80GB", "mig": true, "instances": [{"profile": "1g.10gb+me", "start": 0}, {"profile": "1g.10gb+me", "start": 1}]}]}' > "$TMP/me.json"
expect 2 "$GS" agent inspect --fake "$TMP/me.json" &&
    has "$TMP/err" "gpus[0].instances[1]: 1g.10gb+me: at most 1 instance of it fits on one H100-80GB"
# unknown fields are refused with their path and what was expected
echo '{"gpus": [{"model": "A100-80GB", "temperature": 50}]}' > "$TMP/unknown.json"
expect 2 "$GS" agent inspect --fake "$TMP/unknown.json" &&
    has "$TMP/err" "gpus[0].temperature: unexpected field (expected one of: model, uuid"
echo '{"gpus": [], "gpu": [{"model": "A100-80GB"}]}' > "$TMP/top.json"
expect 2 "$GS" agent inspect --fake "$TMP/top.json" && has "$TMP/err" "gpu: unexpected field (expected one of: gpus, topology)"
expect 2 "$GS" agent run --fake "$TMP/gpus.json" --interval soon && has "$TMP/err" "--interval"
expect 2 "$GS" agent run --fake "$TMP/gpus.json" --auto-cordon maybe && has "$TMP/err" "true or false"
expect 2 "$GS" agent fly && has "$TMP/err" "unknown command"
CHECK_INTERVAL=x expect 2 "$GS" agent run --fake "$TMP/gpus.json" && has "$TMP/err" "CHECK_INTERVAL"
# the MIG manager's dry run: the article's mixed config on this node, nothing changed
python3 - "$SRC/deploy/article/nvidia-mig-config.yaml" > "$TMP/mig.yaml" <<'P'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = next(k for k, l in enumerate(lines) if l.strip() == "config.yaml: |")
ind = len(lines[i + 1]) - len(lines[i + 1].lstrip())
for l in lines[i + 1:]:
    if l.strip() and len(l) - len(l.lstrip()) < ind:
        break
    print(l[ind:])
P
expect 0 "$GS" agent mig-plan --fake "$TMP/gpus.json" --mig-config "$TMP/mig.yaml" --config mixed && {
    has "$TMP/out" "GPU 0 (A100-80GB): destroy 1g.10gb@6; keep 3g.40gb@0; create 3g.40gb@4;"
    has "$TMP/out" "GPU 1 (H100-80GB): MIG enable; create 1g.10gb@0;"
}
cmp -s "$TMP/gpus.json" "$TMP/before.json" && ok || fail "mig-plan changed the description"
expect 2 "$GS" agent mig-plan --fake "$TMP/gpus.json" --mig-config "$TMP/mig.yaml" --config none && has "$TMP/err" "'none' is not in"
expect 2 "$GS" agent mig-plan --fake "$TMP/gpus.json" && has "$TMP/err" "are required"
# a short run without a cluster
port=$("$(dirname "$0")/../free-port.py")
"$GS" agent run --fake "$TMP/gpus.json" --interval 0.2 --duration 3 --metrics-port "$port" \
    --metrics-bind 127.0.0.1 > "$TMP/run.log" 2>&1 &
sleep 1.5
curl -sf "http://127.0.0.1:$port/metrics" > "$TMP/m.txt" && ok || fail "no /metrics"
has "$TMP/m.txt" 'gpu_temperature_celsius{gpu="1"'
wait
finish
