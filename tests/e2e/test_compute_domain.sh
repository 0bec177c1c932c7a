#!/usr/bin/env bash
# NVIDIA ComputeDomains (multi-node NVLink through DRA) on the real control plane: the pods of
# one domain are kept within one NVLink clique (nvidia.com/gpu.clique).
#
# NVIDIA's DRA driver (k8s-dra-driver-gpu) does not run here; the objects it would publish are
# written by this test, shaped as its published manifests and documentation show them (no code
# or data of theirs copied): its helm chart's DeviceClasses compute-domain-default-channel.nvidia.com
# (device.driver == 'compute-domain.nvidia.com' && type == 'channel' && id == 0) and
# compute-domain-daemon.nvidia.com, gpu.nvidia.com as in tests/data/dra/nvidia; per node one
# ResourceSlice of gpu.nvidia.com (gpu-0..3, type gpu, a GB200 productName) and one of
# compute-domain.nvidia.com (channel-0: type channel, id 0; daemon-0: type daemon, id 0), as
# its kubelet plugins publish them on an IMEX-capable node; a ComputeDomain
# (resource.nvidia.com/v1beta1, spec.numNodes, spec.channel.resourceClaimTemplate.name; the CRD
# here is a minimal one of ours) and the ResourceClaimTemplate its controller makes of it: one
# request "channel" of class compute-domain-default-channel.nvidia.com and spec.devices.config
# [{opaque: {driver: compute-domain.nvidia.com, parameters: {apiVersion:
# resource.nvidia.com/v1beta1, kind: ComputeDomainChannelConfig, domainID: <its uid>,
# allocationMode: Single}}, requests: [channel]}]. kube-controller-manager's
# resourceclaim-controller makes each pod's claims from the templates, and its garbage collector
# deletes them with their pods, as in a cluster.
#
# Nodes (GB200-like, 4 GPUs each, as GPU feature discovery labels them): clique .1 gb-a0..a2,
# clique .2 gb-b0..b4, and gb-x0 without a clique label.
#   2. control: two filler pods take gb-b0 and gb-b1 (4 GPUs each), so no clique has 4 free
#      nodes; a gang of 4 pods of 4 GPUs each WITHOUT the ComputeDomain claim binds, and spans
#      cliques (gpusched's ordinary gang placement does not keep it in one)
#   1. the same gang WITH the domain's channel claim waits in that setup (topology reason, level
#      nvidia.com/gpu.clique of ComputeDomain <uid>); once the control and the fillers are gone
#      it binds whole in clique .2, each claim allocated a channel and 4 GPUs of its pod's node
#   3. a later single pod of the domain goes to the clique's one free node, though
#      clique .1 and gb-x0 are free too; one pinned to gb-x0 (no clique label) waits, saying so
#   4. bad input: a claim whose ComputeDomainChannelConfig has an empty domainID, one whose
#      domainID is not a string: each pod waits with the claim and the field path; a plain pod
#      still binds and the scheduler stays alive
set -u
GS="$1"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/tenancy.sh"
"$K" api-resources --api-group=resource.k8s.io 2>/dev/null | grep -q resourceclaimtemplates ||
    skip "the API server does not serve resource.k8s.io/v1 resourceclaimtemplates"
show() { echo "  $*"; }
CLQ=nvidia.com/gpu.clique
UUID=5b0e7c1a-2f3d-4a8e-9c61-7d2e4f8a1b30

"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" \
    --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
    --controllers resourceclaim-controller,garbage-collector-controller --concurrent-gc-syncs 5 \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"

NODES="gb-a0:1 gb-a1:1 gb-a2:1 gb-b0:2 gb-b1:2 gb-b2:2 gb-b3:2 gb-b4:2 gb-x0:-"
python3 - "$UUID" $NODES > "$E2E_DIR/objs.json" <<'P'
import json, sys
uuid, nodes = sys.argv[1], sys.argv[2:]
items = []
def cls(name, expr):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expr}}]}}
CD = "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com']"
items += [cls("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"),
          cls("compute-domain-default-channel.nvidia.com", CD + ".type == 'channel' && " + CD + ".id == 0"),
          cls("compute-domain-daemon.nvidia.com", CD + ".type == 'daemon'")]
for k, nc in enumerate(nodes):
    n, c = nc.split(":")
    labels = {"kubernetes.io/hostname": n, "kubernetes.io/os": "linux",
              "nvidia.com/gpu.product": "NVIDIA-GB200", "nvidia.com/gpu.present": "true"}
    if c != "-":
        labels["nvidia.com/gpu.clique"] = "%s.%s" % (uuid, c)
    items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": labels}})
    gpus = [{"name": "gpu-%d" % g, "attributes": {
                "type": {"string": "gpu"}, "index": {"int": g}, "minor": {"int": g},
                "uuid": {"string": "GPU-%08d-0000-4000-8000-%012d" % (k, g)},
                "productName": {"string": "NVIDIA GB200"}, "architecture": {"string": "Blackwell"},
                "brand": {"string": "Nvidia"}}, "capacity": {"memory": {"value": "189471719424"}}}
            for g in range(4)]
    def slc(driver, devices):
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "%s-%s" % (n, driver)},
                "spec": {"driver": driver, "nodeName": n,
                         "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                         "devices": devices}}
    items.append(slc("gpu.nvidia.com", gpus))
    if c != "-":
        items.append(slc("compute-domain.nvidia.com", [
            {"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}},
            {"name": "daemon-0", "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}}}]))
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
"$K" create -f "$E2E_DIR/objs.json" > /dev/null || exit 1
for nc in $NODES; do
    "$K" patch node "${nc%%:*}" --subresource=status --type=merge -p '{"status": {
      "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
      "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                      "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                      "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}' > /dev/null || exit 1
done
# the ComputeDomain: a minimal CRD of ours in NVIDIA's group and kind
"$K" apply -f - > /dev/null <<'Y' || exit 1
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: computedomains.resource.nvidia.com}
spec:
  group: resource.nvidia.com
  names: {kind: ComputeDomain, plural: computedomains, singular: computedomain}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
Y
"$K" wait --for condition=established --timeout=60s crd/computedomains.resource.nvidia.com > /dev/null || exit 1
tn_crds || exit 1
"$K" create namespace ml > /dev/null
"$K" apply -f - > /dev/null <<'Y' || exit 1
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: train, namespace: ml}
spec:
  numNodes: 4
  channel: {resourceClaimTemplate: {name: train-channel}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu4, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, count: 4}}]
Y
# as NVIDIA's controller does: the channel's template, the domain's uid its domainID
CDUID=$("$K" get computedomain -n ml train -o jsonpath='{.metadata.uid}')
[ -n "$CDUID" ] || { echo "FAIL: no uid on the ComputeDomain"; exit 1; }
channel_claim() { # KIND NAME DOMAINID-JSON: a ResourceClaimTemplate or ResourceClaim
    local spec='{"devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}],
      "config": [{"opaque": {"driver": "compute-domain.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomainChannelConfig", "domainID": '"$3"', "allocationMode": "Single"}}, "requests": ["channel"]}]}}'
    if [ "$1" = ResourceClaimTemplate ]; then spec="{\"spec\": $spec}"; fi
    echo "{\"apiVersion\": \"resource.k8s.io/v1\", \"kind\": \"$1\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"ml\"}, \"spec\": $spec}" |
        "$K" create -f - > /dev/null
}
channel_claim ResourceClaimTemplate train-channel "\"$CDUID\"" || exit 1
show "9 GB200-like nodes (cliques .1: 3, .2: 5, one without), ComputeDomain ml/train uid $CDUID"
tn_start || tn_done

# pods NAME N GANG(-) CHANNEL(template|claim:NAME|-) NODE(-): N pods of a 4-GPU claim each
pods() {
    if [ "$3" != - ]; then
        "$K" apply -f - > /dev/null <<G || exit 1
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: $3, namespace: ml}
spec: {minMember: $2}
G
    fi
    python3 - "$@" <<'P' | "$K" create -f - > /dev/null || exit 1
import json, sys
name, n, gang, channel, node = sys.argv[1:6]
items = []
for i in range(int(n)):
    claims = [{"name": "gpus", "resourceClaimTemplateName": "gpu4"}]
    if channel == "template":
        claims.append({"name": "channel", "resourceClaimTemplateName": "train-channel"})
    elif channel.startswith("claim:"):
        claims.append({"name": "channel", "resourceClaimName": channel[6:]})
    labels = {"app": name}
    if gang != "-":
        labels["scheduling.x-k8s.io/pod-group"] = gang
    spec = {"schedulerName": "gpusched", "resourceClaims": claims,
            "containers": [{"name": "c", "image": "registry.invalid/cuda:1",
                            "resources": {"requests": {"cpu": "1"},
                                          "claims": [{"name": c["name"]} for c in claims]}}]}
    if node != "-":
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "%s-%d" % (name, i) if int(n) > 1 else name,
                               "namespace": "ml", "labels": labels}, "spec": spec})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
P
}
app_nodes() { "$K" get pods -n ml -l app="$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep .; }
bound() { [ "$(app_nodes "$1" | wc -l)" = "$2" ]; }
cliques() { # APP: the clique label of each of its nodes ("-" for none), sorted, distinct
    local n
    for n in $(app_nodes "$1"); do
        v=$("$K" get node "$n" -o jsonpath="{.metadata.labels.nvidia\.com/gpu\.clique}"); echo "${v:--}"
    done | sort -u
}
pending_says() { # POD TEXT: /debug/pending's verdict on ml/POD contains TEXT
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
want, text = sys.argv[1], sys.argv[2]
rep = json.load(sys.stdin)
rows = rep if isinstance(rep, list) else rep.get("pods", rep.get("pending", []))
sys.exit(0 if any(r.get("pod") == want and text in (r.get("reason", "") + ": " + r.get("message", ""))
                  for r in rows) else 1)' "$1" "$2"
}
event_says() { # POD TEXT: the pod's FailedScheduling Event contains TEXT
    "$K" get events -n ml --field-selector involvedObject.name="$1",reason=FailedScheduling \
        -o jsonpath='{range .items[*]}{.message}{.note}{"\n"}{end}' | grep -qF -- "$2"
}
say() { curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" | python3 -c '
import json, sys
rep = json.load(sys.stdin)
rows = rep if isinstance(rep, list) else rep.get("pods", rep.get("pending", []))
for r in rows:
    if r.get("pod") == sys.argv[1]: print(r.get("reason", "") + ": " + r.get("message", ""))' "$1"; }
# check_claims APP: every pod's claims allocated on its own node: 4 GPUs of gpu.nvidia.com, and
# (CHANNEL=1) channel-0 of compute-domain.nvidia.com; each reserved for its pod
check_claims() {
    "$K" get pods,resourceclaims -n ml -o json | python3 -c '
import json, sys
app, chan = sys.argv[1], sys.argv[2] == "1"
objs = json.load(sys.stdin)["items"]
claims = {c["metadata"]["name"]: c for c in objs if c["kind"] == "ResourceClaim"}
bad = []
for p in objs:
    if p["kind"] != "Pod" or p["metadata"].get("labels", {}).get("app") != app:
        continue
    node, name = p["spec"].get("nodeName"), p["metadata"]["name"]
    st = {s["name"]: s.get("resourceClaimName") for s in p.get("status", {}).get("resourceClaimStatuses", [])}
    for rc in p["spec"]["resourceClaims"]:
        cn = rc.get("resourceClaimName") or st.get(rc["name"])
        c = claims.get(cn or "")
        a = (c or {}).get("status", {}).get("allocation")
        if not a:
            bad.append("%s: claim %s not allocated" % (name, cn)); continue
        res = a["devices"]["results"]
        if any(r["pool"] != node for r in res):
            bad.append("%s on %s: claim %s has devices of %s" % (name, node, cn, [r["pool"] for r in res]))
        drivers = sorted(r["driver"] for r in res)
        want = ["compute-domain.nvidia.com"] if rc["name"] == "channel" else ["gpu.nvidia.com"] * 4
        if drivers != want:
            bad.append("%s: claim %s has %s" % (name, cn, drivers))
        if rc["name"] == "channel" and [r["device"] for r in res] != ["channel-0"]:
            bad.append("%s: claim %s is not channel-0" % (name, cn))
        if not any(r.get("uid") == p["metadata"]["uid"] for r in c["status"].get("reservedFor", [])):
            bad.append("%s: claim %s not reserved for it" % (name, cn))
    if chan and "channel" not in [rc["name"] for rc in p["spec"]["resourceClaims"]]:
        bad.append("%s: no channel claim" % name)
print("\n".join(bad)); sys.exit(1 if bad else 0)' "$1" "$2"
}

# 2. control: no clique has 4 free nodes; a gang without the domain's claim spans cliques
pods fill-0 1 - - gb-b0
pods fill-1 1 - - gb-b1
tn_wait 30 sh -c "\"$K\" get pods -n ml fill-0 fill-1 -o jsonpath='{.items[*].spec.nodeName}' | grep -q 'gb-b0 gb-b1'" ||
    tn_fail "the fillers did not bind to gb-b0 and gb-b1"
pods plain 4 plain - -
tn_wait 40 bound plain 4 || tn_fail "the gang without the domain's claim was not bound ($(app_nodes plain | wc -l) of 4)"
check_claims plain 0 || tn_fail "the control gang's claims"
[ "$(cliques plain | wc -l)" -ge 2 ] ||
    tn_fail "the control gang did not span cliques: $(app_nodes plain | tr '\n' ' ')"
show "2. control (no ComputeDomain claim): bound on $(app_nodes plain | tr '\n' ' ')- cliques: $(cliques plain | sed 's/.*\.//' | tr '\n' ' ')"

# 1. the domain's gang: waits while no clique holds 4 pods, then whole inside clique .2
pods train 4 train template -
tn_wait 40 event_says train-0 "of ComputeDomain $CDUID: no domain holds it" ||
    tn_fail "the domain's gang does not wait with the clique reason: $(say train-0)"
[ "$(app_nodes train | wc -l)" = 0 ] || tn_fail "the domain's gang got pods bound across cliques"
show "1. waiting: $(say train-0 | cut -c1-230)"
"$K" delete pods -n ml -l 'app in (plain, fill-0, fill-1)' --grace-period 0 --force > /dev/null 2>&1
tn_wait 60 bound train 4 || tn_fail "the domain's gang was not bound once a clique had room ($(say train-0))"
[ "$(cliques train)" = "$UUID.2" ] || tn_fail "the domain's gang is not within clique .2: $(cliques train | tr '\n' ' ')"
tn_wait 20 check_claims train 1 > /dev/null || tn_fail "the domain's claims: $(check_claims train 1)"
grep -q "gang ml/train: 4 pods placed together" "$E2E_DIR/scheduler.log" ||
    tn_fail "the domain's gang was not placed in one cycle"
show "1. bound: $(app_nodes train | tr '\n' ' ')- all in clique $(cliques train); each pod: channel-0 and 4 GPUs of its node"

# 3. a later pod of the domain: to the clique's one free node; none to a node without a clique
FREE=$(for n in gb-b0 gb-b1 gb-b2 gb-b3 gb-b4; do app_nodes train | grep -qx $n || echo $n; done)
pods late 1 - template -
tn_wait 40 bound late 1 || tn_fail "the later pod of the domain was not bound ($(say late))"
[ "$(app_nodes late)" = "$FREE" ] ||
    tn_fail "the later pod of the domain is on $(app_nodes late), not $FREE (clique .2's free node)"
tn_wait 20 check_claims late 1 > /dev/null || tn_fail "the later pod's claims: $(check_claims late 1)"
pods nolabel 1 - template gb-x0
tn_wait 30 pending_says nolabel "1 node(s) have no label nvidia.com/gpu.clique" ||
    tn_fail "a pod of the domain held to a node without a clique label: no clear reason ($(say nolabel))"
show "3. later pod on $(app_nodes late); held to gb-x0: $(say nolabel | grep -o 'computedomain:.*' | cut -c1-200)"

# 4. bad input
channel_claim ResourceClaim bad-empty '""' || tn_fail "creating the claim with an empty domainID"
channel_claim ResourceClaim bad-type '42' || tn_fail "creating the claim with a number for domainID"
pods empty 1 - claim:bad-empty -
pods typed 1 - claim:bad-type -
tn_wait 30 event_says empty "resourceclaim ml/bad-empty: spec.devices.config[0].opaque.parameters.domainID: empty" ||
    tn_fail "an empty domainID: no reason naming the claim and the field ($(say empty))"
tn_wait 30 event_says typed "resourceclaim ml/bad-type: spec.devices.config[0].opaque.parameters.domainID: not a string" ||
    tn_fail "a domainID that is not a string: no reason naming the claim and the field ($(say typed))"
pods other 1 - - -
tn_wait 30 bound other 1 || tn_fail "a plain pod beside the bad ones did not bind"
for a in empty typed nolabel; do
    [ "$(app_nodes $a | wc -l)" = 0 ] || tn_fail "pod $a was bound"
done
curl -sf "http://127.0.0.1:$TN_PORT/healthz" > /dev/null || tn_fail "the scheduler is not healthy"
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || tn_fail "the scheduler died"
show "4. $(say empty | cut -c1-200)"
show "4. $(say typed | cut -c1-200)"
tn_done
