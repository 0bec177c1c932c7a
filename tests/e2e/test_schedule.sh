#!/usr/bin/env bash
# 100 fake GPU nodes (A100-80GB whole x8; A100-80GB with the article's mixed MIG config; H100
# with all-3g.40gb; L40S time-sliced x4; RTX 4090) and 1,000 mixed pods on a real
# kube-apiserver: every schedulable pod is bound to a node that fits it, no device is
# over-allocated (checked from the API), node selectors hold, and the unschedulable pods
# carry a FailedScheduling Event that says why. Then /metrics and /readyz answer.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
"$DRIVER" nodes <<'S' || exit 1
30 a100 A100-80GB 8 whole
20 a100mig A100-80GB 8 mig:mixed
20 h100 H100-80GB 8 mig:all-3g.40gb
20 l40s L40S-48GB 4 ts:4
10 rtx RTX4090-24GB 4 whole
S
port=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$port" > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
# schedulable: 15x8 + 40x2 + 200x1 + 150x1 (L40S) + 200 3g + 100 1g + 265 CPU-only = 970
"$DRIVER" pods <<'S' || exit 1
15 big e2e gpu:8
40 two e2e gpu:2
200 one e2e gpu:1 nvidia.com/gpu.product=A100-SXM4-80GB
150 ts e2e gpu:1 nvidia.com/gpu.product=L40S
200 llm e2e mig:3g.40gb
100 emb e2e mig:1g.10gb
265 cpu e2e none
15 seven e2e mig:7g.80gb
15 h200 e2e gpu:1 nvidia.com/gpu.product=H200
S
ok=0
"$DRIVER" wait-bound 970 300 || ok=1
"$DRIVER" verify --expect-bound 970 --expect-unschedulable 30 || ok=1
# under kwok the bound pods start on their fake nodes
if [ "$E2E_KWOK" = 1 ]; then "$DRIVER" wait-running 970 300 || ok=1; fi
curl -sf "http://127.0.0.1:$port/metrics" > "$E2E_DIR/metrics" || ok=1
grep -q 'gpusched_schedule_attempts_total{result="scheduled"}' "$E2E_DIR/metrics" || ok=1
grep -q 'gpusched_gpus_allocatable{model="A100-80GB"}' "$E2E_DIR/metrics" || ok=1
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || ok=1
if [ $ok -ne 0 ]; then
    echo "--- scheduler log (tail)"; tail -30 "$E2E_DIR/scheduler.log"
fi
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $ok
