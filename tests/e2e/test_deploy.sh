#!/usr/bin/env bash
# The shipped deploy/ on a real kube-apiserver, as a GPU Operator cluster would take it: every
# manifest applies (the CRDs, RBAC, the scheduler, the extender's Deployment and Service, the
# agent and the article's ConfigMaps); the agent DaemonSet enables its device plugin, selects
# nodes by a label the agent never sets itself (a node labelled only by NFD is selected), and
# mounts only ConfigMaps that exist in its own namespace, none of them optional; the
# extender's Service selects the extender's pods on the port the KubeSchedulerConfiguration
# names. Then the agent refuses a config file it is told to use and cannot read.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
D="$E2E_SRC/../../deploy"
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
jp() { "$K" get "$@" 2>/dev/null; }

check "CRDs apply" '"$K" apply -f "$D/crds" >/dev/null'
"$K" wait --for condition=established --timeout=60s -f "$D/crds" >/dev/null 2>&1
for f in rbac.yaml scheduler.yaml extender.yaml agent.yaml; do
    check "deploy/$f applies" '"$K" apply -f "$D/$f" > "$E2E_DIR/apply.out" 2>&1 || { cat "$E2E_DIR/apply.out"; false; }'
done
# the article's manifests also hold its example workloads (some without an image): what the
# install takes from them is their ConfigMaps and PriorityClasses, as they are
for f in article/nvidia-mig-config.yaml article/gpu-time-slicing.yaml article/gpu-priority-class.yaml; do
    check "deploy/$f: its ConfigMaps and PriorityClasses apply" '"$K" create --dry-run=client -o json -f "$D/$f" 2>/dev/null |
        python3 -c "
import json, sys
text, dec, pos, items = sys.stdin.read(), json.JSONDecoder(), 0, []
while text[pos:].strip():
    o, pos = dec.raw_decode(text, len(text) - len(text[pos:].lstrip()))
    items += o.get(\"items\", []) if o.get(\"kind\") == \"List\" else [o]
keep = [i for i in items if i[\"kind\"] in (\"ConfigMap\", \"PriorityClass\")]
json.dump({\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": keep}, sys.stdout)
sys.exit(0 if keep else 1)" | "$K" apply -f - > "$E2E_DIR/apply.out" 2>&1 || { cat "$E2E_DIR/apply.out"; false; }'
done

ds="-n gpu-operator daemonset/gpusched-agent"
args="$(jp $ds -o jsonpath='{.spec.template.spec.containers[0].command}')"
check "the agent enables its device plugin" '[[ "$args" == *--device-plugin-dir* ]]'
sel="$(jp $ds -o jsonpath='{.spec.template.spec.nodeSelector}')"
# every label key the agent sets on its node (GFD's and its own)
own="$(grep -o '"nvidia.com/[a-z.-]*"' "$E2E_SRC/../../src/agent/agent.c" | tr -d '"' | sort -u)"
check "the agent has a node selector" '[ -n "$sel" ] && [ "$sel" != "{}" ]'
for key in $(echo "$sel" | grep -o '"[^"]*":' | tr -d '":'); do
    check "node selector key $key is not a label the agent sets" '! grep -qxF "$key" <<< "$own"'
done
# a new GPU node as NFD labels it, before any GPU label: selected
cat > "$E2E_DIR/nfd-node.json" <<'N'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-new-0","labels":{
 "kubernetes.io/hostname":"gpu-new-0","kubernetes.io/os":"linux",
 "feature.node.kubernetes.io/pci-10de.present":"true",
 "feature.node.kubernetes.io/cpu-model.vendor_id":"Intel"}}}
N
"$K" create -f "$E2E_DIR/nfd-node.json" >/dev/null
sel_q="$(echo "$sel" | tr -d '{}"' | tr ':' '=')"
check "a node labelled only by NFD is selected" \
    '[ "$(jp nodes -l "$sel_q" -o name)" = node/gpu-new-0 ]'
for cm in $(jp $ds -o jsonpath='{range .spec.template.spec.volumes[*]}{.configMap.name}{" "}{end}'); do
    check "ConfigMap $cm exists in gpu-operator" 'jp -n gpu-operator configmap "$cm" -o name | grep -q .'
done
check "no ConfigMap volume is optional" \
    '! jp $ds -o jsonpath="{.spec.template.spec.volumes[*].configMap.optional}" | grep -q true'
for key in $(jp $ds -o jsonpath='{range .spec.template.spec.volumes[*]}{.configMap.name}={.configMap.items[0].key}{" "}{end}'); do
    [ "$key" = "=" ] && continue # not a ConfigMap volume
    check "ConfigMap ${key%%=*} has key ${key#*=}" \
        'jp -n gpu-operator configmap "${key%%=*}" -o jsonpath="{.data}" | grep -qF "\"${key#*=}\""'
done
# the extender: a Service in front of its pods, on the port the scheduler config names
url="$(grep -o 'urlPrefix: [^ ]*' "$D/extender-config.yaml" | cut -d' ' -f2)"
svc="$(jp -n kube-system service gpusched-extender -o jsonpath='{.metadata.name}.{.metadata.namespace}.svc:{.spec.ports[0].port}')"
check "the extender Service is what extender-config.yaml calls ($url)" '[ "http://$svc" = "$url" ]'
check "the extender Service selects the extender's pods" \
    '[ "$(jp -n kube-system service gpusched-extender -o jsonpath="{.spec.selector.app}")" = "$(jp -n kube-system deployment gpusched-extender -o jsonpath="{.spec.template.metadata.labels.app}")" ]'
check "the extender runs gpusched extender" \
    '[[ "$(jp -n kube-system deployment gpusched-extender -o jsonpath="{.spec.template.spec.containers[0].args}")" == *extender* ]]'

# the agent refuses a config it is told to use and cannot read (never silently off)
cat > "$E2E_DIR/fake.json" <<'F'
{"gpus": [{"model": "A100-80GB"}]}
F
"$GS" agent run --fake "$E2E_DIR/fake.json" --mig-config "$E2E_DIR/missing/config.yaml" \
    --duration 1 > "$E2E_DIR/agent.out" 2>&1
rc=$?
check "the agent exits 2 on a missing --mig-config" '[ $rc -eq 2 ]'
check "and names the flag and file" 'grep -q -- "--mig-config .*missing/config.yaml" "$E2E_DIR/agent.out"'

[ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
[ $fails -eq 0 ]
