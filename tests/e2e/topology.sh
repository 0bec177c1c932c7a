#!/usr/bin/env bash
# Helpers for the topology tests (test_topology.sh, test_topology_steering.sh), sourced after
# tenancy.sh with K set and tn_start run: gangs of gpusched's PodGroup CRD in namespace ml
# whose pods carry Kueue's podset annotations, where a gang's pods went, and why one waits.

# gang NAME N GPUS MODE LEVEL PRODUCT|-: a PodGroup of N and its N pods, each asking MODE
# (required|preferred; "required,preferred" gives member i the i-th) LEVEL, with the
# flavor's nodeSelector (- none)
gang() {
    "$K" apply -f - > /dev/null <<G || exit 1
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: $1, namespace: ml}
spec: {minMember: $2}
G
    python3 - "$@" <<'P' | "$K" create -f - > /dev/null || exit 1
import json, sys
name, n, gpus, mode, level, product = sys.argv[1:7]
items = []
for i in range(int(n)):
    m = mode.split(",")[i] if "," in mode else mode
    spec = {"schedulerName": "gpusched",
            "containers": [{"name": "c", "image": "registry.invalid/none:1",
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi",
                                                     "nvidia.com/gpu": gpus}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    if product != "-":
        spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "%s-%d" % (name, i), "namespace": "ml",
                               "labels": {"scheduling.x-k8s.io/pod-group": name, "gang": name},
                               "annotations": {"kueue.x-k8s.io/podset-%s-topology" % m: level}},
                  "spec": spec})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}
gang_nodes() { "$K" get pods -n ml -l gang="$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep .; }
bound() { [ "$(gang_nodes "$1" | wc -l)" = "$2" ]; }
values() { # GANG LABEL: the distinct values of LABEL on the gang's nodes
    local n
    for n in $(gang_nodes "$1"); do
        "$K" get node "$n" -o jsonpath="{.metadata.labels.${2//./\\.}}"; echo
    done | sort -u
}
pending_says() { # POD TEXT: /debug/pending's verdict on ml/POD contains TEXT
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
want, text = sys.argv[1], sys.argv[2]
rep = json.load(sys.stdin)
rows = rep if isinstance(rep, list) else rep.get("pods", rep.get("pending", []))
for r in rows:
    if r.get("pod") == want and text in (r.get("reason", "") + ": " + r.get("message", "")):
        sys.exit(0)
sys.exit(1)' "$1" "$2"
}
event_says() { # POD TEXT: the pod's FailedScheduling Event contains TEXT
    "$K" get events -n ml --field-selector involvedObject.name="$1",reason=FailedScheduling \
        -o jsonpath='{range .items[*]}{.message}{.note}{"\n"}{end}' | grep -qF -- "$2"
}
