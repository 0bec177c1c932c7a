#!/usr/bin/env bash
# The scheduler places multi-GPU pods on the best-linked GPUs the agent publishes. An H100 node
# runs the gpusched agent on 8 fake GPUs in 4 NVLink pairs (0-1, 2-3, 4-5, 6-7; a PCIe switch
# each) over 2 NUMA nodes. The agent's inventory on the Node is version 2 with each GPU's NUMA
# node, PCIe path and NVLink peer; the scheduler, reading it, records in gpusched.io/devices: a
# 1-GPU pod gpu=0, then a 2-GPU pod the whole pair gpu=2,3 (beside GPU 0, not GPU 1 and a GPU of
# another pair), then a 4-GPU pod the two whole pairs left, gpu=4,5,6,7 (never GPU 1, whose
# partner is busy, with three of another pair). test_gpu_links.sh shows the kubelet's device
# manager giving the containers such sets.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
NODE=gpu-h100-links
tn_h100_node "$NODE" 8 '{"nvidia.com/gpu": "8"}' || exit 1
tn_agent_user || exit 1
python3 - > "$E2E_DIR/gpus.json" <<'P'
import json
print(json.dumps({"gpus": [{"model": "H100-80GB"} for _ in range(8)],
                  "topology": {"nvlink": "pairs", "links": 4, "numa_nodes": 2}}))
P
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port "$(e2e_free_port)" \
    --metrics-bind 127.0.0.1 --auto-cordon false > "$E2E_DIR/agent.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
inv() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}'; }
tn_wait 20 sh -c "[ -n \"\$(\"$K\" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\\.io/inventory}')\" ]" ||
    { tn_fail "no inventory on the node"; tail -20 "$E2E_DIR/agent.log"; tn_done; }
inv > "$E2E_DIR/inv.json"
python3 - "$E2E_DIR/inv.json" <<'PY' && echo "ok   the inventory carries each GPU's links (version 2)" || tn_fail "the inventory lacks the links"
import json, sys
inv = json.load(open(sys.argv[1]))
g = {x["i"]: x for x in inv["gpus"]}
print("inventory:", json.dumps(inv)[:300])
assert inv["v"] == 2 and sorted(g) == list(range(8))
assert all(g[i]["nvlink"] == {str(i ^ 1): 4} and g[i]["numa"] == i // 4 for i in g)
assert len({g[i]["pci"] for i in g}) == 8
PY
PORT=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$PORT" > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
"$K" create namespace ai > /dev/null
mkpod() { # NAME GPUS
    "$K" create -f - > /dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: ai, labels: {app: $1}}
spec:
  schedulerName: gpusched
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
    - name: main
      image: registry.example.com/$1:1.0
      resources: {limits: {nvidia.com/gpu: $2, cpu: "1", memory: 4Gi}}
Y
}
dev() { "$K" get pod -n ai "$1" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}'; }
n=0
for p in "one 1 gpu=0" "pair 2 gpu=2,3" "four 4 gpu=4,5,6,7"; do
    set -- $p
    mkpod "$1" "$2"
    n=$((n + 1))
    "$DRIVER" wait-bound $n 60 || { tn_fail "$1 (nvidia.com/gpu $2) not bound"; break; }
    got="$(dev "$1")"
    [ "$got" = "$3" ] && echo "ok   $1 (nvidia.com/gpu $2): $got" || tn_fail "$1 (nvidia.com/gpu $2): want $3, got '$got'"
done
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
tn_done
