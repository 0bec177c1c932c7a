#!/usr/bin/env bash
# One cycle, two drivers: the scheduler daemon and the simulator decide alike on one cluster.
# A cluster (A100 nodes in the article's `mixed` MIG config, H100 nodes carved all-1g.10gb,
# an H200 node of whole GPUs) with a burst of pending pods (3g.40gb LLM inference beyond what
# the static layout offers, 1g.10gb and 2g.20gb, whole GPUs, 4- and 8-GPU training, with the
# article's priority classes) is written twice from one description: as a simulator scenario
# (every pod arriving at t=0) and as Kubernetes objects on the real API server (Nodes with the
# agent's inventory and the allocatable its device plugin reports, Pods as a Deployment's
# would look). `gpusched explain --output decisions --dynamic-mig true` (the daemon's driver,
# one cycle that writes nothing) and `gpusched sim scenario --decisions dynamic-mig --until 0s`
# (the simulator's driver, its first cycle) must print the same decisions, line for line:
# binds with their devices, re-carves with their layouts, nominations and waits. The same for
# static MIG (mig-priority), where the layouts stay as they are.
# DRA on the same cycle: two more nodes (x-dra-0, x-dra-1: two A100-80GB each, partitionable)
# have no device-plugin GPUs but the ResourceSlices gpusched's agent publishes for them (it
# runs as the DRA driver with --dra-dynamic-mig on fake GPUs until its pools are there, then
# the Nodes get back what the agent wrote on them), and six pods name a ResourceClaim of their
# own: five a dynamic 3g.40gb placement (DeviceClass mig.gpusched.io, a CEL selector on the
# profile), one a whole GPU (gpu.gpusched.io). The scenario says the same with a dra node
# group and claim classes; both drivers must bind the claim pods on the same nodes.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$K" apply -f "$SEED/gpu-priority-class.yaml" > /dev/null 2>&1
"$K" get priorityclass gpu-critical gpu-high gpu-low > /dev/null || { tn_fail "priority classes"; tn_done; }

DRA=1
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaims || DRA=0
[ $DRA = 1 ] || echo "  the API server does not serve resource.k8s.io/v1: no claims"
if [ $DRA = 1 ]; then
    tn_dra_agent_user || { tn_fail "the agent's DRA identity and deploy/dra/"; tn_done; }
fi

# one description, two forms: the scenario for the simulator, the objects for the API server
python3 - "$E2E_DIR" "$E2E_SRC/../data/nodes/a100-whole.json" "$DRA" <<'PY' || { tn_fail "fixtures"; tn_done; }
import json, sys
out, tmpl, dra = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3] == "1"
LAYOUT = {  # the simulator's placements of the article's mig-parted configs (largest first,
            # lowest start), as the agent would publish them
    "mixed": lambda i: ["3g.40gb@0", "3g.40gb@4"] if i == 0 else
                       ["1g.10gb@%d" % s for s in range(7)] if i == 1 else None,
    "all-1g.10gb": lambda i: ["1g.10gb@%d" % s for s in range(7)],
    None: lambda i: None,
}
groups = [  # name, model, GFD product, memory MiB, nodes, gpus, cpu, memory, mig_config
    ("a100", "A100-80GB", "NVIDIA-A100-SXM4-80GB", 81920, 2, 8, "128", "1Ti", "mixed"),
    ("h100", "H100-80GB", "NVIDIA-H100-80GB-HBM3", 81920, 2, 8, "192", "2Ti", "all-1g.10gb"),
    ("h200", "H200-141GB", "NVIDIA-H200", 143771, 1, 8, "192", "2Ti", None),
]
classes = [  # name, priority class, count, request
    ("a-llm", "gpu-critical", 9, {"mig": "3g.40gb"}),
    ("b-emb", "gpu-high", 9, {"mig": "1g.10gb"}),
    ("c-mid", "gpu-high", 4, {"mig": "2g.20gb"}),
    ("d-train", "gpu-low", 7, {"gpus": 1}),
    ("e-big", "gpu-low", 2, {"gpus": 4}),
    ("f-dist", "gpu-low", 1, {"gpus": 8}),
]
A = "device.attributes['gpu.gpusched.io']"
DRA_GROUP = ("x-dra", "A100-80GB", 2, 2, "64", "512Gi")  # name, model, nodes, gpus, cpu, memory
claim_classes = [  # name, priority class, count, DeviceClass, CEL selector
    ("g-mig3", "gpu-high", 5, "mig.gpusched.io", A + ".profile == '3g.40gb'"),
    ("h-whole", "gpu-low", 1, "gpu.gpusched.io", None),
] if dra else []
# the scenario
y = ["name: one-cycle", "seed: 42", "duration: 1h", "warmup: 0s", "node_groups:"]
for name, model, _, _, n, g, cpu, mem, cfg in groups:
    y.append("  - {name: %s, gpu: %s, nodes: %d, gpus: %d, cpu: %s, memory: %s%s}"
             % (name, model, n, g, cpu, mem, ", mig_config: " + cfg if cfg else ""))
if dra:
    y.append("  - {name: %s, gpu: %s, nodes: %d, gpus: %d, cpu: %s, memory: %s, dra: dynamic-mig}"
             % DRA_GROUP)
y.append("classes:")
for name, pc, count, req in classes:
    r = ("mig: %s" % req["mig"]) if "mig" in req else ("gpus: %d" % req["gpus"])
    y += ["  - name: %s" % name, "    kind: training", "    priority: %s" % pc,
          "    arrival: {process: fixed, interval: 0s}", "    duration: {dist: fixed, mean: 10h}",
          "    request: {%s, cpu: 2, memory: 8Gi}" % r, "    max_jobs: %d" % count]
for name, pc, count, dc, sel in claim_classes:
    cl = "device_class: %s" % dc + (", selector: %s" % json.dumps(sel) if sel else "")
    y += ["  - name: %s" % name, "    kind: training", "    priority: %s" % pc,
          "    arrival: {process: fixed, interval: 0s}", "    duration: {dist: fixed, mean: 10h}",
          "    request: {cpu: 2, memory: 8Gi, claim: {%s}}" % cl, "    max_jobs: %d" % count]
open(out + "/one-cycle.yaml", "w").write("\n".join(y) + "\n")
# the Nodes: labelled as NFD and GFD label them, the agent's inventory, allocatable as its
# device plugin reports it
nodes, statuses = [], []
for name, model, product, gmem, n, g, cpu, mem, cfg in groups:
    for k in range(n):
        node = json.loads(json.dumps(tmpl))
        nn = "%s-%d" % (name, k)
        md = node["metadata"]
        md["name"] = nn
        L = md["labels"]
        for key in ("nvidia.com/mig.config", "nvidia.com/mig.config.state"):
            L.pop(key, None)
        L.update({"kubernetes.io/hostname": nn, "nvidia.com/gpu.product": product,
                  "nvidia.com/gpu.count": str(g), "nvidia.com/gpu.memory": str(gmem)})
        if cfg:
            L["nvidia.com/mig.config"] = cfg
        inv, alloc = [], {"cpu": cpu, "memory": mem, "pods": "110", "nvidia.com/gpu": "0"}
        whole = 0
        for i in range(g):
            x = {"i": i, "uuid": "GPU-%08x-0000-0000-0000-%012d" % (hash(nn) & 0xffffffff, i),
                 "model": model, "mem": gmem}
            mig = LAYOUT[cfg](i)
            if mig is None:
                whole += 1
            else:
                x["mig"] = mig
                for inst in mig:
                    r = "nvidia.com/mig-" + inst.split("@")[0]
                    alloc[r] = str(int(alloc.get(r, "0")) + 1)
            inv.append(x)
        alloc["nvidia.com/gpu"] = str(whole)
        md.setdefault("annotations", {})["gpusched.io/inventory"] = json.dumps(
            {"v": 1, "gpus": inv}, separators=(",", ":"))
        st = node.pop("status")
        st["capacity"] = dict(alloc)
        st["allocatable"] = dict(alloc)
        node.pop("spec", None)
        nodes.append(node)
        statuses.append({"name": nn, "status": {"status": st}})
# the DRA nodes: no GPU labels nor device-plugin resources (their GPUs are the agent's slices)
dname, dmodel, dn, dg, dcpu, dmem = DRA_GROUP
for k in range(dn if dra else 0):
    node = json.loads(json.dumps(tmpl))
    nn = "%s-%d" % (dname, k)
    md = node["metadata"]
    md["name"] = nn
    md["labels"] = {k2: v for k2, v in md["labels"].items() if not k2.startswith("nvidia.com/")}
    md["labels"]["kubernetes.io/hostname"] = nn
    st = node.pop("status")
    alloc = {"cpu": dcpu, "memory": dmem, "pods": "110"}
    st["capacity"] = dict(alloc)
    st["allocatable"] = dict(alloc)
    node.pop("spec", None)
    nodes.append(node)
    statuses.append({"name": nn, "status": {"status": st}})
json.dump({"gpus": [{"model": dmodel, "mig": True, "instances": []}] * dg},
          open(out + "/gpus-dra.json", "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, open(out + "/nodes.json", "w"))
json.dump(statuses, open(out + "/statuses.json", "w"))
# the Pods, created in the order the simulator's pods arrive
pods = []
for name, pc, count, req in classes:
    for k in range(count):
        res = {"cpu": "2", "memory": "8Gi"}
        if "mig" in req:
            res["nvidia.com/mig-" + req["mig"]] = "1"
        else:
            res["nvidia.com/gpu"] = str(req["gpus"])
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "%s-%d" % (name, k), "namespace": "default",
                                  "labels": {"app": name}},
                     "spec": {"schedulerName": "gpusched", "priorityClassName": pc,
                              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                               "effect": "NoSchedule"}],
                              "containers": [{"name": "main", "image": "registry.example.com/%s:1" % name,
                                              "resources": {"requests": res, "limits": res}}]}})
for name, pc, count, dc, sel in claim_classes:
    for k in range(count):
        ex = {"deviceClassName": dc}
        if sel:
            ex["selectors"] = [{"cel": {"expression": sel}}]
        pn = "%s-%d" % (name, k)
        pods.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": pn, "namespace": "default"},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": ex}]}}})
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": pn, "namespace": "default", "labels": {"app": name}},
                     "spec": {"schedulerName": "gpusched", "priorityClassName": pc,
                              "resourceClaims": [{"name": "gpu", "resourceClaimName": pn}],
                              "containers": [{"name": "main", "image": "registry.example.com/%s:1" % name,
                                              "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                                                            "claims": [{"name": "gpu"}]}}]}})
json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, open(out + "/pods.json", "w"))
PY
"$K" create -f "$E2E_DIR/nodes.json" > /dev/null || { tn_fail "nodes"; tn_done; }
python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    print(s["name"], json.dumps(s["status"]))' "$E2E_DIR/statuses.json" |
while read -r name st; do
    "$K" patch node "$name" --subresource=status --type=merge -p "$st" > /dev/null || echo "status of $name"
done
# the DRA nodes' slices, as the agent publishes them; then the Nodes as they were (the agent
# labels them and writes its inventory: the daemon would count their GPUs as devices too)
if [ $DRA = 1 ]; then
    for n in x-dra-0 x-dra-1; do
        "$K" get node $n -o json > "$E2E_DIR/node-$n.json"
        mkdir -p "$E2E_DIR/$n/plugins" "$E2E_DIR/$n/registry" "$E2E_DIR/$n/cdi"
        "$GS" --log-level info agent run --fake "$E2E_DIR/gpus-dra.json" --node $n --interval 0.5 \
            --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port 0 --auto-cordon false \
            --dra --dra-dynamic-mig --dra-plugins-dir "$E2E_DIR/$n/plugins" \
            --dra-registry-dir "$E2E_DIR/$n/registry" --cdi-dir "$E2E_DIR/$n/cdi" \
            > "$E2E_DIR/agent-$n.log" 2>&1 &
        echo $! > "$E2E_DIR/agent-$n.pid"
    done
    slices() {
        "$K" get resourceslices -o json --field-selector "spec.driver=gpu.gpusched.io,spec.nodeName=$1" |
            python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
ok = items and {s["spec"]["pool"]["resourceSliceCount"] for s in items} == {len(items)}
ok = ok and len({s["spec"]["pool"]["generation"] for s in items}) == 1
sys.exit(0 if ok else 1)'
    }
    for n in x-dra-0 x-dra-1; do
        tn_wait 30 slices $n || { tn_fail "the agent of $n did not publish its pool"; tail -20 "$E2E_DIR/agent-$n.log"; }
        kill "$(cat "$E2E_DIR/agent-$n.pid")" 2> /dev/null
        wait "$(cat "$E2E_DIR/agent-$n.pid")" 2> /dev/null
    done
    for n in x-dra-0 x-dra-1; do
        "$K" get node $n -o json | python3 -c '
import json, sys
was, now = json.load(open(sys.argv[1]))["metadata"], json.load(sys.stdin)["metadata"]
p = {}
for f in ("labels", "annotations"):
    p[f] = {k: None for k in now.get(f, {}) if k not in was.get(f, {})}
    p[f].update({k: v for k, v in was.get(f, {}).items() if now.get(f, {}).get(k) != v})
print(json.dumps({"metadata": p}))' "$E2E_DIR/node-$n.json" > "$E2E_DIR/restore-$n.json"
        "$K" patch node $n --type=merge -p "$(cat "$E2E_DIR/restore-$n.json")" > /dev/null ||
            tn_fail "node $n back as it was"
    done
    echo "  $("$K" get resourceslices --no-headers | wc -l) ResourceSlices published for x-dra-0 and x-dra-1"
fi
"$K" create -f "$E2E_DIR/pods.json" > /dev/null || { tn_fail "pods"; tn_done; }

compare() { # STRATEGY EXPLAIN-FLAGS...
    local st="$1"; shift
    "$GS" sim scenario "$E2E_DIR/one-cycle.yaml" --decisions "$st" --until 0s > "$E2E_DIR/sim-$st.txt" 2> "$E2E_DIR/sim-$st.err" ||
        { tn_fail "sim --decisions $st: $(cat "$E2E_DIR/sim-$st.err")"; return; }
    "$GS" explain --kubeconfig "$E2E_DIR/scheduler.kubeconfig" --output decisions "$@" \
        > "$E2E_DIR/daemon-$st.txt" 2> "$E2E_DIR/daemon-$st.err" ||
        { tn_fail "explain --output decisions: $(cat "$E2E_DIR/daemon-$st.err")"; return; }
    sed 's/^t=0\.000 //' "$E2E_DIR/sim-$st.txt" > "$E2E_DIR/sim-$st.lines"
    sed 's#^\([A-Z]*\) default/#\1 #' "$E2E_DIR/daemon-$st.txt" > "$E2E_DIR/daemon-$st.lines"
    local n kinds
    n=$(wc -l < "$E2E_DIR/sim-$st.lines")
    kinds=$(cut -d' ' -f1 "$E2E_DIR/sim-$st.lines" | sort | uniq -c | tr -s ' ' | tr '\n' ',')
    echo "$st: the simulator decided $n times ($kinds)"
    if diff "$E2E_DIR/sim-$st.lines" "$E2E_DIR/daemon-$st.lines" > "$E2E_DIR/diff-$st.txt"; then
        echo "$st: the daemon decided the same, line for line"
    else
        tn_fail "$st: the daemon and the simulator decide differently:"
        head -80 "$E2E_DIR/diff-$st.txt"
    fi
    [ "$n" -ge 20 ] || tn_fail "$st: only $n decisions: the fixture did not load"
}
compare dynamic-mig --dynamic-mig true
grep -q "^REPARTITION " "$E2E_DIR/sim-dynamic-mig.lines" || tn_fail "dynamic-mig: no re-carve decided"
grep -q "^BIND a-llm-.* mig=[0-9]*:3g.40gb@" "$E2E_DIR/sim-dynamic-mig.lines" || tn_fail "dynamic-mig: no 3g.40gb bound"
compare mig-priority
grep -q "^REPARTITION " "$E2E_DIR/sim-mig-priority.lines" && tn_fail "mig-priority re-carved"
grep -q "^WAIT c-mid" "$E2E_DIR/sim-mig-priority.lines" || tn_fail "mig-priority: 2g.20gb should wait (no such slot)"
if [ $DRA = 1 ]; then
    for st in dynamic-mig mig-priority; do
        n=$(grep -c '^BIND [gh]-[a-z0-9]*-[0-9]* x-dra-[01] ' "$E2E_DIR/daemon-$st.lines")
        [ "$n" -eq 6 ] || tn_fail "$st: $n of the 6 claim pods bound on the DRA nodes"
        grep '^[A-Z]* [gh]-[a-z0-9]*-[0-9]* ' "$E2E_DIR/sim-$st.lines" | sed "s/^/  $st: /"
    done
fi
sed 's/^/  /' "$E2E_DIR/daemon-dynamic-mig.txt" | head -12
tn_done
