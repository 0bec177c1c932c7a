#!/usr/bin/env bash
# Dynamic MIG, the node side, end to end. An H100 node runs the gpusched agent on fake GPUs
# (GPUs 0 and 1 in 7x1g.10gb, GPU 2 whole) with its device plugin registered at the kubelet's
# side of the protocol (dpharness, the upstream API); a pod bound to the node holds GPU 0's
# 1g.10gb@0 (gpusched.io/devices, as the scheduler writes it). The scheduler's desired layout
# (the Node's gpusched.io/mig-desired, written here with kubectl) re-carves GPU 1 to
# 2x3g.40gb, GPU 2 to 7g.80gb and GPU 0 to 1g.10gb@0 + 3g.40gb@4: the inventory reaches the
# generation with every GPU as asked, GPU 0's instance in use keeps its UUID, and the device
# plugin advertises the new resources (nvidia.com/mig-3g.40gb, nvidia.com/mig-7g.80gb on
# sockets of their own). A layout that would destroy the instance in use waits (mig_state
# pending, naming the pod) and changes nothing until the pod is gone; then it is applied. An
# invalid layout (overlapping instances) is refused whole: mig_state failed, a Warning Event,
# nothing changed on any GPU. An agent restarted does not act on a generation it finished.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
H="$E2E_BIN/dpharness-v0.37.2"
. "$(dirname "$0")/tenancy.sh"
NODE=gpu-h100-11
D="$E2E_DIR/dp"
mkdir -p "$D"

# the Node as NFD and NVIDIA's GPU feature discovery label it, before the agent runs
tn_h100_node "$NODE" 3 '{"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "14"}' || exit 1
tn_agent_user || exit 1

python3 - > "$E2E_DIR/gpus.json" <<'G'
import json
seven = [{"profile": "1g.10gb", "start": s} for s in range(7)]
print(json.dumps({"gpus": [{"model": "H100-80GB", "mig": True, "instances": seven, "util": 30},
                           {"model": "H100-80GB", "mig": True, "instances": seven},
                           {"model": "H100-80GB", "util": 50}]}))
G
printf 'version: v1\nflags:\n  migStrategy: mixed\n' > "$E2E_DIR/dp.yaml"

# the kubelet's side of the device plugin protocol
mkfifo "$D/cmd"
"$H" "$D" < "$D/cmd" >> "$D/h.log" 2>&1 &
echo $! > "$E2E_DIR/harness.pid"
exec 3> "$D/cmd"
. "$E2E_SRC/devices.sh"
wait_for 10 'any(e["event"] == "ready" for e in ev)' || { tn_fail "harness not ready"; tn_done; }

# a pod bound to the node holding GPU 0's 1g.10gb@0, as the scheduler records it
"$K" create namespace ai > /dev/null
"$K" create -f - > /dev/null <<Y || exit 1
apiVersion: v1
kind: Pod
metadata:
  name: emb
  namespace: ai
  annotations: {gpusched.io/devices: "mig=0:1g.10gb@0"}
spec:
  nodeName: $NODE
  schedulerName: gpusched
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
    - name: main
      image: registry.example.com/emb:1.0
      resources: {limits: {nvidia.com/mig-1g.10gb: 1, cpu: "1", memory: 4Gi}}
Y
"$K" patch pod -n ai emb --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' > /dev/null

MPORT=$(e2e_free_port)
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port $MPORT --metrics-bind 127.0.0.1 \
    --dp-config "$E2E_DIR/dp.yaml" --device-plugin-dir "$D" \
    --auto-cordon false > "$E2E_DIR/agent.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
inv() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}'; }
# inv_is GEN STATE GPU0 GPU1 GPU2: the inventory at generation GEN (0: none), mig_state STATE
# ("" none) and these layouts ("whole" or instances joined by ',')
inv_is() {
    inv | python3 -c '
import json, sys
inv = json.loads(sys.stdin.read() or "{}")
want_gen, want_state, lay = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
g = {x["i"]: x for x in inv.get("gpus", [])}
have = [",".join(g[i]["mig"]) if "mig" in g.get(i, {}) else "whole" for i in range(3)]
ok = inv.get("generation", 0) == want_gen and inv.get("mig_state", "") == want_state and have == lay
sys.exit(0 if ok else 1)' "$@"
}
uuid_at() { # GPU START: the UUID of that instance, from the agent's /status
    curl -sf "http://127.0.0.1:$MPORT/status" | python3 -c '
import json, sys
st = json.load(sys.stdin)
gpu, start = int(sys.argv[1]), int(sys.argv[2])
print(next((m["uuid"] for m in st[gpu]["mig"] if m["start"] == start), ""))' "$1" "$2"
}
desire() { "$K" annotate node $NODE --overwrite "gpusched.io/mig-desired=$1" > /dev/null; }
events() { # REASON: the notes of the Node's Events with that reason
    "$K" get events -n default --field-selector "reason=$1" -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { events "$1" | grep -q "$2"; } # REASON TEXT
SEVEN="1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6"
tn_wait 20 inv_is 0 "" "$SEVEN" "$SEVEN" whole ||
    { tn_fail "the inventory does not describe the GPUs as they are: $(inv)"; tail -20 "$E2E_DIR/agent.log"; tn_done; }
tn_wait 10 sh -c "[ -n \"\$(curl -sf http://127.0.0.1:$MPORT/status)\" ]"
held=$(uuid_at 0 0)
[ -n "$held" ] || tn_fail "the agent's /status does not list GPU 0's 1g.10gb@0"
wait_for 15 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-1g.10gb" and len(e["devices"]) == 14 for e in ev)' ||
    tn_fail "ListAndWatch: 14 nvidia.com/mig-1g.10gb devices before the change"

# 1. re-carve three GPUs; GPU 0 keeps the instance the pod holds
desire '{"v":1,"generation":1,"gpus":[{"i":1,"mig":["3g.40gb@0","3g.40gb@4"]},{"i":2,"mig":["7g.80gb@0"]},{"i":0,"mig":["1g.10gb@0","3g.40gb@4"]}]}'
tn_wait 20 inv_is 1 "" "1g.10gb@0,3g.40gb@4" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" ||
    { tn_fail "generation 1 not applied as asked: $(inv)"; tail -20 "$E2E_DIR/agent.log"; }
echo "inventory after generation 1: $(inv)"
after=$(uuid_at 0 0)
[ "$after" = "$held" ] || tn_fail "GPU 0's 1g.10gb@0 was re-created: $held before, '$after' after"
wait_for 15 'any(e["event"] == "registered" and e["resource"] == "nvidia.com/mig-3g.40gb" for e in ev)' ||
    tn_fail "nvidia.com/mig-3g.40gb was not registered with the kubelet"
wait_for 15 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-3g.40gb" and len(e["devices"]) == 3 for e in ev)' ||
    tn_fail "ListAndWatch: 3 nvidia.com/mig-3g.40gb devices (GPU 0's and GPU 1's two)"
wait_for 15 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-7g.80gb" and len(e["devices"]) == 1 for e in ev)' ||
    tn_fail "ListAndWatch: 1 nvidia.com/mig-7g.80gb device"
wait_for 15 '(lambda d: [x["id"] for x in d] == ["'"$held"'"])([e for e in ev if e["event"] == "devices" and e["resource"] == "nvidia.com/mig-1g.10gb"][-1]["devices"])' ||
    tn_fail "ListAndWatch: nvidia.com/mig-1g.10gb is not down to GPU 0's kept instance"
tn_wait 10 has_event MIGLayoutApplied 'generation 1 applied' ||
    tn_fail "no MIGLayoutApplied Event for generation 1"
events MIGLayoutApplied | head -3
[ "$("$K" get node $NODE -o jsonpath='{.metadata.labels.nvidia\.com/mig\.config\.state}')" = success ] ||
    tn_fail "nvidia.com/mig.config.state is not success"

# 2. a layout that would destroy the instance in use waits for the pod
desire '{"v":1,"generation":2,"gpus":[{"i":0,"mig":["7g.80gb@0"]}]}'
tn_wait 20 inv_is 1 pending "1g.10gb@0,3g.40gb@4" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" ||
    { tn_fail "generation 2 does not wait: $(inv)"; tail -20 "$E2E_DIR/agent.log"; }
why=$(inv | python3 -c 'import json,sys; print(json.load(sys.stdin).get("mig_error", ""))')
echo "generation 2 waits: $why"
case "$why" in *"1g.10gb@0"*"pod ai/emb"*) ;; *) tn_fail "mig_error does not name the instance and the pod: '$why'" ;; esac
sleep 2
inv_is 1 pending "1g.10gb@0,3g.40gb@4" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" ||
    tn_fail "GPU 0 changed while the pod holds its instance: $(inv)"
[ "$(uuid_at 0 0)" = "$held" ] || tn_fail "the instance in use is gone"
"$K" delete pod -n ai emb --grace-period 0 --force > /dev/null 2>&1
tn_wait 20 inv_is 2 "" "7g.80gb@0" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" ||
    { tn_fail "generation 2 not applied once the pod was gone: $(inv)"; tail -20 "$E2E_DIR/agent.log"; }
wait_for 15 'any(e["event"] == "devices" and e["resource"] == "nvidia.com/mig-7g.80gb" and len(e["devices"]) == 2 for e in ev)' ||
    tn_fail "ListAndWatch: 2 nvidia.com/mig-7g.80gb devices after generation 2"

# 3. an invalid layout (overlapping instances on GPU 1, a valid change on GPU 2) is refused whole
desire '{"v":1,"generation":3,"gpus":[{"i":2,"whole":true},{"i":1,"mig":["3g.40gb@0","1g.10gb@2"]}]}'
tn_wait 20 inv_is 3 failed "7g.80gb@0" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" ||
    { tn_fail "generation 3 not refused with nothing changed: $(inv)"; tail -20 "$E2E_DIR/agent.log"; }
why=$(inv | python3 -c 'import json,sys; print(json.load(sys.stdin).get("mig_error", ""))')
echo "generation 3 refused: $why"
case "$why" in *"GPU 1"*overlaps*) ;; *) tn_fail "mig_error does not say what overlaps: '$why'" ;; esac
tn_wait 10 has_event MIGLayoutRefused 'generation 3 refused' ||
    tn_fail "no Warning MIGLayoutRefused Event for generation 3"
[ "$("$K" get node $NODE -o jsonpath='{.metadata.labels.nvidia\.com/mig\.config\.state}')" = failed ] ||
    tn_fail "nvidia.com/mig.config.state is not failed"
sleep 1
inv_is 3 failed "7g.80gb@0" "3g.40gb@0,3g.40gb@4" "7g.80gb@0" || tn_fail "a GPU changed after the refusal: $(inv)"
kill -0 "$(cat "$E2E_DIR/agent.pid")" 2>/dev/null || tn_fail "the agent died"

# 4. an agent restarted takes the generation it finished with from its inventory: generation 3
# is not refused again (the fake GPUs start over from gpus.json, as hardware would not)
kill "$(cat "$E2E_DIR/agent.pid")"; sleep 1
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port 0 \
    --dp-config "$E2E_DIR/dp.yaml" --device-plugin-dir "$D" \
    --auto-cordon false > "$E2E_DIR/agent2.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
tn_wait 20 grep -q "generation 3 is not newer than 3" "$E2E_DIR/agent2.log" ||
    tn_fail "the restarted agent did not take generation 3 as finished: $(tail -5 "$E2E_DIR/agent2.log")"
sleep 1
inv | python3 -c 'import json,sys; i=json.load(sys.stdin); sys.exit(0 if i.get("generation") == 3 and i.get("mig_state") == "failed" else 1)' ||
    tn_fail "the restarted agent's inventory lost generation 3 (failed): $(inv)"
n=$(events MIGLayoutRefused | grep -c 'generation 3 refused')
[ "$n" = 1 ] || tn_fail "generation 3 was refused $n times"

# 5. an annotation the reader refuses is refused with the reader's field path
desire '{"v":1,"generation":4,"gpus":[{"i":0,"whole":false}]}'
bad4() { inv | python3 -c 'import json,sys; i=json.load(sys.stdin); sys.exit(0 if i.get("generation") == 4 and i.get("mig_state") == "failed" and "gpus[0].whole" in i.get("mig_error", "") else 1)'; }
tn_wait 20 bad4 || tn_fail "an unreadable generation 4 was not refused with its field: $(inv)"
[ "$TN_OK" = 0 ] || { echo "--- agent log (tail)"; tail -30 "$E2E_DIR/agent.log"; }
tn_done
