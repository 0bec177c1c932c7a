#!/usr/bin/env bash
# Extender mode: the real kube-scheduler, configured with `gpusched extender` (filter,
# prioritize, bind; nodeCacheCapable), places GPU pods through it: they are bound with
# gpusched's device annotation and no device is over-allocated. (4 + 4 nodes: 56 whole GPUs,
# 8 3g.40gb and 28 1g.10gb slots; the demand below fits exactly that.)
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
"$DRIVER" nodes <<'S' || exit 1
4 a100 A100-80GB 8 whole
4 mig A100-80GB 8 mig:mixed
S
xport=$(e2e_free_port)
"$GS" --log-level info extender --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --http-port "$xport" --http-bind 127.0.0.1 > "$E2E_DIR/extender.log" 2>&1 &
echo $! > "$E2E_DIR/extender.pid"
sed -e "s#http://gpusched-extender.kube-system.svc:8888#http://127.0.0.1:$xport#" \
    -e "s#leaderElect: true#leaderElect: false#" \
    "$(dirname "$0")/../../deploy/extender-config.yaml" > "$E2E_DIR/ks.yaml"
printf 'clientConnection:\n  kubeconfig: %s\n' "$E2E_DIR/admin.kubeconfig" >> "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
export E2E_SCHEDULER=default-scheduler
# the 4-GPU pods first: the demand fills every GPU, so 1-GPU pods placed before them (the
# kube-scheduler's queue order is not ours to fix) could leave no node with 4 free
"$DRIVER" pods <<'S' || exit 1
8 big e2e gpu:4
S
ok=0
"$DRIVER" wait-bound 8 120 || ok=1
"$DRIVER" pods <<'S' || exit 1
20 one e2e gpu:1
8 llm e2e mig:3g.40gb
20 emb e2e mig:1g.10gb
S
"$DRIVER" wait-bound 56 120 || ok=1
"$DRIVER" verify --expect-bound 56 --expect-unschedulable 0 || ok=1
n=$(grep -c " -> " "$E2E_DIR/extender.log")
[ "$n" -ge 56 ] || { echo "the extender bound only $n pods"; ok=1; }
if [ $ok -ne 0 ]; then
    tail -40 "$E2E_DIR/extender.log"; grep -v "^I.*reflector\|^I.*round_trippers" "$E2E_DIR/kube-scheduler.log" | tail -40
fi
[ $ok -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $ok
