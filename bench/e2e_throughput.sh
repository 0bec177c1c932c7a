#!/usr/bin/env bash
# bench-e2e: scheduling throughput on the real control plane, gpusched against the stock
# kube-scheduler in the same run with the same client QPS and burst: 1,000 fake nodes
# (8 whole GPUs each), 5,000 single-GPU pods created first, then the scheduler starts and
# the clock runs until every pod is bound. One JSON line per scheduler.
set -u
GS="$1"; DRIVER="$2"; NODES="${3:-1000}"; PODS="${4:-5000}"; QPS="${QPS:-100}"; BURST="${BURST:-200}"
. "$(dirname "$0")/../tests/e2e/cluster.sh"
e2e_up >&2 || exit 1
echo "$NODES node A100-80GB 8 whole" | "$DRIVER" nodes || exit 1
K="$E2E_BIN/kubectl"
now() { date +%s.%N; }
run() { # NAME SCHEDULER-NAME COMMAND...
    local name="$1" sched="$2"; shift 2
    E2E_SCHEDULER="$sched" "$DRIVER" pods <<< "$PODS p e2e gpu:1" || exit 1
    local t0 t1
    t0=$(now)
    "$@" > "$E2E_DIR/$name.log" 2>&1 &
    local pid=$!
    E2E_SCHEDULER="$sched" "$DRIVER" wait-bound "$PODS" 900 >&2 || { tail -5 "$E2E_DIR/$name.log" >&2; exit 1; }
    t1=$(now)
    kill "$pid"; wait "$pid" 2>/dev/null
    python3 -c "import sys; print('{\"bench\":\"e2e_throughput\",\"scheduler\":\"%s\",\"nodes\":%d,\"pods\":%d,\"qps\":%d,\"burst\":%d,\"pods_per_s\":%.1f}' % ('$name', $NODES, $PODS, $QPS, $BURST, $PODS / ($t1 - $t0)))"
    "$K" delete pods --all -n e2e --grace-period=0 --force --wait=false >/dev/null 2>&1
    for i in $(seq 1 120); do
        [ "$("$K" get pods -n e2e --no-headers 2>/dev/null | wc -l)" = 0 ] && break
        sleep 1
    done
}
run gpusched gpusched "$GS" scheduler --kubeconfig "$E2E_DIR/admin.kubeconfig" \
    --leader-elect false --http-port 0 --qps "$QPS" --burst "$BURST"
cat > "$E2E_DIR/ks.yaml" <<Y
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection:
  kubeconfig: $E2E_DIR/admin.kubeconfig
  qps: $QPS
  burst: $BURST
Y
run kube-scheduler default-scheduler "$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0
