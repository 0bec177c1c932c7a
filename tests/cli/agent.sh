#!/usr/bin/env bash
# `gpusched agent`: inspect shows what the fake backend holds (profiles against the catalog,
# instances, readings) and changes nothing; without the NVIDIA library it reports no GPUs and
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
expect 2 "$GS" agent run --fake "$TMP/gpus.json" --interval soon && has "$TMP/err" "--interval"
expect 2 "$GS" agent run --fake "$TMP/gpus.json" --auto-cordon maybe && has "$TMP/err" "true or false"
expect 2 "$GS" agent fly && has "$TMP/err" "unknown command"
CHECK_INTERVAL=x expect 2 "$GS" agent run --fake "$TMP/gpus.json" && has "$TMP/err" "CHECK_INTERVAL"
# a short run without a cluster
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$GS" agent run --fake "$TMP/gpus.json" --interval 0.2 --duration 3 --metrics-port "$port" \
    --metrics-bind 127.0.0.1 > "$TMP/run.log" 2>&1 &
sleep 1.5
curl -sf "http://127.0.0.1:$port/metrics" > "$TMP/m.txt" && ok || fail "no /metrics"
has "$TMP/m.txt" 'gpu_temperature_celsius{gpu="1"'
wait
finish
