#!/usr/bin/env bash
# The agent's ResourceSlices against the real API server and the stock kube-scheduler v1.37.2,
# at a size where the API's limits shape them. The agent runs as the DRA driver
# gpu.gpusched.io (--dra --dra-dynamic-mig) on a node of fake GPUs: four H100s in MIG mode
# without instances (partitionable: 4 x 26 devices on 4 counter sets), an A100 with a static
# 1g.10gb instance at 6, an A30 not in MIG mode (MIG-capable without instances: partitionable
# too, 4-slice grid) and an L40S (no MIG: a plain whole GPU). Checked:
#   1. the API server accepts every slice (the agent logs no refusal) and they form one
#      complete pool: pool = node, one generation, resourceSliceCount = the slices there,
#      at most 64 devices and 8 counter sets a slice, counter sets apart from devices, every
#      placement of the catalog (H100: 25 a GPU, A30: 13) and nothing on the static GPU but
#      its instance, owner the Node;
#   2. kube-scheduler allocates from them and binds the pods: a whole L40S (class
#      gpu.gpusched.io), the static 1g.10gb (class mig.gpusched.io, selector on the profile),
#      and nine dynamic 3g.40gb placements on the H100s, of which exactly eight fit (two a
#      GPU): the ninth stays unschedulable, no two allocated placements share a memory slice
#      of one GPU, and a whole-H100 claim then finds no GPU;
#   3. the pool follows the node: an XID on H100 GPU 0 taints each of its devices
#      (gpu.gpusched.io/unhealthy) under a newer generation; a slice deleted behind the
#      agent's back comes back; a restarted agent converges on the slices there (same count,
#      no duplicates, a newer generation).
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$GS" agent --help 2>&1 | grep -q -- --dra || skip "this gpusched has no DRA driver"
NODE=dra-mixed-0
DRV=gpu.gpusched.io
D="$E2E_DIR/dra"
mkdir -p "$D/registry" "$D/plugins" "$D/cdi"
show() { echo "  $*"; }

"$K" create -f - > /dev/null <<Y || exit 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$NODE",
 "labels": {"kubernetes.io/hostname": "$NODE", "kubernetes.io/os": "linux"}}}
Y
"$K" patch node $NODE --subresource=status --type=merge -p '{"status": {
  "capacity": {"cpu": "128", "memory": "1Ti", "pods": "110"},
  "allocatable": {"cpu": "128", "memory": "1Ti", "pods": "110"},
  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null || exit 1
tn_dra_agent_user || { tn_fail "the agent's DRA identity and deploy/dra/"; tn_done; }

gpus() { # the fake GPUs; $1: XIDs of GPU 0
    python3 - "$1" <<'G'
import json, sys
xids = [int(x) for x in sys.argv[1].split(",") if x]
g = [{"model": "H100-80GB", "mig": True} for _ in range(4)]
g[0]["xids"] = xids
g += [{"model": "A100-80GB", "mig": True, "instances": [{"profile": "1g.10gb", "start": 6}]},
      {"model": "A30-24GB"}, {"model": "L40S-48GB"}]
print(json.dumps({"gpus": g}))
G
}
gpus "" > "$E2E_DIR/gpus.json"
start_agent() {
    "$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
        --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port 0 --auto-cordon false \
        --dra --dra-dynamic-mig --dra-plugins-dir "$D/plugins" --dra-registry-dir "$D/registry" \
        --cdi-dir "$D/cdi" >> "$E2E_DIR/agent.log" 2>&1 &
    echo $! > "$E2E_DIR/agent.pid"
}
start_agent
agent_fail() { tn_fail "$*"; echo "--- agent log (tail)"; tail -20 "$E2E_DIR/agent.log"; }
slices() { "$K" get resourceslices -o json --field-selector "spec.driver=$DRV,spec.nodeName=$NODE"; }

# pool_ok [MINGEN]: the slices there form one complete pool of this node (generation >= MINGEN);
# prints "<generation> <slices>" and writes them to $E2E_DIR/slices.json
pool_ok() {
    slices > "$E2E_DIR/slices.json" || return 1
    python3 - "$E2E_DIR/slices.json" "$NODE" "${1:-1}" <<'P'
import json, sys
items, node, mingen = json.load(open(sys.argv[1]))["items"], sys.argv[2], int(sys.argv[3])
if not items:
    sys.exit(1)
gens = {s["spec"]["pool"]["generation"] for s in items}
counts = {s["spec"]["pool"]["resourceSliceCount"] for s in items}
ok = len(gens) == 1 and counts == {len(items)} and min(gens) >= mingen
ok &= all(s["spec"]["pool"]["name"] == node and s["spec"]["nodeName"] == node for s in items)
print(min(gens), len(items))
sys.exit(0 if ok else 1)
P
}
tn_wait 30 pool_ok > /dev/null || { agent_fail "no complete pool of ResourceSlices"; slices | head -c 2000; tn_done; }
sleep 2 # a few agent rounds: nothing may change without a cause
read -r GEN0 N0 < <(pool_ok)
grep -q "resource slices of node" "$E2E_DIR/agent.log" && agent_fail "the API server refused a slice: $(grep -m1 'resource slices of node' "$E2E_DIR/agent.log")"

# 1. the slices' shape
python3 - "$E2E_DIR/slices.json" "$NODE" "$("$K" get node $NODE -o jsonpath='{.metadata.uid}')" <<'P' || tn_fail "the slices' shape"
import json, sys
items, node, uid = json.load(open(sys.argv[1]))["items"], sys.argv[2], sys.argv[3]
ok = True
def fail(m):
    global ok
    print("FAIL: " + m)
    ok = False
devs, sets = {}, {}
for s in items:
    sp, name = s["spec"], s["metadata"]["name"]
    own = s["metadata"].get("ownerReferences") or []
    if [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in own] != [("Node", node, uid, True)]:
        fail("slice %s: owner %s" % (name, own))
    if not name.startswith(node + "-gpu.gpusched.io-"):
        fail("slice %s: not generated from <node>-gpu.gpusched.io-" % name)
    if ("devices" in sp) == ("sharedCounters" in sp):
        fail("slice %s: devices and counter sets in one slice" % name)
    if len(sp.get("devices") or []) > 64 or len(sp.get("sharedCounters") or []) > 8:
        fail("slice %s: %d devices, %d counter sets" % (name, len(sp.get("devices") or []), len(sp.get("sharedCounters") or [])))
    for d in sp.get("devices") or []:
        if d["name"] in devs:
            fail("device %s twice" % d["name"])
        devs[d["name"]] = d
    for c in sp.get("sharedCounters") or []:
        sets[c["name"]] = c["counters"]
print("  %d slices (%s), %d devices, counter sets %s" % (len(items),
      ", ".join("%d devices" % len(s["spec"]["devices"]) if "devices" in s["spec"] else
                "%d counter sets" % len(s["spec"]["sharedCounters"]) for s in items),
      len(devs), sorted(sets)))
for g in range(4):
    parts = [n for n in devs if n.startswith("gpu-%d-part-" % g)]
    if len(parts) != 25 or "gpu-%d" % g not in devs or "gpu-%d-counters" % g not in sets:
        fail("H100 GPU %d: %d placements, whole %s" % (g, len(parts), "gpu-%d" % g in devs))
    for n in parts:
        for c in devs[n]["consumesCounters"]:
            if c["counterSet"] != "gpu-%d-counters" % g:
                fail("%s consumes %s" % (n, c["counterSet"]))
if [n for n in devs if n.startswith("gpu-4")] != ["gpu-4-mig-1g-10gb-6"]:
    fail("the A100 with a static instance: %s" % [n for n in devs if n.startswith("gpu-4")])
a30 = [n for n in devs if n.startswith("gpu-5-part-")]
if len(a30) != 13 or "gpu-5-counters" not in sets or sets["gpu-5-counters"]["compute-slices"]["value"] != "4":
    fail("A30: %d placements, counters %s" % (len(a30), sets.get("gpu-5-counters")))
if [n for n in devs if n.startswith("gpu-6")] != ["gpu-6"] or devs["gpu-6"].get("consumesCounters"):
    fail("L40S: %s" % [n for n in devs if n.startswith("gpu-6")])
c = sets.get("gpu-0-counters", {})
print("  gpu-0-counters: %s" % ", ".join("%s=%s" % (k, v["value"]) for k, v in sorted(c.items())))
sys.exit(0 if ok else 1)
P
show "pool $NODE at generation $GEN0, $N0 slices, unchanged over 4 agent rounds"

# 2. kube-scheduler allocates from them
"$K" create namespace dra > /dev/null
P="device.attributes['$DRV']"
claim() { # NAME CLASS SELECTOR...
    local n="$1" c="$2" sel=""
    shift 2
    for s in "$@"; do sel="$sel{\"cel\": {\"expression\": \"$s\"}},"; done
    printf '{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": "%s", "namespace": "dra"},
      "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "%s",
               "selectors": [%s]}}]}}}\n' "$n" "$c" "${sel%,}"
}
pod() { # NAME CLAIM
    printf '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "dra"},
      "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "%s"}],
               "containers": [{"name": "main", "image": "registry.invalid/cuda:1",
                               "resources": {"requests": {"cpu": "1"},
                                             "claims": [{"name": "gpu"}]}}]}}\n' "$1" "$2"
}
{
    claim l40s $DRV "$P.productName == 'L40S-48GB'"
    claim static mig.gpusched.io "$P.profile == '1g.10gb'" "!$P.?dynamic.orValue(false)"
    for k in 1 2 3 4 5 6 7 8 9; do
        claim "dyn$k" mig.gpusched.io "$P.?dynamic.orValue(false)" "$P.profile == '3g.40gb'"
    done
    pod p-l40s l40s
    pod p-static static
    for k in 1 2 3 4 5 6 7 8 9; do pod "p-dyn$k" "dyn$k"; done
} > "$E2E_DIR/dra.json"
"$K" create -f "$E2E_DIR/dra.json" > /dev/null || { tn_fail "creating the claims and pods"; tn_done; }
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
ln -s kube-scheduler.log "$E2E_DIR/scheduler.log"
bound() { "$K" get pods -n dra -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c "^$NODE$"; }
tn_wait 90 eval '[ "$(bound)" -ge 10 ]' || tn_fail "kube-scheduler bound $(bound) of the 10 pods that fit"
unsched() { # POD: found unschedulable
    "$K" get pod -n dra "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' | grep -q Unschedulable
}
one_left() { # exactly one dynamic pod unschedulable, the others bound
    local n=0 k
    for k in 1 2 3 4 5 6 7 8 9; do unsched "p-dyn$k" && n=$((n + 1)); done
    [ "$n" = 1 ]
}
tn_wait 30 one_left || tn_fail "not exactly one of the nine dynamic 3g.40gb pods is unschedulable"
"$K" get resourceclaims -n dra -o json > "$E2E_DIR/claims.json"
"$K" get pods -n dra -o json > "$E2E_DIR/pods.json"
python3 - "$E2E_DIR/claims.json" "$E2E_DIR/pods.json" "$E2E_DIR/slices.json" "$NODE" <<'P' || tn_fail "allocations"
import json, re, sys
claims = {c["metadata"]["name"]: c for c in json.load(open(sys.argv[1]))["items"]}
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
devs = {d["name"]: d for s in json.load(open(sys.argv[3]))["items"] for d in s["spec"].get("devices") or []}
node = sys.argv[4]
ok = True
def fail(m):
    global ok
    print("FAIL: " + m)
    ok = False
def device(name):
    al = (claims[name].get("status") or {}).get("allocation")
    res = (al or {}).get("devices", {}).get("results", [])
    return res[0]["device"] if len(res) == 1 and res[0]["driver"] == "gpu.gpusched.io" and res[0]["pool"] == node else None
if device("l40s") != "gpu-6" or pods["p-l40s"]["spec"].get("nodeName") != node:
    fail("l40s: %s" % device("l40s"))
if device("static") != "gpu-4-mig-1g-10gb-6" or pods["p-static"]["spec"].get("nodeName") != node:
    fail("static: %s" % device("static"))
show = ["l40s -> %s" % device("l40s"), "static -> %s" % device("static")]
used = {}
n = 0
for k in range(1, 10):
    d = device("dyn%d" % k)
    bound = pods["p-dyn%d" % k]["spec"].get("nodeName") == node
    if bool(d) != bound:
        fail("dyn%d: allocated %s, bound %s" % (k, d, bound))
    if not d:
        continue
    n += 1
    show.append("dyn%d -> %s" % (k, d))
    m = re.fullmatch(r"gpu-([0-3])-part-3g-40gb-([04])", d)
    if not m:
        fail("dyn%d got %s" % (k, d))
        continue
    mem = {c for cc in devs[d]["consumesCounters"] for c in cc["counters"] if c.startswith("memory-slice-")}
    g = int(m.group(1))
    if used.get(g, set()) & mem:
        fail("dyn%d: %s shares memory slices %s on GPU %d" % (k, d, sorted(used[g] & mem), g))
    used.setdefault(g, set()).update(mem)
if n != 8:
    fail("%d dynamic placements allocated, want 8 (two 3g.40gb a GPU on four H100s)" % n)
print("  allocated: " + ", ".join(show))
print("  memory slices taken per H100: %s" % {g: len(s) for g, s in sorted(used.items())})
sys.exit(0 if ok else 1)
P
{ claim h100 $DRV "$P.productName == 'H100-80GB'"; pod p-h100 h100; } | "$K" create -f - > /dev/null
tn_wait 30 unsched p-h100 || tn_fail "a whole-H100 claim was not found unschedulable with every H100 carved"
[ -z "$("$K" get resourceclaim -n dra h100 -o jsonpath='{.status.allocation}')" ] || tn_fail "claim h100 was allocated"
show "p-h100 (a whole H100): $("$K" get pod -n dra p-h100 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"

# 3. the pool follows the node: health, a slice deleted, a restart
gpus "79" > "$E2E_DIR/gpus.json.new" && mv "$E2E_DIR/gpus.json.new" "$E2E_DIR/gpus.json"
tainted() {
    pool_ok $((GEN0 + 1)) > /dev/null || return 1
    python3 - "$E2E_DIR/slices.json" <<'P'
import json, sys
devs = [d for s in json.load(open(sys.argv[1]))["items"] for d in s["spec"].get("devices") or []]
t = {d["name"]: [x["key"] + ":" + x["effect"] for x in d.get("taints") or []] for d in devs}
want = {n: n == "gpu-0" or n.startswith("gpu-0-") for n in t}
sys.exit(0 if all((t[n] == ["gpu.gpusched.io/unhealthy:NoSchedule"]) == w for n, w in want.items()) else 1)
P
}
tn_wait 30 tainted || agent_fail "an XID on GPU 0 did not taint exactly GPU 0's devices under a newer generation"
read -r GEN1 N1 < <(pool_ok)
show "XID 79 on GPU 0: its 26 devices tainted gpu.gpusched.io/unhealthy:NoSchedule, generation $GEN0 -> $GEN1"
victim=$(slices | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][-1]["metadata"]["name"])')
"$K" delete resourceslice "$victim" > /dev/null
back() { pool_ok $((GEN1 + 1)) > /dev/null && [ "$(pool_ok | cut -d" " -f2)" = "$N1" ]; }
tn_wait 30 back || agent_fail "the agent did not restore the pool after slice $victim was deleted"
read -r GEN2 N2 < <(pool_ok)
show "slice $victim deleted: the pool is whole again ($N2 slices, generation $GEN2)"
kill "$(cat "$E2E_DIR/agent.pid")"
sleep 1
start_agent
again() { pool_ok $((GEN2 + 1)) > /dev/null && [ "$(pool_ok | cut -d" " -f2)" = "$N2" ]; }
tn_wait 30 again || agent_fail "the restarted agent did not converge on its slices"
read -r GEN3 N3 < <(pool_ok)
[ "$("$K" get resourceslices -o name | wc -l)" = "$N3" ] || tn_fail "slices beyond the pool's: $("$K" get resourceslices -o name)"
show "agent restarted: $N3 slices (no duplicate), generation $GEN3"
tn_done
