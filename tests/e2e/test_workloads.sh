#!/usr/bin/env bash
# The article's workloads from deploy/workloads.yaml, applied with kubectl to a small cluster
# labelled as the article labels it (A100-80GB with `mixed` MIG, H100 with all-3g.40gb, a
# whole-GPU H100 node, L40S time-sliced x4): the two MIG pods, the 8-replica time-slicing
# Deployment and the H100 node-selector pod are all placed by gpusched, on nodes that fit,
# with no device over-allocated; under kwok they reach Running. The control plane runs no
# controller-manager, so the test stamps the Deployment's pod template 8 times, as its
# ReplicaSet would.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
"$DRIVER" nodes <<'S' || exit 1
1 a100mig A100-80GB 8 mig:mixed
1 h100mig H100-80GB 8 mig:all-3g.40gb
1 h100 H100-80GB 8 whole
1 l40s L40S-48GB 4 ts:4
S
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port 0 > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
"$K" apply -f "$E2E_SRC/../../deploy/workloads.yaml" > /dev/null || exit 1
"$K" get deployment inference-pool -n ai-inference -o json > "$E2E_DIR/deploy.json" || exit 1
python3 - "$E2E_DIR/deploy.json" > "$E2E_DIR/pool-pods.json" <<'P' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
t = d["spec"]["template"]
items = []
for i in range(d["spec"]["replicas"]):
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "inference-pool-%d" % i, "namespace": "ai-inference",
                               "labels": t["metadata"]["labels"]},
                  "spec": t["spec"]})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
"$K" create -f "$E2E_DIR/pool-pods.json" > /dev/null || exit 1
ok=0
"$DRIVER" wait-bound 11 120 || ok=1
"$DRIVER" verify --expect-bound 11 --expect-unschedulable 0 || ok=1
node() { "$K" get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}'; }
n=$(node ai-training h100-training)
[ "$n" = h100-000 ] || { echo "h100-training on '$n', want h100-000"; ok=1; }
n=$(node ai-inference llm-inference-70b)
case "$n" in a100mig-000|h100mig-000) ;; *) echo "llm-inference-70b on '$n'"; ok=1 ;; esac
"$K" get pod llm-inference-70b -n ai-inference \
    -o jsonpath='{.metadata.annotations.gpusched\.io/devices}' | grep -q 3g.40gb ||
    { echo "llm-inference-70b has no 3g.40gb device annotation"; ok=1; }
n=$(node ai-inference embedding-service)
[ "$n" = a100mig-000 ] || { echo "embedding-service on '$n', want a100mig-000"; ok=1; }
if [ "$E2E_KWOK" = 1 ]; then "$DRIVER" wait-running 11 120 || ok=1; fi
"$K" get pods -A -o wide --no-headers | awk '{print "  " $1, $2, $4, $8}'
[ $ok = 0 ] && echo "1 passed, 0 failed" || { echo "0 passed, 1 failed"; tail -20 "$E2E_DIR/scheduler.log"; }
exit $ok
