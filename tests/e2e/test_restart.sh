#!/usr/bin/env bash
# The scheduler killed half-way (SIGKILL) and started again: it rebuilds from the API, never
# allocates a device twice, and schedules the rest.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
"$DRIVER" nodes <<'S' || exit 1
10 a100 A100-80GB 8 whole
10 mig A100-80GB 8 mig:all-1g.10gb
S
start() {
    "$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
        --leader-elect false --http-port 0 --qps 10 --burst 10 >> "$E2E_DIR/scheduler.log" 2>&1 &
    echo $! > "$E2E_DIR/scheduler.pid"
}
start
"$DRIVER" pods <<'S' || exit 1
50 one e2e gpu:1
200 emb e2e mig:1g.10gb
S
ok=0
"$DRIVER" wait-bound 60 120 || ok=1
kill -9 "$(cat "$E2E_DIR/scheduler.pid")"
before=$("$DRIVER" wait-bound 0 1 | awk '{print $2}')
echo "killed the scheduler with $before pods bound"
# more work arrives while it is down (10 x 8 whole GPUs hold 80 one-GPU pods in all)
"$DRIVER" pods <<'S' || exit 1
30 more e2e gpu:1
S
start
"$DRIVER" wait-bound 280 180 || ok=1
"$DRIVER" verify --expect-bound 280 --expect-unschedulable 0 || ok=1
[ "$before" -lt 250 ] || { echo "the kill came too late to test a restart"; ok=1; }
[ $ok -eq 0 ] || tail -20 "$E2E_DIR/scheduler.log"
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $ok
