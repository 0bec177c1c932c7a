#!/usr/bin/env bash
# Priorities with preemption on the real control plane. The article's gpu-priority-class.yaml
# is applied as it is (its three PriorityClasses; the Deployment and Job in the same file are
# incomplete manifests the API server refuses, so the test stamps pods from their templates,
# as their controllers would). Low-priority work fills the cluster: offline-training pods
# (gpu-low, 4 GPUs) on two whole-GPU A100 nodes and gpu-low MIG pods on every 3g.40gb slot
# of an H100 node, in waves a few seconds apart. Then the article's online-inference pods
# (gpu-critical, one 3g.40gb each) and a gpu-critical 4-GPU pod arrive: each must be bound
# and Running within 10 s, evicting only the youngest pods that free a valid slot (the
# fewest GPU-hours), with DisruptionTarget, Preempted/Preempting Events and nothing else lost.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
"$DRIVER" nodes <<'S' || exit 1
2 a100 A100-80GB 8 whole
1 h100mig H100-80GB 8 mig:all-3g.40gb
S
"$K" apply -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/apply.log" 2>&1
for pc in gpu-critical gpu-high gpu-low; do
    "$K" get priorityclass "$pc" > /dev/null || tn_fail "PriorityClass $pc was not created"
done
v=$("$K" get priorityclass gpu-critical -o jsonpath='{.value}')
[ "$v" = 1000000 ] || tn_fail "gpu-critical value $v"
# the article's templates
"$K" create --dry-run=client -o json -f "$SEED/gpu-priority-class.yaml" > "$E2E_DIR/article.json" ||
    exit 1
stamp() { # KIND NAME COUNT FROM: pods from the article's Deployment/Job template
    python3 - "$E2E_DIR/article.json" "$@" <<'P'
import json, sys
text, objs, i = open(sys.argv[1]).read(), [], 0
dec = json.JSONDecoder()
while i < len(text):  # kubectl prints one JSON document per object
    if text[i].isspace():
        i += 1
        continue
    o, i = dec.raw_decode(text, i)
    objs += o["items"] if o.get("kind") == "List" else [o]
kind, name, count, start = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
o = [x for x in objs if x["kind"] == kind and x["metadata"]["name"] == name][0]
spec = o["spec"]["template"]["spec"]
spec["schedulerName"] = "gpusched"
for c in spec["containers"]:
    c.setdefault("image", "registry.invalid/none:1")
items = [{"apiVersion": "v1", "kind": "Pod",
          "metadata": {"name": "%s-%d" % (name, i), "namespace": "ai",
                       "labels": {"app": name}}, "spec": spec}
         for i in range(start, start + count)]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}
"$K" create namespace ai > /dev/null
tn_start --min-runtime 0 || exit 1
# wave 1: two training jobs and 12 MIG batch pods; wave 2 (younger): two more training jobs;
# wave 3 (youngest): the last 4 MIG slots
stamp Job offline-training 2 0 | "$K" create -f - > /dev/null || exit 1
tn_pods ai batch 0 12 gpu-low nvidia.com/mig-3g.40gb=1 app=batch | "$K" create -f - > /dev/null
tn_wait 60 tn_bound_ge ai 14 || tn_fail "wave 1 not bound"
sleep 3
stamp Job offline-training 2 2 | "$K" create -f - > /dev/null
tn_wait 60 tn_bound_ge ai 16 || tn_fail "wave 2 not bound"
sleep 3
tn_pods ai batch 12 16 gpu-low nvidia.com/mig-3g.40gb=1 app=batch | "$K" create -f - > /dev/null
tn_wait 60 tn_bound_ge ai 20 || tn_fail "wave 3 not bound"
if [ "$E2E_KWOK" = 1 ]; then
    tn_wait 60 tn_running_ge ai 20 ||
        tn_fail "low-priority pods not Running"
fi
echo "cluster full: $(tn_bound ai) low-priority pods bound (16 GPUs of training, 16 3g.40gb slots)"
# every pod update from here on, to see the victims' DisruptionTarget before they go
tn_watch ai
sleep 1
# the critical pods arrive
t0=$(tn_now_ms)
stamp Deployment online-inference 2 0 | "$K" create -f - > /dev/null || exit 1
tn_pods ai critical-train 0 1 gpu-critical nvidia.com/gpu=4 app=critical-train | "$K" create -f - > /dev/null
want=Running; [ "$E2E_KWOK" = 1 ] || want=bound
check_critical() {
    local n=0 p
    for p in online-inference-0 online-inference-1 critical-train-0; do
        if [ "$want" = Running ]; then
            [ "$("$K" get pod "$p" -n ai -o jsonpath='{.status.phase}')" = Running ] && n=$((n + 1))
        else
            [ -n "$("$K" get pod "$p" -n ai -o jsonpath='{.spec.nodeName}')" ] && n=$((n + 1))
        fi
    done
    [ $n = 3 ]
}
if tn_wait 10 check_critical; then
    echo "critical pods $want after $(( $(tn_now_ms) - t0 )) ms"
else
    tn_fail "critical pods not $want within 10 s"
    "$K" get pods -n ai -o wide
fi
# exactly the youngest victims, nothing else lost
sleep 2
left=$("$K" get pods -n ai -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
for p in batch-12 batch-13 batch-14 batch-15; do
    echo "$left" | grep -qx "$p" || gone="${gone:-} $p"
done
ngone=$(echo ${gone:-} | wc -w)
[ "$ngone" = 2 ] || tn_fail "want 2 of the youngest MIG pods (batch-12..15) evicted, got: ${gone:-none}"
for i in $(seq 0 11); do
    echo "$left" | grep -qx "batch-$i" || tn_fail "batch-$i (older, more GPU-hours) was evicted"
done
tgone=""
for i in 0 1 2 3; do echo "$left" | grep -qx "offline-training-$i" || tgone="$tgone $i"; done
case "$tgone" in " 2"|" 3") ;; *) tn_fail "want one of the younger training pods (2, 3) evicted, got:$tgone" ;; esac
echo "evicted: ${gone:-} offline-training-${tgone# }"
"$K" get events -n ai -o json > "$E2E_DIR/events.json"
python3 - "$E2E_DIR/events.json" <<'P' || TN_OK=1
import json, sys
ev = json.load(open(sys.argv[1]))["items"]
pre = [e for e in ev if e.get("reason") == "Preempted"]
ing = [e for e in ev if e.get("reason") == "Preempting"]
print("Preempted events: %d; Preempting: %d" % (len(pre), len(ing)))
for e in ing:
    print("  " + e.get("note", e.get("message", "")))
ok = len(pre) == 3 and len(ing) == 3 and all("GPU-hours lost" in (e.get("note") or e.get("message") or "") for e in ing)
if not ok:
    print("FAIL: want 3 Preempted and 3 Preempting events naming the GPU-hours lost")
sys.exit(0 if ok else 1)
P
tn_disrupted $gone "offline-training-${tgone# }" || TN_OK=1
curl -s "http://127.0.0.1:$TN_PORT/metrics" | grep -E "^gpusched_preempt" | sed 's/^/  /'
v=$(curl -s "http://127.0.0.1:$TN_PORT/metrics" | awk '/^gpusched_preemption_victims_total/ {print $2}')
[ "$v" = 3 ] || tn_fail "victims metric $v, want 3"
tn_done
