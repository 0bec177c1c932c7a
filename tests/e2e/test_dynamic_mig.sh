#!/usr/bin/env bash
# Dynamic MIG end to end (issue 10): the scheduler re-carves MIG GPUs for pods no free slot
# fits, the agent applies the layout, the pod binds on the new instance. One H100 node runs
# the gpusched agent on four fake GPUs carved 7x1g.10gb, its device plugin at the kubelet's
# side of the protocol (dpharness); a loop here plays the rest of the kubelet: the node's
# allocatable nvidia.com/gpu and nvidia.com/mig-* follow the inventory 1.5 s after it changes
# (as after the device plugin re-registers), bound pods turn Running and deletions finish.
#  1. 14 gpu-low 1g.10gb pods fill two GPUs; the UUID of every instance is recorded.
#  2. A 3g.40gb pod and a whole-GPU pod: the two idle GPUs are re-carved (gpusched.io/mig-desired,
#     Recarving Events, nominatedNodeName), one to hold a 3g.40gb instance, one whole; both
#     pods bind there; the instances in use keep their UUIDs. The re-carved GPU's free
#     instances are then filled with more pods: every GPU is used.
#  3. A gpu-critical 3g.40gb pod: the scheduler evicts exactly the gpu-low 1g.10gb pods in the
#     way of a 3g.40gb placement on one GPU (DisruptionTarget, nothing else) and re-carves it;
#     the critical pod binds on the new instance; every other instance keeps its UUID.
#  4. 1g.10gb@0 and @1 freed on the other full GPU (and on step 3's GPU, held since its change),
#     the agent stopped (SIGSTOP), a 2g.20gb pod needs a re-carve; once the scheduler wrote the
#     new generation it is killed (SIGKILL) and started again, then the agent continues: the pod
#     binds on the re-carved GPU, the generation grew by exactly one (no second carve while the
#     kubelet has not advertised the new instance yet), the nomination stayed.
# Step 2's 3g.40gb pod and the pods filling its GPU are gpu-critical: a lower-priority pod on a
# 3g.40gb instance would be step 3's victim by plain preemption (one victim, no re-carve, tried
# before a re-carve with victims). The whole-GPU pod is gpu-low: no victim for a MIG request
# without a mode change, which comes last.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
H="$E2E_BIN/dpharness-v0.37.2"
. "$(dirname "$0")/tenancy.sh"
NODE=gpu-h100-21
D="$E2E_DIR/dp"
mkdir -p "$D"
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

# the Node as NFD and NVIDIA's GPU feature discovery label it, before the agent runs
tn_h100_node "$NODE" 4 '{"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "28"}' || exit 1
tn_agent_user || exit 1

python3 - > "$E2E_DIR/gpus.json" <<'G'
import json
seven = [{"profile": "1g.10gb", "start": s} for s in range(7)]
print(json.dumps({"gpus": [{"model": "H100-80GB", "mig": True, "instances": seven} for _ in range(4)]}))
G
printf 'version: v1\nflags:\n  migStrategy: mixed\n' > "$E2E_DIR/dp.yaml"

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
    --dp-config "$E2E_DIR/dp.yaml" --device-plugin-dir "$D" \
    --auto-cordon false > "$E2E_DIR/agent.log" 2>&1 &
AGENT=$!
echo $AGENT > "$E2E_DIR/agent.pid"

inv() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}'; }
desired() { "$K" get node $NODE -o jsonpath='{.metadata.annotations.gpusched\.io/mig-desired}'; }
gen_of() { python3 -c 'import json,sys; t=sys.stdin.read(); print(json.loads(t).get("generation", 0) if t.strip() else 0)'; }
inv_gen() { inv | gen_of; }
desired_gen() { desired | gen_of; }
status() { curl -sf "http://127.0.0.1:$MPORT/status"; }
dev() { "$K" get pod -n ai "$1" -o jsonpath='{.metadata.annotations.gpusched\.io/devices}'; }
node_of() { "$K" get pod -n ai "$1" -o jsonpath='{.spec.nodeName}'; }
# the inventory finished with generation $1 (nothing pending nor failed)
inv_done() {
    inv | python3 -c '
import json, sys
i = json.loads(sys.stdin.read() or "{}")
sys.exit(0 if i.get("generation", 0) == int(sys.argv[1]) and i.get("mig_state", "") in ("", "success") else 1)' "$1"
}
bound_all() { # POD...: every one has a node
    "$K" get pods -n ai -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' |
        python3 -c '
import sys
bound = {l.split()[0] for l in sys.stdin if len(l.split()) == 2}
sys.exit(0 if set(sys.argv[1:]) <= bound else 1)' "$@"
}
all_four() {
    inv | python3 -c 'import json,sys; i=json.loads(sys.stdin.read() or "{}"); g=i.get("gpus",[]); sys.exit(0 if len(g)==4 and all(len(x.get("mig",[]))==7 for x in g) else 1)'
}
tn_wait 20 all_four || { tn_fail "the inventory does not describe 4 GPUs in 7x1g.10gb: $(inv)"; tail -20 "$E2E_DIR/agent.log"; tn_done; }
tn_wait 10 sh -c "[ -n \"\$(curl -sf http://127.0.0.1:$MPORT/status)\" ]" || { tn_fail "no agent /status"; tn_done; }

# the rest of the kubelet: allocatable follows the inventory (whole GPUs: nvidia.com/gpu; per
# profile: nvidia.com/mig-<profile>, every instance, used or not) 1.5 s after it changed (the
# kubelet's node status lags the device plugin), bound pods turn Running, deletions (graceful,
# as the scheduler evicts) finish
cat > "$E2E_DIR/kubelet.py" <<'PY'
import datetime, json, subprocess, sys, time
K, node = sys.argv[1], sys.argv[2]
LAG = 1.5
seen, since = None, 0.0
def kc(*a):
    return subprocess.run([K, *a], capture_output=True, text=True)
while True:
    r = kc("get", "node", node, "-o", "json")
    if r.returncode == 0:
        n = json.loads(r.stdout)
        text = n["metadata"].get("annotations", {}).get("gpusched.io/inventory")
        if text:
            want = {"nvidia.com/gpu": 0}
            for g in json.loads(text)["gpus"]:
                if "mig" not in g:
                    want["nvidia.com/gpu"] += 1
                for x in g.get("mig", []):
                    k = "nvidia.com/mig-" + x.split("@")[0]
                    want[k] = want.get(k, 0) + 1
            have = n["status"].get("allocatable", {})
            patch = {k: str(want.get(k, 0)) for k in set(have) | set(want)
                     if k.startswith("nvidia.com/") and have.get(k) != str(want.get(k, 0))}
            if patch != seen:
                seen, since = patch, time.time()
            if patch and time.time() - since >= LAG:
                kc("patch", "node", node, "--subresource=status", "--type=merge",
                   "-p", json.dumps({"status": {"allocatable": patch, "capacity": patch}}))
                print(time.strftime("%T"), "allocatable", json.dumps(patch), flush=True)
    r = kc("get", "pods", "-A", "--field-selector", "spec.nodeName=" + node, "-o", "json")
    if r.returncode == 0:
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for p in json.loads(r.stdout)["items"]:
            md = p["metadata"]
            if md.get("deletionTimestamp"):
                kc("delete", "pod", "-n", md["namespace"], md["name"], "--grace-period=0", "--force")
                print(time.strftime("%T"), "deleted", md["name"], flush=True)
            elif p.get("status", {}).get("phase", "Pending") == "Pending":
                kc("patch", "pod", "-n", md["namespace"], md["name"], "--subresource=status",
                   "--type=merge", "-p", json.dumps({"status": {"phase": "Running", "startTime": now,
                   "conditions": [{"type": "Ready", "status": "True"}]}}))
    time.sleep(0.5)
PY
python3 "$E2E_DIR/kubelet.py" "$K" "$NODE" > "$E2E_DIR/kubelet.log" 2>&1 &
echo $! > "$E2E_DIR/kubelet.pid"

# PriorityClasses from the article (its Deployment and Job are incomplete: refused)
"$K" apply -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/apply.log" 2>&1
for pc in gpu-critical gpu-low; do
    "$K" get priorityclass "$pc" > /dev/null || { tn_fail "PriorityClass $pc was not created"; tn_done; }
done
"$K" create namespace ai > /dev/null
# every pod update in ai (nominations, DisruptionTarget, deletions) for the checks below
"$K" get pods -n ai --watch --output-watch-events -o json > "$E2E_DIR/podwatch.json" 2>/dev/null &
echo $! > "$E2E_DIR/podwatch.pid"
# watched QUERY [POD]: nominated POD (the node names nominated while unbound, in order, '-'
# for a clearing), disrupted (pods with DisruptionTarget), deleted (pods deleted)
watched() {
    python3 - "$E2E_DIR/podwatch.json" "$@" <<'P'
import json, sys
text, i, dec = open(sys.argv[1]).read(), 0, json.JSONDecoder()
q = sys.argv[2]
noms, marked, gone = [], set(), set()
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    try:
        ev, i = dec.raw_decode(text, i)
    except ValueError:
        break
    pod = ev.get("object", {})
    name = pod.get("metadata", {}).get("name")
    st = pod.get("status", {})
    if ev.get("type") == "DELETED":
        gone.add(name)
    for c in st.get("conditions", []):
        if c.get("type") == "DisruptionTarget":
            marked.add(name)
    if q == "nominated" and name == sys.argv[3] and not pod.get("spec", {}).get("nodeName"):
        v = st.get("nominatedNodeName") or "-"
        if (noms or v != "-") and (not noms or noms[-1] != v):
            noms.append(v)
if q == "nominated":
    print(",".join(noms))
elif q == "disrupted":
    print(" ".join(sorted(marked)))
else:
    print(" ".join(sorted(gone)))
P
}
recarving_event() { # POD: a Recarving Event on it
    "$K" get events -n ai --field-selector "reason=Recarving,involvedObject.name=$1" -o name | grep -q .
}
mkpod() { # NAME PRIORITYCLASS RESOURCE
    tn_pods ai "$1" 0 1 "$2" "$3=1" | python3 -c '
import json, sys
l = json.load(sys.stdin)
for p in l["items"]:
    p["metadata"]["name"] = sys.argv[1]
print(json.dumps(l))' "$1" | "$K" create -f - > /dev/null
}
# held FILE: "pod gpu start profile uuid" per pod holding a MIG instance, from the pods'
# gpusched.io/devices and the agent's /status (saved to FILE.status)
held() {
    "$K" get pods -n ai -o json > "$1.pods"
    status > "$1.status"
    python3 - "$1.pods" "$1.status" > "$1" <<'P'
import json, sys
pods = json.load(open(sys.argv[1]))["items"]
st = json.load(open(sys.argv[2]))
for p in pods:
    d = p["metadata"].get("annotations", {}).get("gpusched.io/devices", "")
    for one in d.split(";"):
        if not one.startswith("mig="):
            continue
        gpu, rest = one[4:].split(":")
        prof, start = rest.split("@")
        uuid = next((m["uuid"] for m in st[int(gpu)]["mig"] if m["start"] == int(start) and m["profile"] == prof), "-")
        print(p["metadata"]["name"], gpu, start, prof, uuid)
P
}
# same_uuids BEFORE AFTER [GPU...]: every instance of BEFORE.status on these GPUs (all when
# none given) is in AFTER.status with the same profile, start and UUID; prints the count
same_uuids() {
    python3 - "$1.status" "$2.status" "${@:3}" <<'P'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
gpus = [int(x) for x in sys.argv[3:]] or [g["gpu"] for g in a]
bad, n = [], 0
for i in gpus:
    now = {(m["profile"], m["start"]): m["uuid"] for m in b[i]["mig"]}
    for m in a[i]["mig"]:
        n += 1
        if now.get((m["profile"], m["start"])) != m["uuid"]:
            bad.append("GPU %d %s@%d %s -> %s" % (i, m["profile"], m["start"], m["uuid"], now.get((m["profile"], m["start"]), "gone")))
print("  %d instances on GPU(s) %s keep their UUIDs" % (n - len(bad), ",".join(map(str, gpus))))
for x in bad:
    print("  changed: " + x)
sys.exit(1 if bad else 0)
P
}

# kept_around BEFORE AFTER GPU: after a re-carve of GPU, the instances of every other GPU keep
# their UUIDs, and so do those on GPU that its remaining pods hold
kept_around() {
    local other
    other=$(echo 0 1 2 3 | tr ' ' '\n' | grep -vx "$3" | tr '\n' ' ')
    same_uuids "$E2E_DIR/$1" "$E2E_DIR/$2" $other || tn_fail "an instance of another GPU changed"
    python3 - "$E2E_DIR/$1" "$E2E_DIR/$2" "$3" <<'P' || tn_fail "an instance GPU $3's remaining pods hold changed"
import sys
a = {l.split()[0]: l.split()[1:] for l in open(sys.argv[1])}
b = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
keep = [p for p in b if p in a and a[p][0] == sys.argv[3]]
bad = [p for p in keep if a[p] != b[p]]
print("  GPU %s: %d instances its remaining pods hold keep their UUIDs" % (sys.argv[3], len(keep) - len(bad)))
sys.exit(1 if bad else 0)
P
}
layout() { # GPU: its layout in the inventory ("whole" or the instances)
    inv | python3 -c '
import json, sys
g = {x["i"]: x for x in json.load(sys.stdin)["gpus"]}[int(sys.argv[1])]
print(",".join(g["mig"]) if "mig" in g else "whole")' "$1"
}
dump() {
    echo "--- pods"; "$K" get pods -n ai -o custom-columns='NAME:.metadata.name,NODE:.spec.nodeName,NOM:.status.nominatedNodeName,DEV:.metadata.annotations.gpusched\.io/devices,PC:.spec.priorityClassName' | head -40
    echo "--- inventory: $(inv)"; echo "--- desired: $(desired)"
    echo "--- agent log (tail)"; tail -15 "$E2E_DIR/agent.log"
    echo "--- kubelet loop (tail)"; tail -8 "$E2E_DIR/kubelet.log"
}

tn_start --dynamic-mig true || { tn_fail "the scheduler with --dynamic-mig true did not start"; dump; tn_done; }

# 1. 14 gpu-low 1g.10gb pods fill two GPUs
tn_pods ai small 0 14 gpu-low nvidia.com/mig-1g.10gb=1 app=small | "$K" create -f - > /dev/null || exit 1
SMALL=$(seq -f 'small-%g' 0 13)
tn_wait 40 bound_all $SMALL || { tn_fail "the 14 1g.10gb pods were not bound"; dump; tn_done; }
tn_wait 20 tn_running_ge ai 14 || tn_fail "the kubelet loop did not start the pods"
held "$E2E_DIR/h1"
read -r FULL IDLE < <(python3 - "$E2E_DIR/h1" <<'P'
import sys
n = {}
for l in open(sys.argv[1]):
    g = int(l.split()[1]); n[g] = n.get(g, 0) + 1
full = sorted(g for g in n if n[g] == 7)
idle = sorted(set(range(4)) - set(n))
print(",".join(map(str, full)) or "-", ",".join(map(str, idle)) or "-")
P
)
echo "step 1 ($(elapsed)): 14 gpu-low 1g.10gb pods fill GPU(s) $FULL; idle: GPU(s) $IDLE"
[ "${#FULL}" = 3 ] && [ "${#IDLE}" = 3 ] ||
    { tn_fail "want two GPUs full and two idle, got full '$FULL', idle '$IDLE'"; cat "$E2E_DIR/h1"; dump; tn_done; }
grep -q ' - *$' "$E2E_DIR/h1" && tn_fail "an annotated instance is not in the agent's /status: $(grep ' -$' "$E2E_DIR/h1")"
G0=$(desired_gen)
[ "$G0" = 0 ] || tn_fail "a layout was desired before any pod needed one: $(desired)"

# 2. a 3g.40gb pod and a whole-GPU pod: the idle GPUs are re-carved
mkpod llm gpu-critical nvidia.com/mig-3g.40gb
mkpod trainer gpu-low nvidia.com/gpu
if ! tn_wait 45 bound_all llm trainer; then
    tn_fail "llm (3g.40gb) and trainer (whole GPU) were not bound after a re-carve"; dump; tn_done
fi
G2=$(desired_gen)
tn_wait 10 inv_done "$G2" || tn_fail "the inventory did not finish generation $G2: $(inv)"
LLM=$(dev llm); TRAINER=$(dev trainer)
A=$(echo "$LLM" | sed -n 's/^mig=\([0-9]\):3g\.40gb@[0-7]$/\1/p'); B=${TRAINER#gpu=}
echo "step 2 ($(elapsed)): desired generation $G0 -> $G2: $(desired)"
echo "  inventory generation $(inv_gen); llm: $LLM, trainer: $TRAINER; GPU $A: $(layout "${A:-0}"), GPU $B: $(layout "$B" 2>/dev/null)"
[ "$G2" -ge 1 ] 2>/dev/null || tn_fail "no gpusched.io/mig-desired was written"
[ -n "$A" ] && case ",$IDLE," in *",$A,"*) true ;; *) false ;; esac ||
    tn_fail "llm: '$LLM' is not a 3g.40gb instance of an idle GPU ($IDLE)"
case "$TRAINER" in gpu=[0-3]) case ",$IDLE," in *",$B,"*) ;; *) tn_fail "trainer: '$TRAINER' is not an idle GPU ($IDLE)" ;; esac ;;
    *) tn_fail "trainer: '$TRAINER' is not one whole GPU" ;; esac
[ "$A" != "$B" ] || tn_fail "llm and trainer on the same GPU $A"
[ "$(layout "$B")" = whole ] || tn_fail "GPU $B is not whole in the inventory: $(layout "$B")"
case ",$(layout "${A:-0}")," in *",${LLM#*:},"*) ;; *) tn_fail "GPU $A's inventory lacks ${LLM#*:}: $(layout "${A:-0}")" ;; esac
for p in llm trainer; do
    recarving_event $p || tn_fail "no Recarving Event on $p"
    nom=$(watched nominated $p)
    echo "  $p nominated while pending: ${nom:-never}"
    [ "${nom%%,*}" = "$NODE" ] || tn_fail "$p was not nominated to $NODE before it was bound ('$nom')"
done
# the dashboard's state lists the re-carving: the GPU, the layout it had and the one asked
curl -sf "http://127.0.0.1:$TN_PORT/ui/state" > "$E2E_DIR/ui2.json" || tn_fail "no /ui/state"
python3 - "$E2E_DIR/ui2.json" "$NODE" "$A" "$B" <<'P' || tn_fail "/ui/state lists no re-carving of GPUs $A and $B"
import json, sys
st, node, gpus = json.load(open(sys.argv[1])), sys.argv[2], {int(g) for g in sys.argv[3:] if g.isdigit()}
rc = [e for e in st["events"] if e["kind"] == "recarve" and e["node"] == node]
for e in rc:
    print("  /ui/state: recarve %s GPU %s: %s -> %s (generation %s)" % (e["node"], e["gpu"], e["from"], e["to"], e["generation"]))
seen = {e["gpu"] for e in rc if e["from"] != e["to"]}
assert gpus <= seen, (gpus, seen)
P
held "$E2E_DIR/h2"
same_uuids "$E2E_DIR/h1" "$E2E_DIR/h2" ${FULL//,/ } || tn_fail "an instance held by a running pod was re-created"
# the re-carved GPU's free instances get pods too (gpu-critical: not step 3's victims): every
# GPU is used
FREE=$(python3 - "$E2E_DIR/h2" "$E2E_DIR/h2.status" "$A" <<'P'
import json, sys
used = {(l.split()[1], l.split()[2]) for l in open(sys.argv[1])}
st = json.load(open(sys.argv[2]))
a = sys.argv[3]
print(" ".join(m["profile"] for m in st[int(a)]["mig"] if (a, str(m["start"])) not in used))
P
)
echo "  GPU $A's free instances get gpu-critical pods: ${FREE:-none}"
FILL=""; k=0
for prof in $FREE; do mkpod fill-$k gpu-critical nvidia.com/mig-$prof; FILL="$FILL fill-$k"; k=$((k + 1)); done
if [ -n "$FILL" ]; then
    tn_wait 30 bound_all $FILL || { tn_fail "the fill pods were not bound:$FILL"; dump; }
fi
sleep 1
G2b=$(desired_gen)
[ "$G2b" = "$G2" ] || tn_fail "filling free instances re-carved something (generation $G2 -> $G2b)"
tn_wait 20 tn_running_ge ai $((16 + k)) || tn_fail "not every pod is Running"
held "$E2E_DIR/h3"
echo "step 2 done ($(elapsed)): $(wc -l < "$E2E_DIR/h3") MIG instances and GPU $B in use"

# 3. a gpu-critical 3g.40gb pod: gpu-low 1g.10gb pods in the way on one GPU are evicted
mkpod critical gpu-critical nvidia.com/mig-3g.40gb
tn_wait 45 bound_all critical || { tn_fail "the gpu-critical 3g.40gb pod was not bound"; dump; tn_done; }
G3=$(desired_gen)
tn_wait 10 inv_done "$G3" || tn_fail "the inventory did not finish generation $G3: $(inv)"
CRIT=$(dev critical)
sleep 1
held "$E2E_DIR/h4"
echo "step 3 ($(elapsed)): desired generation $G2 -> $G3: $(desired)"
echo "  critical: $CRIT"
V=$(echo "$CRIT" | sed -n 's/^mig=\([0-9]\):3g\.40gb@[0-7]$/\1/p')
[ -n "$V" ] || { tn_fail "critical: '$CRIT' is not a 3g.40gb instance"; V=9; }
[ "$G3" = $((G2 + 1)) ] || tn_fail "want generation $((G2 + 1)) for the critical pod's re-carve, got $G3"
echo "  GPU $V now: $(layout "$V" 2>/dev/null)"
GONE=$(python3 - "$E2E_DIR/h3" "$E2E_DIR/h4" <<'P'
import sys
a = {l.split()[0] for l in open(sys.argv[1])}
b = {l.split()[0] for l in open(sys.argv[2])}
print(" ".join(sorted(a - b)))
P
)
echo "  evicted: ${GONE:-none}"
python3 - "$E2E_DIR/h3" "$V" "${CRIT##*@}" $GONE <<'P' || tn_fail "the evicted pods are not the gpu-low 1g.10gb pods in the way on GPU $V"
import sys
held = {l.split()[0]: l.split()[1:] for l in open(sys.argv[1])}
v, s, gone = sys.argv[2], int(sys.argv[3]), set(sys.argv[4:])
# a 3g.40gb instance of an H100 spans 4 memory slices
way = {p for p, (g, st, prof, u) in held.items() if g == v and s <= int(st) < s + 4}
ok = True
for p in sorted(gone):
    g, st, prof, u = held[p]
    if not p.startswith("small-") or g != v or prof != "1g.10gb":
        print("  evicted %s (GPU %s %s@%s) is not a gpu-low 1g.10gb pod of GPU %s" % (p, g, prof, st, v)); ok = False
print("  in the way of 3g.40gb@%d on GPU %s: %s" % (s, v, " ".join(sorted(way))))
if way != gone:
    print("  want exactly those evicted"); ok = False
sys.exit(0 if ok and gone else 1)
P
left=$("$K" get pods -n ai -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
for p in llm trainer $FILL; do echo "$left" | grep -qx "$p" || tn_fail "$p was evicted"; done
nleft=$(echo "$left" | grep -c .)
[ "$nleft" = $((17 + k - $(echo $GONE | wc -w))) ] || tn_fail "$nleft pods left, want $((17 + k)) minus the evicted"
DT=$(watched disrupted)
echo "  DisruptionTarget seen on: ${DT:-none}"
[ "$DT" = "$GONE" ] || tn_fail "DisruptionTarget on '$DT', want the evicted '$GONE'"
for p in $GONE; do
    pc=$(python3 - "$E2E_DIR/h3.pods" "$p" <<'P'
import json, sys
print(next(x["spec"].get("priorityClassName", "") for x in json.load(open(sys.argv[1]))["items"] if x["metadata"]["name"] == sys.argv[2]))
P
)
    [ "$pc" = gpu-low ] || tn_fail "evicted $p has priority class '$pc'"
done
kept_around h3 h4 "$V"
recarving_event critical || tn_fail "no Recarving Event on critical"

# 4. restart mid-carve: free two 1g.10gb instances at 0 and 1 on the other full GPU, stop the
# agent, a 2g.20gb pod needs a re-carve there; kill the scheduler once it decided. GPU V's
# 1g.10gb@0 and @1 are freed too: held (re-carved in step 3) for the first scheduler, a second
# place to carve for a restarted one that forgot its nomination
W=$(echo "$FULL" | tr ',' '\n' | grep -vx "$V" | head -1)
FREED=$(awk -v w="$W" -v v="$V" '($2 == w || $2 == v) && $4 == "1g.10gb" && ($3 == 0 || $3 == 1) {print $1}' "$E2E_DIR/h4" | tr '\n' ' ')
echo "step 4 ($(elapsed)): GPUs $W and $V: deleting ${FREED:-nothing }(1g.10gb@0 and @1), agent stopped"
if [ -n "$FREED" ]; then
    "$K" delete pod -n ai $FREED --grace-period 0 --force > /dev/null 2>&1
    tn_wait 10 sh -c "! \"$K\" get pods -n ai -o name | grep -qE '/($(echo $FREED | tr ' ' '|'))\$'" || tn_fail "$FREED not deleted"
fi
sleep 1
kill -STOP $AGENT
mkpod mid gpu-low nvidia.com/mig-2g.20gb
grew() { [ "$(desired_gen)" -gt "$G3" ]; }
tn_wait 30 grew || { tn_fail "the scheduler did not re-carve for the 2g.20gb pod"; kill -CONT $AGENT; dump; tn_done; }
nominated() { [ "$("$K" get pod -n ai mid -o jsonpath='{.status.nominatedNodeName}')" = "$NODE" ]; }
tn_wait 10 nominated || tn_fail "mid is not nominated to $NODE"
G4=$(desired_gen)
echo "  the scheduler decided: desired generation $G3 -> $G4: $(desired); inventory still at $(inv_gen)"
[ "$G4" = $((G3 + 1)) ] || tn_fail "want generation $((G3 + 1)), got $G4"
[ -z "$(node_of mid)" ] || tn_fail "mid bound before its instance exists: $(dev mid)"
SPID=$(cat "$E2E_DIR/scheduler.pid")
{ kill -KILL "$SPID"; wait "$SPID"; } 2> /dev/null
mv "$E2E_DIR/scheduler.log" "$E2E_DIR/scheduler1.log"
tn_start --dynamic-mig true || { tn_fail "the scheduler did not start again"; kill -CONT $AGENT; dump; tn_done; }
sleep 3 # the new scheduler's cycles, the change still pending
Gr=$(desired_gen)
echo "  scheduler restarted; $(elapsed): desired generation $Gr, mid bound to '$(node_of mid)'"
[ "$Gr" = "$G4" ] || tn_fail "the restarted scheduler wrote generation $Gr over $G4 (carving twice)"
kill -CONT $AGENT
tn_wait 30 bound_all mid || { tn_fail "mid (2g.20gb) was not bound after the change"; dump; }
MID=$(dev mid)
tn_wait 10 inv_done "$G4" || tn_fail "the inventory did not finish generation $G4: $(inv)"
sleep 2
G5=$(desired_gen)
held "$E2E_DIR/h5"
echo "  $(elapsed): mid: $MID; GPU $W: $(layout "$W"); desired generation $G5, inventory $(inv_gen)"
[ "$MID" = "mig=$W:2g.20gb@0" ] || tn_fail "mid: '$MID', want mig=$W:2g.20gb@0"
[ "$G5" = "$G4" ] || tn_fail "the generation grew again after the restart: $G4 -> $G5"
nom=$(watched nominated mid)
echo "  mid nominated while pending: ${nom:-never}"
[ "$nom" = "$NODE" ] || tn_fail "mid's nominatedNodeName did not stay $NODE: '$nom'"
kept_around h4 h5 "$W"
recarving_event mid || tn_fail "no Recarving Event on mid"
n=$(grep -c "re-carving (generation" "$E2E_DIR/scheduler1.log" "$E2E_DIR/scheduler.log" | awk -F: '{s += $2} END {print s}')
echo "summary ($(elapsed)): generations 0 -> $G2 (llm, trainer) -> $G3 (critical; evicted $GONE) -> $G4 (mid, across a scheduler restart); re-carve writes logged: $n"
kill -0 $AGENT 2>/dev/null || tn_fail "the agent died"
[ "$TN_OK" = 0 ] || { dump; echo "--- first scheduler log (tail)"; tail -30 "$E2E_DIR/scheduler1.log" 2>/dev/null; }
tn_done
