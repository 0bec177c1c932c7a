#!/usr/bin/env bash
# Helpers for the tests on a control plane (tenancy, agent), sourced after cluster.sh: start
# gpusched with its HTTP port, write pods from a compact line, count and wait, the agent's
# user.
# The article's manifests: from the article itself when it sits beside the checkout, else
# the verbatim copies in deploy/article/.
SEED="$E2E_SRC/../../../shared/seed/examples"
[ -f "$SEED/gpu-priority-class.yaml" ] || SEED="$E2E_SRC/../../deploy/article"

tn_start() { # extra scheduler flags...
    TN_PORT=$(e2e_free_port)
    "$GS" --log-level info scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
        --leader-elect false --http-port "$TN_PORT" --http-bind 127.0.0.1 "$@" \
        > "$E2E_DIR/scheduler.log" 2>&1 &
    echo $! > "$E2E_DIR/scheduler.pid"
    local i
    for i in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$TN_PORT/readyz" > /dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "gpusched did not become ready"; tail -20 "$E2E_DIR/scheduler.log"; return 1
}

# tn_pods NS PREFIX FROM TO PRIORITYCLASS RESOURCE=COUNT [LABEL=VALUE ...]  (a Pod list on stdout)
tn_pods() {
    python3 - "$@" <<'P'
import json, sys
ns, prefix, a, b, pc, res = sys.argv[1:7]
labels = dict(x.split("=", 1) for x in sys.argv[7:])
rname, rcount = res.split("=")
items = []
for i in range(int(a), int(b)):
    spec = {"schedulerName": "gpusched",
            "containers": [{"name": "c", "image": "registry.invalid/none:1",
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi",
                                                     rname: rcount}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    if pc != "-":
        spec["priorityClassName"] = pc
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "%s-%d" % (prefix, i), "namespace": ns, "labels": labels},
                  "spec": spec})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}

tn_bound() { # NS [SELECTOR]: pods with a node
    "$K" get pods -n "$1" ${2:+-l "$2"} -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
        grep -c .
}

tn_running() { # NS [SELECTOR]
    "$K" get pods -n "$1" ${2:+-l "$2"} -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
        grep -c '^Running$'
}

tn_bound_ge() { [ "$(tn_bound "$1")" -ge "$2" ]; }   # NS N
tn_running_ge() { [ "$(tn_running "$1")" -ge "$2" ]; } # NS N

tn_wait() { # SECONDS COMMAND...: poll every 0.2 s until the command succeeds
    local end=$(( $(date +%s%N) / 1000000 + $1 * 1000 ))
    shift
    while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

# tn_watch NS: record every pod update in NS (a kubectl watch) until tn_disrupted reads it
tn_watch() {
    "$K" get pods -n "$1" --watch --output-watch-events -o json > "$E2E_DIR/watch.json" 2>/dev/null &
    echo $! > "$E2E_DIR/watch.pid"
}

# tn_disrupted VICTIM...: the watch saw DisruptionTarget (PreemptionByScheduler) on exactly
# these pods
tn_disrupted() {
    kill "$(cat "$E2E_DIR/watch.pid")" 2>/dev/null
    python3 - "$E2E_DIR/watch.json" "$@" <<'P'
import json, sys
text, i, dec, marked = open(sys.argv[1]).read(), 0, json.JSONDecoder(), set()
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    ev, i = dec.raw_decode(text, i)
    pod = ev.get("object", {})
    for c in pod.get("status", {}).get("conditions", []):
        if c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler":
            marked.add(pod["metadata"]["name"])
print("DisruptionTarget (PreemptionByScheduler) seen on: %s" % ", ".join(sorted(marked)))
if marked != set(sys.argv[2:]):
    print("FAIL: want exactly the victims %s" % sorted(sys.argv[2:]))
    sys.exit(1)
P
}

tn_now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

tn_fail() { echo "FAIL: $*"; TN_OK=1; }

tn_done() {
    if [ "$TN_OK" = 0 ]; then echo "1 passed, 0 failed"; else
        echo "0 passed, 1 failed"; echo "--- scheduler log (tail)"; tail -30 "$E2E_DIR/scheduler.log"
    fi
    exit "$TN_OK"
}
TN_OK=0

tn_crds() { # the GPUQueue and PodGroup CRDs from deploy/, established
    "$K" apply -f "$E2E_SRC/../../deploy/crds/gpuqueue.yaml" > /dev/null || return 1
    "$K" wait --for condition=established --timeout=60s \
        crd/gpuqueues.gpusched.io crd/podgroups.scheduling.x-k8s.io > /dev/null
}

tn_agent_user() { # the agent's RBAC from deploy/agent.yaml, a user bound to it, its kubeconfig
    "$K" apply -f "$E2E_SRC/../../deploy/agent.yaml" > /dev/null || return 1
    e2e_cert agent gpusched-agent ""
    e2e_kubeconfig "$E2E_DIR/agent.kubeconfig" "$E2E_DIR/agent.crt" "$E2E_DIR/agent.key"
    "$K" create clusterrolebinding gpusched-agent-e2e --clusterrole gpusched-agent \
        --user gpusched-agent > /dev/null
}

# tn_dra_agent_user: tn_agent_user, then deploy/dra/ as it ships (the DeviceClasses and the
# ClusterRole of the DRA driver) with the agent's user bound to that role
tn_dra_agent_user() {
    tn_agent_user || return 1
    local f
    for f in "$E2E_SRC"/../../deploy/dra/*.yaml; do
        "$K" apply -f "$f" > /dev/null || { echo "kubectl apply $f failed"; return 1; }
    done
    "$K" create clusterrolebinding e2e-agent-dra --clusterrole gpusched-agent-dra \
        --user gpusched-agent > /dev/null
}

# tn_h100_node NAME GPUS ALLOCATABLE-JSON: create an H100 Node as NFD and NVIDIA's GPU feature
# discovery label it before the agent runs (no mig.config), its allocatable and capacity
# updated with ALLOCATABLE-JSON ({"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "14"})
tn_h100_node() {
    python3 - "$E2E_SRC/../data/nodes/a100-whole.json" "$E2E_DIR" "$1" "$2" "$3" <<'PY' || return 1
import json, sys
n = json.load(open(sys.argv[1]))
name, gpus, alloc = sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
n["metadata"]["name"] = name
L = n["metadata"]["labels"]
L.update({"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
          "nvidia.com/gpu.count": gpus, "nvidia.com/gpu.memory": "81559",
          "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9"})
for k in ("nvidia.com/mig.config", "nvidia.com/mig.config.state"):
    L.pop(k, None)
for a in ("allocatable", "capacity"):
    n["status"][a].update(alloc)
status = {"status": n.pop("status")}
json.dump(n, open(sys.argv[2] + "/node.json", "w"))
json.dump(status, open(sys.argv[2] + "/node.status", "w"))
PY
    "$K" create -f "$E2E_DIR/node.json" > /dev/null &&
        "$K" patch node "$1" --subresource=status --type=merge -p "$(cat "$E2E_DIR/node.status")" > /dev/null
}
