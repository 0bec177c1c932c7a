#!/usr/bin/env bash
# One truth about a node's devices, end to end. An H100 node whose physical layout a count
# cannot tell (GPU 0: 2x3g.40gb, GPUs 1 and 2 whole, GPU 3: 7x1g.10gb; a layout built from
# allocatable counts puts the whole GPUs first) runs the gpusched agent on a fake GPU backend,
# with its device plugin registered at the kubelet's side of the protocol (dpharness, the
# upstream API). The agent publishes the node inventory; the scheduler binds MIG and
# whole-GPU pods and writes gpusched.io/devices; then the scheduler's annotation, the agent's
# GetPreferredAllocation for the waiting pod and the agent's per-pod metrics all name the
# same physical GPU and MIG instance. When the MIG layout changes (the agent's MIG manager
# applies all-3g.40gb), the inventory follows.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
H="$E2E_BIN/dpharness-v0.37.2"
PROMCHECK="$E2E_BIN/promcheck-v0.70.0"
. "$(dirname "$0")/tenancy.sh"
NODE=gpu-h100-07
D="$E2E_DIR/dp"
mkdir -p "$D"

# the Node as NFD and NVIDIA's GPU feature discovery label it, before the agent runs (no
# mig.config yet: the agent's MIG manager leaves the layout as it is until one is named)
tn_h100_node "$NODE" 4 '{"nvidia.com/gpu": "2", "nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-1g.10gb": "7"}' || exit 1
tn_agent_user || exit 1

cat > "$E2E_DIR/gpus.json" <<'G'
{"gpus": [{"model": "H100-80GB", "mig": true, "util": 40,
           "instances": [{"profile": "3g.40gb", "start": 0}, {"profile": "3g.40gb", "start": 4}]},
          {"model": "H100-80GB", "util": 55},
          {"model": "H100-80GB", "util": 66},
          {"model": "H100-80GB", "mig": true,
           "instances": [{"profile": "1g.10gb", "start": 0}, {"profile": "1g.10gb", "start": 1},
                         {"profile": "1g.10gb", "start": 2}, {"profile": "1g.10gb", "start": 3},
                         {"profile": "1g.10gb", "start": 4}, {"profile": "1g.10gb", "start": 5},
                         {"profile": "1g.10gb", "start": 6}]}]}
G
printf 'version: v1\nflags:\n  migStrategy: mixed\n' > "$E2E_DIR/dp.yaml"
sed '/^---/q' "$E2E_SRC/../../deploy/article/nvidia-mig-config.yaml" | grep -v '^---' > "$E2E_DIR/mig.yaml"

# the kubelet's side of the device plugin protocol
mkfifo "$D/cmd"
"$H" "$D" < "$D/cmd" >> "$D/h.log" 2>&1 &
echo $! > "$E2E_DIR/harness.pid"
exec 3> "$D/cmd"
. "$E2E_SRC/devices.sh"
wait_for 10 'any(e["event"] == "ready" for e in ev)' || { tn_fail "harness not ready"; tn_done; }

MPORT=$(e2e_free_port)
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port $MPORT --metrics-bind 127.0.0.1 \
    --dp-config "$E2E_DIR/dp.yaml" --device-plugin-dir "$D" --mig-config "$E2E_DIR/mig.yaml" \
    --auto-cordon false > "$E2E_DIR/agent.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
inv() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}'; }
tn_wait 20 sh -c "[ -n \"\$(\"$K\" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\\.io/inventory}')\" ]" ||
    { tn_fail "no inventory on the node"; tail -20 "$E2E_DIR/agent.log"; tn_done; }
inv > "$E2E_DIR/inv.json"
python3 - "$E2E_DIR/inv.json" <<'PY' || tn_fail "the inventory does not describe the GPUs as they are"
import json, sys
inv = json.load(open(sys.argv[1]))
g = {x["i"]: x for x in inv["gpus"]}
ok = (inv["v"] == 1 and sorted(g) == [0, 1, 2, 3] and g[0]["mig"] == ["3g.40gb@0", "3g.40gb@4"]
      and "mig" not in g[1] and "mig" not in g[2] and len(g[3]["mig"]) == 7
      and all(x["model"] == "H100-80GB" and x["uuid"].startswith("GPU-") for x in g.values()))
print("inventory:", json.dumps(inv)[:200])
sys.exit(0 if ok else 1)
PY

PORT=$(e2e_free_port)
"$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$PORT" > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
"$K" create namespace ai > /dev/null
mkpod() { # NAME RESOURCE
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
      resources: {limits: {$2: 1, cpu: "1", memory: 4Gi}}
Y
}
mkpod llm nvidia.com/mig-3g.40gb
mkpod trainer nvidia.com/gpu
mkpod emb nvidia.com/mig-1g.10gb
"$DRIVER" wait-bound 3 60 || tn_fail "3 pods not bound"
dev() { "$K" get pod -n ai "$1" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}'; }
LLM="$(dev llm)"; TRAINER="$(dev trainer)"; EMB="$(dev emb)"
echo "devices: llm=$LLM trainer=$TRAINER emb=$EMB"
case "$LLM" in mig=0:3g.40gb@[04]) ;; *) tn_fail "llm: '$LLM' is not a 3g.40gb slice of physical GPU 0" ;; esac
case "$TRAINER" in gpu=1|gpu=2) ;; *) tn_fail "trainer: '$TRAINER' is not whole GPU 1 or 2" ;; esac
case "$EMB" in mig=3:1g.10gb@[0-6]) ;; *) tn_fail "emb: '$EMB' is not a 1g.10gb slice of physical GPU 3" ;; esac
start="${LLM##*@}"

# the device plugin: the kubelet asks which of the 3g.40gb devices to give; the agent prefers
# the one the scheduler recorded for the pod waiting on its node
wait_for 15 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-3g.40gb" and len(e["devices"]) == 2 for e in ev)' ||
    tn_fail "ListAndWatch: 2 nvidia.com/mig-3g.40gb devices"
ids=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
d = [e for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/mig-3g.40gb"][-1]["devices"]
print(",".join(sorted(x["id"] for x in d)))' "$D/h.log")
for attempt in 1 2 3 4 5; do
    echo "preferred nvidia.com/mig-3g.40gb 1 $ids" >&3
    sleep 1
    pick=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
p = [e for e in ev if e["event"] == "preferred" and e["resource"] == "nvidia.com/mig-3g.40gb"]
print(",".join(p[-1].get("ids") or []) if p else "")' "$D/h.log")
    [ -n "$pick" ] && break
done
echo "GetPreferredAllocation among $ids: $pick"
# which instance that is: GPU 0's, at the annotated start (the agent's /status and metrics)
curl -sf "http://127.0.0.1:$MPORT/metrics" > "$E2E_DIR/m.txt"
"$PROMCHECK" < "$E2E_DIR/m.txt" > "$E2E_DIR/series.txt" 2> "$E2E_DIR/promcheck.err" ||
    tn_fail "the upstream parser refused /metrics: $(cat "$E2E_DIR/promcheck.err")"
gpu0=$(curl -sf "http://127.0.0.1:$MPORT/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])')
series=$(grep '^gpu_utilization .*pod=llm' "$E2E_DIR/series.txt")
echo "per-pod series: $series"
gi=$(echo "$series" | grep -o 'gpu_instance_id=[0-9]*' | cut -d= -f2)
echo "$series" | grep -q 'gpu=0,' || tn_fail "the metrics do not put llm on physical GPU 0"
echo "$series" | grep -q 'mig_profile=3g.40gb' || tn_fail "the metrics do not put llm on a 3g.40gb instance"
[ "$pick" = "MIG-${gpu0#GPU-}-gi$gi" ] ||
    tn_fail "GetPreferredAllocation picked '$pick'; the metrics say llm holds GPU 0's instance $gi (MIG-${gpu0#GPU-}-gi$gi)"
grep '^gpu_utilization .*pod=trainer' "$E2E_DIR/series.txt" | grep -q "gpu=${TRAINER#gpu=}," ||
    tn_fail "the metrics do not put trainer on GPU ${TRAINER#gpu=}"
grep '^gpu_utilization .*pod=emb' "$E2E_DIR/series.txt" | grep -q 'gpu=3,' ||
    tn_fail "the metrics do not put emb on GPU 3"

# the layout changes: the inventory follows (all-3g.40gb once nothing holds an instance)
"$K" delete pod -n ai llm trainer emb --grace-period 0 --force > /dev/null 2>&1
sleep 2
"$K" label node $NODE nvidia.com/mig.config=all-3g.40gb --overwrite > /dev/null
relaid() { inv | python3 -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; sys.exit(0 if all(x.get("mig") == ["3g.40gb@0","3g.40gb@4"] for x in g) else 1)'; }
tn_wait 20 relaid || { tn_fail "the inventory did not follow all-3g.40gb: $(inv)"; tail -5 "$E2E_DIR/agent.log"; }
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
tn_done
