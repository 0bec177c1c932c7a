#!/usr/bin/env bash
# `gpusched agent run` on the node, without a cluster: no figure before it is measured (fake
# GPUs at 80 %, 91 C with 12 uncorrected ECC errors: the very first answer of /metrics, polled
# from the start, already shows them, and the GPU Unhealthy); the health checks' interval
# (CHECK_INTERVAL) and the monitor config's scrape_interval are two settings, and setting both
# says so; MPS (replicas or fractions) on a GPU older than Volta is refused, naming the GPU and
# the rule, before anything is served.
. "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "no curl"
cat > "$TMP/gpus.json" <<'J'
{"gpus": [{"model": "H100-80GB", "uuid": "GPU-hot00000", "util": 80, "temp_c": 91,
           "ecc_uncorrected": 12},
          {"model": "H100-80GB", "uuid": "GPU-cool0000", "util": 5, "temp_c": 40}]}
J
echo '{"scrape_interval": 3600, "metrics": ["gpu_utilization", "gpu_temperature_celsius"]}' \
    > "$TMP/monitor.json"
# health every hour, metrics every hour: only the read before serving can show the figures
port=$("$(dirname "$0")/../free-port.py")
CHECK_INTERVAL=3600 "$GS" --log-level info agent run --fake "$TMP/gpus.json" --metrics-port "$port" \
    --metrics-bind 127.0.0.1 --monitor-config "$TMP/monitor.json" --duration 30 \
    > "$TMP/run.log" 2>&1 &
pid=$!
first=""
for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$port/metrics" > "$TMP/first.txt" 2>/dev/null; then
        first=yes
        break
    fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
done
[ -n "$first" ] && ok || { fail "/metrics never answered"; cat "$TMP/run.log"; }
has "$TMP/first.txt" 'gpu_utilization{gpu="0",uuid="GPU-hot00000"'
grep -q '^gpu_utilization{gpu="0",.*} 80$' "$TMP/first.txt" && ok || fail "first scrape: not 80 %"
grep -q '^gpu_temperature_celsius{gpu="0",.*} 91$' "$TMP/first.txt" && ok || fail "first scrape: not 91 C"
grep -q '^gpu_ecc_uncorrected_errors{gpu="0",.*} 12$' "$TMP/first.txt" && ok || fail "first scrape: not 12 ECC errors"
grep -q '^gpu_healthy{gpu="0",.*} 0$' "$TMP/first.txt" && ok || fail "first scrape: GPU 0 not Unhealthy"
grep -q '^gpu_healthy{gpu="1",.*} 1$' "$TMP/first.txt" && ok || fail "first scrape: GPU 1 not healthy"
grep -q ' 0$' <(grep '^gpu_utilization{gpu="0"' "$TMP/first.txt") && fail "a 0 before the reading" || ok
has "$TMP/run.log" "CHECK_INTERVAL (--interval) 3600s paces health, pods and devices; the monitor config's scrape_interval 3600s paces the metrics: both apply"
has "$TMP/run.log" "health every 3600.0s, metrics every 3600.0s"
kill $pid 2>/dev/null
wait $pid 2>/dev/null
# the scrape interval alone paces the metrics, not the health checks (60 s by default)
"$GS" --log-level info agent run --fake "$TMP/gpus.json" --metrics-port 0 --monitor-config "$TMP/monitor.json" \
    --duration 0.1 > "$TMP/run2.log" 2>&1
has "$TMP/run2.log" "health every 60.0s, metrics every 3600.0s"
grep -q "both apply" "$TMP/run2.log" && fail "warned though CHECK_INTERVAL is not set" || ok

# MPS needs Volta or newer: a P100 with fractions, and under sharing.mps
echo '{"gpus": [{"model": "V100M16"}, {"model": "P100", "uuid": "GPU-p1000000"}]}' > "$TMP/old.json"
mkdir -p "$TMP/dp"
expect 2 "$GS" agent run --fake "$TMP/old.json" --metrics-port 0 --device-plugin-dir "$TMP/dp" \
    --fractions --mps-control /bin/false --duration 1 &&
    has "$TMP/err" "GPU 1 (NVIDIA Tesla-P100-PCIE-16GB, GPU-p1000000) has compute capability 6.0: MPS needs Volta or newer (compute capability 7.0)"
printf 'version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n' > "$TMP/mps.yaml"
expect 2 "$GS" agent run --fake "$TMP/old.json" --metrics-port 0 --device-plugin-dir "$TMP/dp" \
    --dp-config "$TMP/mps.yaml" --mps-control /bin/false --duration 1 &&
    has "$TMP/err" "sharing.mps in --dp-config: GPU 1"
[ -z "$(ls "$TMP/dp")" ] && ok || fail "a refused agent served: $(ls "$TMP/dp")"
finish
