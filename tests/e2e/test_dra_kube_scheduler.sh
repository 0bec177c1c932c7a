#!/usr/bin/env bash
# DRA end to end, upstream on both sides of the agent. The gpusched agent runs as the DRA
# driver gpu.gpusched.io (--dra --dra-dynamic-mig) on an A100 node of fake GPUs: GPU 0 whole,
# GPU 1 with static MIG instances 3g.40gb@0 and 3g.40gb@4, GPU 2 in MIG mode without
# instances. It publishes the node's ResourceSlices; deploy/dra/deviceclasses.yaml gives the
# classes. The stock kube-scheduler v1.37.2 (its DynamicResources plugin) allocates three
# ResourceClaims and binds their pods: a whole GPU (class gpu.gpusched.io), a static MIG
# 3g.40gb (class mig.gpusched.io, selector on the profile) and a dynamic 2g.20gb placement
# (selector on dynamic == true and the profile); a fourth pod asking a dynamic 7g.80gb cannot
# fit the counters that are left and stays unscheduled. Then the kubelet's own DRA manager
# (k8s.io/kubernetes v1.37.2 pkg/kubelet/cm/dra behind the kubelet's plugin manager:
# draharness, built by build-control-plane.sh) finds the agent's registration socket,
# prepares each pod as the kubelet does before starting its containers: the CDI IDs it gets
# for each container are gpu.gpusched.io/gpu=<claimUID>-<device>, the agent's CDI spec
# <cdi>/gpu.gpusched.io-<claimUID>.json names that device with the GPU's or MIG device's UUID
# in NVIDIA_VISIBLE_DEVICES, and the dynamic placement is now a MIG instance on its GPU (the
# agent's /status and the Node's inventory). Unprepare removes every CDI spec and the dynamic
# instance.
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
H="$E2E_BIN/draharness-v1.37.2"
. "$E2E_SRC/tenancy.sh"
[ -x "$H" ] || skip "the kubelet DRA manager (draharness) did not build"
"$GS" agent --help 2>&1 | grep -q -- --dra || skip "this gpusched has no DRA driver (agent run --dra)"
[ -f "$E2E_SRC/../../deploy/dra/deviceclasses.yaml" ] || skip "no deploy/dra/deviceclasses.yaml"
NODE=dra-a100-0
DRV=gpu.gpusched.io
D="$E2E_DIR/dra"
mkdir -p "$D/registry" "$D/plugins" "$D/cdi" "$D/kubelet"
show() { echo "  $*"; }

# the Node, Ready, as its kubelet would have registered it
"$K" create -f - > /dev/null <<Y || exit 1
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$NODE",
 "labels": {"kubernetes.io/hostname": "$NODE", "kubernetes.io/os": "linux"}}}
Y
"$K" patch node $NODE --subresource=status --type=merge -p '{"status": {
  "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
  "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null || exit 1
# the agent's identity and RBAC as deploy/ ships them (agent.yaml, and deploy/dra/ for DRA)
tn_agent_user || exit 1
for f in "$E2E_SRC"/../../deploy/dra/*.yaml; do
    "$K" apply -f "$f" > /dev/null || { tn_fail "kubectl apply $f"; tn_done; }
done
for y in "$E2E_SRC"/../../deploy/dra/*.yaml; do show "applied deploy/dra/$(basename "$y")"; done
"$K" get deviceclass $DRV mig.gpusched.io > /dev/null ||
    { tn_fail "DeviceClasses gpu.gpusched.io and mig.gpusched.io not there"; tn_done; }
# the agent's user gets every ClusterRole deploy/dra binds to the agent's ServiceAccount
"$K" get clusterrolebindings -o json | python3 -c '
import json, sys
for b in json.load(sys.stdin)["items"]:
    if any(s.get("kind") == "ServiceAccount" and s.get("name") == "gpusched-agent"
           for s in b.get("subjects") or []):
        print(b["roleRef"]["name"])' | sort -u | while read -r role; do
    "$K" create clusterrolebinding "e2e-agent-$role" --clusterrole "$role" --user gpusched-agent \
        > /dev/null 2>&1
done

# the kubelet's DRA manager first, as on a node: at start it deletes the node's ResourceSlices
mkfifo "$D/cmd"
"$H" --kubeconfig "$E2E_DIR/admin.kubeconfig" --node $NODE --registry-dir "$D/registry" \
    --root-dir "$D/kubelet" < "$D/cmd" > "$D/h.log" 2> "$D/h.err" &
echo $! > "$E2E_DIR/harness.pid"
exec 3> "$D/cmd"
. "$E2E_SRC/devices.sh"
wait_for 20 'any(e["event"] == "ready" for e in ev)' ||
    { tn_fail "the DRA manager did not start"; tail -5 "$D/h.err"; tn_done; }
wait_for 20 'any(e["event"] == "api" and e["method"] == "DELETE" and "resourceslices" in e["path"] and e.get("code") == 200 for e in ev)' ||
    tn_fail "the kubelet's start-up wipe of the node's ResourceSlices did not happen"

# the agent, the DRA driver, on fake A100s
python3 - > "$E2E_DIR/gpus.json" <<'G'
import json
print(json.dumps({"gpus": [
    {"model": "A100-80GB"},
    {"model": "A100-80GB", "mig": True, "instances": [{"profile": "3g.40gb", "start": 0},
                                                      {"profile": "3g.40gb", "start": 4}]},
    {"model": "A100-80GB", "mig": True, "instances": []}]}))
G
MPORT=$(e2e_free_port)
"$GS" --log-level info agent run --fake "$E2E_DIR/gpus.json" --node $NODE --interval 0.5 \
    --kubeconfig "$E2E_DIR/agent.kubeconfig" --metrics-port $MPORT --metrics-bind 127.0.0.1 \
    --auto-cordon false --dra --dra-dynamic-mig --dra-plugins-dir "$D/plugins" \
    --dra-registry-dir "$D/registry" --cdi-dir "$D/cdi" > "$E2E_DIR/agent.log" 2>&1 &
echo $! > "$E2E_DIR/agent.pid"
agent_fail() { tn_fail "$*"; echo "--- agent log (tail)"; tail -20 "$E2E_DIR/agent.log"; }

# 1. registration: the kubelet's plugin watcher finds <registry>/gpu.gpusched.io-reg.sock
wait_for 30 'any(e["event"] == "register" and e["driver"] == "'$DRV'" and not e["error"] for e in ev)' ||
    { agent_fail "the kubelet's plugin manager did not register $DRV"; grep -v '"api"' "$D/h.log"; tn_done; }
[ -S "$D/registry/$DRV-reg.sock" ] || tn_fail "no registration socket $D/registry/$DRV-reg.sock"
python3 - "$D/h.log" "$D/plugins/$DRV/dra.sock" <<'P' || tn_fail "registration"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
r = [e for e in ev if e["event"] == "register"][0]
print("  kubelet plugin manager: registered %s at %s, services %s" % (r["driver"], r["endpoint"], r["versions"]))
ok = r["endpoint"] == sys.argv[2] and "v1.DRAPlugin" in r["versions"]
if not ok:
    print("FAIL: want endpoint %s and v1.DRAPlugin" % sys.argv[2])
sys.exit(0 if ok else 1)
P

# 2. the agent's ResourceSlices: pool = node, the devices and counter sets of three GPUs
slices() { "$K" get resourceslices -o json --field-selector "spec.driver=$DRV,spec.nodeName=$NODE"; }
have_slices() {
    slices | python3 -c '
import json, sys
names = {d["name"] for s in json.load(sys.stdin)["items"] for d in s["spec"].get("devices") or []}
want = {"gpu-0", "gpu-1-mig-3g-40gb-0", "gpu-1-mig-3g-40gb-4", "gpu-2"}
sys.exit(0 if want <= names and any("-part-" in n for n in names) else 1)'
}
tn_wait 30 have_slices || { agent_fail "the agent did not publish its ResourceSlices"; slices | head -c 3000; tn_done; }
slices > "$E2E_DIR/slices.json"
python3 - "$E2E_DIR/slices.json" "$NODE" <<'P' || tn_fail "ResourceSlices"
import json, sys
items, node = json.load(open(sys.argv[1]))["items"], sys.argv[2]
ok = True
devs, sets = {}, []
for s in items:
    sp = s["spec"]
    if sp["pool"]["name"] != node or sp.get("nodeName") != node:
        print("FAIL: slice %s: pool %s nodeName %s" % (s["metadata"]["name"], sp["pool"]["name"], sp.get("nodeName")))
        ok = False
    for d in sp.get("devices") or []:
        devs[d["name"]] = d
    sets += [c["name"] for c in sp.get("sharedCounters") or []]
parts = sorted(n for n in devs if "-part-" in n)
print("  %d ResourceSlices in pool %s: %d devices (%d dynamic placements), counter sets %s" %
      (len(items), node, len(devs), len(parts), sorted(sets)))
for n in ("gpu-0", "gpu-1-mig-3g-40gb-0", "gpu-1-mig-3g-40gb-4", "gpu-2"):
    a = {k: list(v.values())[0] for k, v in devs[n].get("attributes", {}).items()}
    print("    %-22s %s" % (n, ", ".join("%s=%s" % kv for kv in sorted(a.items()))))
for want in ("gpu-0-counters", "gpu-2-counters"):
    if want not in sets:
        print("FAIL: no counter set %s" % want)
        ok = False
if "gpu-1-counters" in sets or any(n.startswith("gpu-1-part-") for n in parts):
    print("FAIL: GPU 1 (static MIG instances) must not be partitionable")
    ok = False
if not any(n.startswith("gpu-2-part-7g-80gb-") for n in parts):
    print("FAIL: no 7g.80gb placement on GPU 2")
    ok = False
sys.exit(0 if ok else 1)
P

# 3. claims and pods; the stock kube-scheduler allocates and binds
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
      "spec": {"schedulerName": "default-scheduler",
               "resourceClaims": [{"name": "gpu", "resourceClaimName": "%s"}],
               "containers": [{"name": "main", "image": "registry.invalid/cuda:1",
                               "resources": {"requests": {"cpu": "1"},
                                             "claims": [{"name": "gpu"}]}}]}}\n' "$1" "$2"
}
{
    claim whole $DRV
    claim mig mig.gpusched.io "$P.profile == '3g.40gb'" "$P.dynamic == false"
    claim dyn mig.gpusched.io "$P.dynamic == true" "$P.profile == '2g.20gb'"
    pod p-whole whole
    pod p-mig mig
    pod p-dyn dyn
} > "$E2E_DIR/dra.json"
"$K" create -f "$E2E_DIR/dra.json" > /dev/null || { tn_fail "creating the claims and pods"; tn_done; }
printf 'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nclientConnection:\n  kubeconfig: %s\n' \
    "$E2E_DIR/admin.kubeconfig" > "$E2E_DIR/ks.yaml"
"$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 -v 2 \
    > "$E2E_DIR/kube-scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/kube-scheduler.pid"
ln -s kube-scheduler.log "$E2E_DIR/scheduler.log" # the log tn_done shows
bound3() { [ "$("$K" get pods -n dra -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c "^$NODE$")" = 3 ]; }
tn_wait 60 bound3 || tn_fail "kube-scheduler did not bind the three pods to $NODE"
"$K" get pods -n dra -o wide | sed 's/^/  /'
# a dynamic 7g.80gb asks a whole GPU's memory slices: with GPU 0 or 2 taken whole and the
# other holding a 2g.20gb placement, no counter set has them
{ claim big mig.gpusched.io "$P.dynamic == true" "$P.profile == '7g.80gb'"; pod p-big big; } |
    "$K" create -f - > /dev/null
unsched() { "$K" get pod -n dra p-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' | grep -q Unschedulable; }
tn_wait 30 unsched || tn_fail "p-big (dynamic 7g.80gb) was not found unschedulable"
[ -z "$("$K" get pod -n dra p-big -o jsonpath='{.spec.nodeName}')" ] || tn_fail "p-big was bound"
[ -z "$("$K" get resourceclaim -n dra big -o jsonpath='{.status.allocation}')" ] ||
    tn_fail "claim big was allocated"
show "p-big (dynamic 7g.80gb): $("$K" get pod -n dra p-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
"$K" delete pod -n dra p-big --wait=false > /dev/null

"$K" get resourceclaims -n dra -o json > "$E2E_DIR/claims.json"
"$K" get pods -n dra -o json > "$E2E_DIR/pods.json"
python3 - "$E2E_DIR/claims.json" "$E2E_DIR/pods.json" "$NODE" "$DRV" > "$E2E_DIR/alloc.txt" <<'P' ||
import json, re, sys
claims = {c["metadata"]["name"]: c for c in json.load(open(sys.argv[1]))["items"]}
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
node, drv = sys.argv[3], sys.argv[4]
want = {"whole": r"gpu-[02]", "mig": r"gpu-1-mig-3g-40gb-[04]", "dyn": r"gpu-[02]-part-2g-20gb-\d+"}
ok, gpu = True, {}
for name, pat in want.items():
    c = claims[name]
    al = (c.get("status") or {}).get("allocation")
    res = (al or {}).get("devices", {}).get("results", [])
    pod = pods["p-" + name]
    rf = [r for r in (c.get("status") or {}).get("reservedFor", []) if r["uid"] == pod["metadata"]["uid"]]
    if len(res) != 1:
        print("FAIL: claim %s: allocation %s" % (name, al), file=sys.stderr)
        ok = False
        continue
    r = res[0]
    good = (r["driver"] == drv and r["pool"] == node and re.fullmatch(pat, r["device"]) and rf
            and pod["spec"].get("nodeName") == node)
    print("%s %s %s %s" % (name, c["metadata"]["uid"], r["device"], pod["metadata"]["uid"]))
    print("  claim %-5s allocated %s/%s/%s, reserved for %s, pod bound to %s" %
          (name, r["driver"], r["pool"], r["device"], [x["name"] for x in rf],
           pod["spec"].get("nodeName")), file=sys.stderr)
    if not good:
        print("FAIL: claim %s: want %s/%s/%s reserved for p-%s bound to %s" % (name, drv, node, pat, name, node), file=sys.stderr)
        ok = False
    gpu[name] = r["device"].split("-")[1]
if ok and gpu["whole"] == gpu["dyn"]:
    print("FAIL: the whole GPU and the dynamic placement share GPU %s (counters)" % gpu["whole"], file=sys.stderr)
    ok = False
sys.exit(0 if ok else 1)
P
    tn_fail "status.allocation"
cat "$E2E_DIR/alloc.txt" | sed 's/^/  claim uid, device, pod uid: /'
[ "$(wc -l < "$E2E_DIR/alloc.txt")" = 3 ] || { grep -v "^I" "$E2E_DIR/kube-scheduler.log" | tail -20; tn_done; }

# 4. the kubelet's DRA manager prepares each pod: CDI IDs, CDI spec, the dynamic instance
inv() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}'; }
status() { curl -sf "http://127.0.0.1:$MPORT/status"; }
# instance_is DEVICE 1|0: the placement DEVICE (gpu-<i>-part-<profile>-<start>) is (1) or is
# not (0) a MIG instance in the agent's /status and in the Node's inventory
instance_is() {
    local gi start
    gi=$(echo "$1" | cut -d- -f2); start=${1##*-}
    status > "$D/status.json" && inv > "$D/inv.json" || return 1
    python3 - "$D/status.json" "$D/inv.json" "$gi" "$start" "$2" <<'P'
import json, sys
st, inv = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
gi, start, want = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
a = any(m["start"] == start for m in st[gi]["mig"])
g = next(g for g in inv["gpus"] if g["i"] == gi)
b = any(m.endswith("@%d" % start) for m in g.get("mig", []))
sys.exit(0 if a == want and b == want else 1)
P
}
mig_off() { status | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)[int(sys.argv[1])]["mig_enabled"])' "$1"; }
# check_prepared CLAIM CLAIMUID DEVICE: the harness's last prepare of p-CLAIM, the CDI spec,
# the UUID; for the dynamic placement its instance in /status and the inventory
check_prepared() {
    status > "$D/status.json"
    inv > "$D/inv.json"
    python3 - "$D/h.log" "$@" "$D/cdi" "$E2E_DIR/slices.json" "$D/status.json" "$D/inv.json" "$DRV" <<'P'
import json, os, sys
log, claim, cuid, dev, cdi, slices, status, inv, drv = sys.argv[1:]
ev = [json.loads(l) for l in open(log) if l.startswith("{")]
e = [e for e in ev if e["event"] == "prepare" and e["pod"] == "p-" + claim][-1]
ok = True
def fail(m):
    global ok
    print("FAIL: p-%s: %s" % (claim, m))
    ok = False
if e.get("error"):
    fail("PrepareResources: " + e["error"])
    sys.exit(1)
want_id = "%s/gpu=%s-%s" % (drv, cuid, dev)
got = e["containers"].get("main")
print("  p-%-5s PrepareResources %.3f s; container main gets CDI devices %s" % (claim, e["seconds"], got))
if got != [want_id]:
    fail("CDI IDs %s, want [%s]" % (got, want_id))
cl = e.get("claims") or []
if [(c["driver"], c["device"]) for c in cl] != [(drv, dev)]:
    fail("the driver reported devices %s, want %s" % ([(c["driver"], c["device"]) for c in cl], dev))
# the UUID: the slice's for a device that exists, the new instance's for a placement
st = json.load(open(status))
gi = int(dev.split("-")[1])
if "-part-" in dev:
    d = next(d for s in json.load(open(slices))["items"] for d in s["spec"].get("devices") or [] if d["name"] == dev)
    prof = d["attributes"]["profile"]["string"]
    start = int(dev.rsplit("-", 1)[1])
    m = [x for x in st[gi]["mig"] if x["profile"] == prof and x["start"] == start]
    uuid = m[0]["uuid"] if m else None
    print("  p-%-5s GPU %d now has MIG instance %s@%d %s (agent /status); inventory GPU %d: %s" %
          (claim, gi, prof, start, uuid, gi, next(g for g in json.load(open(inv))["gpus"] if g["i"] == gi).get("mig")))
    if not m:
        fail("no %s@%d instance on GPU %d after prepare (/status: %s)" % (prof, start, gi, st[gi]["mig"]))
    if "%s@%d" % (prof, start) not in next(g for g in json.load(open(inv))["gpus"] if g["i"] == gi).get("mig", []):
        fail("the Node's inventory does not list %s@%d on GPU %d" % (prof, start, gi))
else:
    d = next(d for s in json.load(open(slices))["items"] for d in s["spec"].get("devices") or [] if d["name"] == dev)
    uuid = d["attributes"]["uuid"]["string"]
path = os.path.join(cdi, "%s-%s.json" % (drv, cuid))
if not os.path.exists(path):
    fail("no CDI spec %s" % path)
    sys.exit(1)
spec = json.load(open(path))
name = "%s-%s" % (cuid, dev)
devs = [x for x in spec.get("devices", []) if x.get("name") == name]
env = (spec.get("containerEdits") or {}).get("env", []) + (devs[0].get("containerEdits", {}).get("env", []) if devs else [])
vis = [v.split("=", 1)[1] for v in env if v.startswith("NVIDIA_VISIBLE_DEVICES=")]
print("  p-%-5s CDI spec %s: kind %s, device %s, NVIDIA_VISIBLE_DEVICES=%s" %
      (claim, os.path.basename(path), spec.get("kind"), name if devs else None, ",".join(vis)))
if spec.get("kind") != drv + "/gpu" or not devs:
    fail("the CDI spec has no device %s of kind %s/gpu" % (name, drv))
if not uuid or vis != [uuid]:
    fail("NVIDIA_VISIBLE_DEVICES %s, want the device's UUID %s" % (vis, uuid))
sys.exit(0 if ok else 1)
P
}
while read -r c cuid dev puid; do
    echo "prepare dra p-$c" >&3
    wait_for 60 'any(e["event"] == "prepare" and e["pod"] == "p-'$c'" for e in ev)' ||
        { tn_fail "no answer to prepare p-$c"; continue; }
    case "$dev" in *-part-*) # the agent's next round shows the new instance
        tn_wait 10 instance_is "$dev" 1 || true ;;
    esac
    check_prepared "$c" "$cuid" "$dev" || tn_fail "prepare p-$c"
    case "$dev" in *-mig-* | *-part-*) ;;
    *) # a whole GPU: prepared, it is out of MIG mode (GPU 2 was in it)
        gi=${dev#gpu-}
        tn_wait 10 mig_off "$gi" || tn_fail "p-$c: GPU $gi is still in MIG mode after prepare"
        show "p-$c   GPU $gi prepared whole: MIG mode off (agent /status)" ;;
    esac
done < "$E2E_DIR/alloc.txt"

# 5. unprepare: the CDI specs go, the dynamic instance is destroyed
while read -r c cuid dev puid; do
    echo "unprepare dra p-$c" >&3
    wait_for 60 'any(e["event"] == "unprepare" and e["pod"] == "p-'$c'" for e in ev)' ||
        { tn_fail "no answer to unprepare p-$c"; continue; }
    err=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print([e for e in ev if e["event"] == "unprepare" and e["pod"] == sys.argv[2]][-1].get("error") or "")' "$D/h.log" "p-$c")
    [ -z "$err" ] || tn_fail "UnprepareResources p-$c: $err"
    [ ! -e "$D/cdi/$DRV-$cuid.json" ] || tn_fail "p-$c: the CDI spec $DRV-$cuid.json is still there"
    show "p-$c unprepared: CDI spec $DRV-$cuid.json removed"
    case "$dev" in *-part-*)
        gi=$(echo "$dev" | cut -d- -f2); start=${dev##*-}
        tn_wait 10 instance_is "$dev" 0 ||
            tn_fail "p-$c: the dynamic instance on GPU $gi at $start is still in /status or the inventory"
        show "p-$c: GPU $gi's dynamic instance destroyed; inventory GPU $gi: $(inv | python3 -c '
import json, sys
print(next(g for g in json.loads(sys.stdin.read())["gpus"] if g["i"] == int(sys.argv[1])).get("mig", "whole"))' "$gi")"
    esac
done < "$E2E_DIR/alloc.txt"
left=$(ls "$D/cdi")
[ -z "$left" ] || tn_fail "CDI specs left behind: $left"
echo "quit" >&3
echo "the kubelet DRA manager's events:"
grep -v '"event": *"api"' "$D/h.log" | cut -c1-220 | sed 's/^/  /'
[ "$TN_OK" = 0 ] || { echo "--- agent log (tail)"; tail -20 "$E2E_DIR/agent.log"; echo "--- harness (tail)"; grep -v "^I" "$D/h.err" | tail -10; }
tn_done
