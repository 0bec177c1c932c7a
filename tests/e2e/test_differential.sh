#!/usr/bin/env bash
# Differential test: kube-scheduler's own filter plugins judge every bind gpusched makes, in
# the order gpusched decided them.
# A generated cluster (fixed seed) of 58 nodes copied from tests/data/nodes: whole-GPU A100,
# H100 and L40S nodes and all-1g.10gb MIG nodes (layout from the agent's inventory
# annotation) in three zones, CPU-only nodes in four, a few taints (a dedicated pool,
# NoExecute maintenance, PreferNoSchedule), a cordoned GPU node and a cordoned CPU node,
# InfiniBand and hugepages on some nodes, and six tainted nodes of their own (below). 425
# pods, from Deployment-like and StatefulSet-like templates, a DaemonSet-like node agent and 4
# pods created with spec.nodeName before the scheduler starts, mix required node affinity (In,
# NotIn, Exists, DoesNotExist, Gt, matchFields, ORed terms) and preferred node affinity,
# required pod affinity and anti-affinity (hostname and zone, across namespaces, against
# existing pods) and preferred pod affinity and anti-affinity, zone spreading with
# DoNotSchedule (minDomains, nodeAffinityPolicy Ignore, nodeTaintsPolicy Honor,
# matchLabelKeys) and zone and host spreading with ScheduleAnyway, host ports, tolerations
# (the cordon's too), nvidia.com/gpu 1/2/4/8, nvidia.com/mig-1g.10gb, CPU, memory to the byte,
# ephemeral-storage, hugepages, rdma/ib, native sidecars, PersistentVolumeClaims bound to
# PersistentVolumes (made before the pods as the PV controller leaves them bound): node-local
# volumes pinned by hostname (one on the cordoned node) or by matchFields (which
# kube-scheduler ignores for a volume), zonal EBS CSI volumes, an NFS dataset reachable from
# two zones' GPU nodes or one named host (ORed terms; the zone b trainers need both), an NFS
# home without node affinity. Demand exceeds capacity, so some pods stay pending. And parts
# whose outcome the fixture fixes whatever the order, each of which a volume plugin or
# DynamicResources can refuse:
#   shard      5 pods, WaitForFirstConsumer claims (80Gi) with no volume yet; four 100Gi local
#              volumes and one of 50Gi on two nodes of their own: gpusched picks a volume per
#              claim, kube-controller-manager's PV controller binds it: 4 bound, 1 pending
#   ebs-app    3 pods, EBS volumes of zone b, on two nodes whose CSINode allows one volume of
#              the driver: 2 bound (one per node), 1 pending (NodeVolumeLimits)
#   zonal      3 pods, volumes labelled with their zone and region, no node affinity: only
#              VolumeZone keeps each in its zone: 3 bound
#   ledger     2 pods of one ReadWriteOncePod claim: 1 bound, 1 pending (VolumeRestrictions)
#   dra-infer  6 pods, a ResourceClaim each for an A100 of a DRA driver whose slices (created
#              here) give two nodes of their own 6 A100 and 2 L4: 6 bound
#   dra-l4     3 pods, a claim each for an L4: 2 bound, 1 pending (DynamicResources)
#   gated      3 pods with a scheduling gate never lifted: never tried, never bound
# The pods come in four waves, each created as soon as gpusched has decided a bind of the one
# before, while it binds that one (asserted from its log).
#
# Once the number of bound pods has been stable for 10 s, tests/e2e/tools/kschedcheck (built
# from k8s.io/kubernetes v1.37.2 by build-control-plane.sh) replays gpusched's binds in the
# order its scheduling cycle decided them (its log at debug: "assume NS/POD on NODE"): bind i
# must pass PreFilter and Filter of NodeName, NodeUnschedulable, TaintToleration,
# NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits,
# VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity and DynamicResources against
# the 4 pinned pods and binds 1..i-1, with the claims it and later binds use as they were
# before the scheduler started (kschedcheck's initial lists) and the others as bound or
# allocated; the volumes and devices each pod got must pass VolumeBinding, VolumeZone,
# NodeVolumeLimits and DynamicResources on its node; and no node may pass every filter for a
# pod gpusched left pending (the gated ones left out: kube-scheduler does not try them). The
# preferred terms and ScheduleAnyway constraints only score, so the filters judge them by what
# they must not do: hold a pod off a node. tests/e2e/test_differential_selftest.sh shows that
# each of these plugins refuses a planted violation of its rule.
#
# Asserted: 0 disagreements; every bound pod of gpusched judged as a bind but the 4 pinned, no
# bind decided and left unbound; every pending pod checked but the 3 gated; the bound/pending
# counts of the parts above; their claims' volumes (distinct 100Gi volumes on the pods'
# nodes) and devices (one of the model asked, on the pod's node, reserved for it, none in two
# claims); VolumeZone refused exactly the other zones' nodes for the zonal pods, and
# VolumeBinding, NodeVolumeLimits, DynamicResources (binds) and VolumeRestrictions (the
# ledger's pending pod, on every node) refused nodes; the same binds replayed in the reverse
# order break rules (the replay sees the order); the mix (bound pods of every kind, bound
# and pending pods with claims); upstream's VolumeBinding's verdict on a hostname-pinned, a
# matchFields-pinned and an unpinned volume.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$E2E_SRC/kschedcheck.sh"
CHECK="$KS_CHECK"
[ -x "$CHECK" ] || { echo "FAIL: $CHECK was not built"; echo "0 passed, 1 failed"; exit 1; }
DATA="$E2E_SRC/../data/nodes"
SEED=20260417
echo "seed $SEED"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
    [ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
    [ $fails -eq 0 ]
    exit
}

python3 - "$DATA" "$E2E_DIR/gen" "$SEED" <<'PY' || exit 1
import copy, json, os, random, sys
src, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
os.makedirs(os.path.join(out, "nodes"))
def load(f): return json.load(open(os.path.join(src, f)))
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
nodes = []
def named(base, name, zone):
    n = copy.deepcopy(base)
    n["metadata"]["name"] = name
    L = n["metadata"]["labels"]
    L[HOST] = name
    L[ZONE] = L["failure-domain.beta.kubernetes.io/zone"] = zone
    n["spec"]["providerID"] = "aws:///%s/i-0%s" % (zone, "%08x" % rng.getrandbits(32))
    nodes.append(n)
    return n
def gpu_model(n, product, machine, memory, family, count):
    L = n["metadata"]["labels"]
    L["nvidia.com/gpu.product"] = product
    L["nvidia.com/gpu.machine"] = L["node.kubernetes.io/instance-type"] = \
        L["beta.kubernetes.io/instance-type"] = machine
    L["nvidia.com/gpu.memory"] = str(memory)
    L["nvidia.com/gpu.family"] = family
    L["nvidia.com/gpu.count"] = str(count)
    for k in ("allocatable", "capacity"):
        n["status"][k]["nvidia.com/gpu"] = str(count)

# whole A100 nodes: 8 per zone; InfiniBand in zones a and b; three in a dedicated training
# pool; one cordoned
whole = load("a100-whole.json")
for z, zone in enumerate(ZONES):
    for i in range(8):
        n = named(whole, "gpu-a100-%s%d" % (zone[-1], i), zone)
        if z < 2:
            for k in ("allocatable", "capacity"):
                n["status"][k]["rdma/ib"] = "16"
        if i == 7:
            n["spec"]["taints"].append({"key": "dedicated", "value": "training", "effect": "NoSchedule"})
            n["metadata"]["labels"]["dedicated"] = "training"
n = [x for x in nodes if x["metadata"]["name"] == "gpu-a100-b3"][0]
n["spec"]["unschedulable"] = True
# H100: 2 per zone
for zone in ZONES:
    for i in range(2):
        n = named(whole, "gpu-h100-%s%d" % (zone[-1], i), zone)
        gpu_model(n, "NVIDIA-H100-80GB-HBM3", "p5.48xlarge", 81559, "hopper", 8)
        n["metadata"]["labels"]["nvidia.com/gpu.compute.major"] = "9"
# L40S: 4 GPUs, no MIG
for zone in ["eu-west-1a", "eu-west-1b", "eu-west-1c", "eu-west-1c"]:
    n = named(whole, "gpu-l40s-%s%d" % (zone[-1], sum(1 for x in nodes if "l40s-" + zone[-1] in x["metadata"]["name"])), zone)
    gpu_model(n, "NVIDIA-L40S", "g6e.12xlarge", 46068, "ada-lovelace", 4)
    L = n["metadata"]["labels"]
    L["nvidia.com/mig.capable"] = "false"
    L.pop("nvidia.com/mig.config", None)
    for k in ("allocatable", "capacity"):
        n["status"][k].update({"cpu": "48", "memory": "393216Mi"})
    n["status"]["allocatable"]["cpu"] = "47810m"
# all-1g.10gb MIG nodes: the layout from the agent's inventory (8 GPUs x 7 instances)
mig = load("a100-all-1g.json")
for zone in ["eu-west-1a", "eu-west-1b", "eu-west-1c", "eu-west-1c"]:
    k = sum(1 for x in nodes if "mig-" + zone[-1] in x["metadata"]["name"])
    n = named(mig, "gpu-mig-%s%d" % (zone[-1], k), zone)
    n["metadata"]["annotations"]["gpusched.io/inventory"] = json.dumps({"v": 1, "gpus": [
        {"i": g, "uuid": "GPU-%08x-0000-4000-8000-%012x" % (rng.getrandbits(32), g),
         "model": "A100-80GB", "mem": 81920, "mig": ["1g.10gb@%d" % s for s in range(7)]}
        for g in range(8)]}, separators=(",", ":"))
# CPU-only nodes: 4 in each GPU zone (pool general), 2 in an edge zone d (pool edge); no GPU
# labels or taint; small pod limits on two
cpu = copy.deepcopy(whole)
cpu["spec"]["taints"] = []
cpu["metadata"]["labels"] = {k: v for k, v in cpu["metadata"]["labels"].items()
                             if not k.startswith(("nvidia.com/", "feature.node.kubernetes.io/pci-10de"))}
for k in ("allocatable", "capacity"):
    cpu["status"][k] = {"cpu": "16", "ephemeral-storage": "95687820Ki", "hugepages-1Gi": "0",
                        "hugepages-2Mi": "0", "memory": "65014560Ki", "pods": "20"}
cpu["status"]["allocatable"].update({"cpu": "15890m", "memory": "63874720Ki"})
for zone in ZONES + ["eu-west-1d"]:
    for i in range(4 if zone != "eu-west-1d" else 2):
        n = named(cpu, "cpu-%s%d" % (zone[-1], i), zone)
        L = n["metadata"]["labels"]
        L["node.kubernetes.io/instance-type"] = L["beta.kubernetes.io/instance-type"] = "m6i.4xlarge"
        L["nodepool"] = "edge" if zone == "eu-west-1d" else "general"
# nodes of their own for the parts whose outcome the fixture fixes, tainted so that only
# their pods (and the node agent) go there: two with local NVMe volumes (zone a), two whose
# CSINode allows one EBS volume (zone b), two with DRA devices (zones a and b)
GROUP = "e2e.gpusched.io/group"
for nm, zone, group in (("st-local-0", "eu-west-1a", "local"), ("st-local-1", "eu-west-1a", "local"),
                        ("st-ebs-0", "eu-west-1b", "ebs"), ("st-ebs-1", "eu-west-1b", "ebs"),
                        ("dra-a", "eu-west-1a", "dra"), ("dra-b", "eu-west-1b", "dra")):
    n = named(cpu, nm, zone)
    L = n["metadata"]["labels"]
    L["node.kubernetes.io/instance-type"] = L["beta.kubernetes.io/instance-type"] = "m6i.4xlarge"
    L[GROUP] = group
    n["spec"]["taints"] = [{"key": GROUP, "value": group, "effect": "NoSchedule"}]
by = {x["metadata"]["name"]: x for x in nodes}
by["cpu-a3"]["spec"]["taints"] = [{"key": "maintenance", "value": "true", "effect": "NoExecute"}]
by["cpu-b3"]["spec"]["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
by["cpu-c3"]["spec"]["unschedulable"] = True
for nm in ("cpu-a1", "cpu-b1"):
    for k in ("allocatable", "capacity"):
        by[nm]["status"][k]["hugepages-2Mi"] = "1Gi"
for nm in ("cpu-c0", "cpu-d0"):
    by[nm]["status"]["allocatable"]["pods"] = by[nm]["status"]["capacity"]["pods"] = "8"
for n in nodes:
    status = n.pop("status")
    name = n["metadata"]["name"]
    json.dump(n, open(os.path.join(out, "nodes", name + ".json"), "w"))
    json.dump({"status": status}, open(os.path.join(out, "nodes", name + ".status"), "w"))

# pods, as a Deployment's ReplicaSet writes them
GPU_TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
DEFAULT_TOL = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300},
               {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}]
pods, pinned = [], []
def res(cpu=None, mem=None, eph=None, ext=None):
    r = {}
    if cpu: r["cpu"] = cpu
    if mem: r["memory"] = mem
    if eph: r["ephemeral-storage"] = eph
    for k, v in (ext or {}).items():
        r[k] = str(v)
    limits = {k: v for k, v in r.items() if k != "cpu"}
    return {"requests": r, "limits": limits}
def deploy(app, ns, replicas, resources, tolerations=(), affinity=None, spread=None, ports=None,
           node_selector=None, sidecar=None, into=None, node_name=None, scheduler="gpusched",
           claims=None, sts=False, dra=None, gates=None):
    # claims: the claim names pod i mounts (a function of i, or a list for every pod); sts: named
    # and labelled as a StatefulSet's pods (app-0, app-1, ...); dra: the ResourceClaim of pod i
    # (a function of i); gates: its scheduling gates
    h = "%010x" % rng.getrandbits(40)
    h = "".join("bcdfghjklmnpqrstvwxz2456789"[int(c, 16)] for c in h)
    for i in range(replicas):
        suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        c = {"name": app, "image": "registry.example.com/%s:1.4.2" % app,
             "imagePullPolicy": "IfNotPresent", "resources": resources,
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
        if ports:
            c["ports"] = ports
        mine = (claims(i) if callable(claims) else claims) or []
        if mine:
            c["volumeMounts"] = [{"name": "vol-%d" % k, "mountPath": "/data/%d" % k}
                                 for k in range(len(mine))]
        spec = {"schedulerName": scheduler, "containers": [c], "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default", "enableServiceLinks": True,
                "tolerations": list(tolerations) + DEFAULT_TOL}
        if sidecar:
            spec["initContainers"] = [dict(sidecar, restartPolicy="Always",
                                           terminationMessagePath="/dev/termination-log",
                                           terminationMessagePolicy="File", imagePullPolicy="IfNotPresent")]
        if affinity: spec["affinity"] = affinity(i) if callable(affinity) else affinity
        if spread: spec["topologySpreadConstraints"] = spread
        if node_selector: spec["nodeSelector"] = node_selector
        if node_name: spec["nodeName"] = node_name(i)
        if mine:
            spec["volumes"] = [{"name": "vol-%d" % k, "persistentVolumeClaim": {"claimName": cl}}
                               for k, cl in enumerate(mine)]
        if dra:
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": dra(i)}]
            c["resources"] = dict(c["resources"], claims=[{"name": "gpu"}])
        if gates:
            spec["schedulingGates"] = [{"name": g} for g in gates]
        name = "%s-%d" % (app, i) if sts else "%s-%s-%s" % (app, h, suffix)
        labels = {"app": app, "app.kubernetes.io/name": app}
        if sts:
            labels.update({"controller-revision-hash": "%s-%s" % (app, h),
                           "statefulset.kubernetes.io/pod-name": name,
                           "apps.kubernetes.io/pod-index": str(i)})
            spec.update({"hostname": name, "subdomain": app})
        else:
            labels["pod-template-hash"] = h
        (pods if into is None else into).append({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels,
                         "ownerReferences": [{"apiVersion": "apps/v1",
                                              "kind": "StatefulSet" if sts else "ReplicaSet",
                                              "name": app if sts else "%s-%s" % (app, h),
                                              "uid": "%08x-0000-4000-8000-%012x" % (rng.getrandbits(32), rng.getrandbits(48)),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec})
def anti(app, key=HOST, ns_sel=None):
    t = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    if ns_sel is not None: t["namespaceSelector"] = ns_sel
    return [t]
def spread(app, skew, **kw):
    c = {"maxSkew": skew, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": app}}}
    c.update(kw)
    return [c]
def exprs(t):
    return [{"key": k, "operator": op, **({"values": v} if v is not None else {})} for k, op, v in t]
def node_aff(*terms, preferred=()):
    a = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": exprs(t)} for t in terms]}} if terms else {}
    if preferred:
        a["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": exprs(t)}} for w, t in preferred]
    return a
def preferred(weight, app, key=HOST, ns_sel=None):
    return [{"weight": weight, "podAffinityTerm": anti(app, key, ns_sel)[0]}]
def anyway(app, skew, key=ZONE, **kw):
    return spread(app, skew, topologyKey=key, whenUnsatisfiable="ScheduleAnyway", **kw)
A100, H100, L40S = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S"
P = "nvidia.com/gpu.product"

# spec.nodeName given by their creator, before the scheduler starts: it must count them
deploy("pinned-etl", "web", 3, res("12", "16Gi"), into=pinned,
       node_name=lambda i: ["cpu-a0", "cpu-b0", "cpu-c1"][i])
deploy("pinned-proxy", "web", 1, res("100m", "128Mi"), into=pinned, node_name=lambda i: "cpu-b2",
       ports=[{"containerPort": 9400, "hostPort": 9400, "protocol": "TCP"}])
# a DaemonSet-like node agent: pinned by matchFields, tolerating everything (cordon too)
names = sorted(x["metadata"]["name"] for x in nodes)
deploy("node-agent", "monitoring", len(names), res("50m", "64Mi"),
       tolerations=[{"operator": "Exists"}],
       affinity=lambda i: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
           "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                   "values": [names[i]]}]}]}}})
# inference replicas on separate hosts, A100 or H100
deploy("llm-serve", "ml", 12, res("8", "64Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL],
       affinity={"nodeAffinity": node_aff([(P, "In", [A100, H100])],
                                          preferred=[(100, [(P, "In", [H100])])]),
                 "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti("llm-serve")}})
# a cache next to a replica, caches preferably apart
deploy("llm-cache", "ml", 8, res("2", "8Gi"), [GPU_TOL],
       affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti("llm-serve")},
                 "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                                     preferred(50, "llm-cache")}})
# 8-GPU training on A100 with InfiniBand, in the dedicated pool too
deploy("trainer-8", "ml", 20, res("64", "512Gi", ext={"nvidia.com/gpu": 8, "rdma/ib": 1}),
       [GPU_TOL, {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"}],
       affinity={"nodeAffinity": node_aff([(P, "In", [A100])])})
# 4-GPU jobs spread over zones, counting only nodes they tolerate
deploy("trainer-4", "ml", 16, res("16", "128Gi", ext={"nvidia.com/gpu": 4}), [GPU_TOL],
       affinity={"nodeAffinity": node_aff([("nvidia.com/gpu.count", "Gt", ["3"])])},
       spread=spread("trainer-4", 1, nodeTaintsPolicy="Honor"))
# more domains required than there are: at most one per zone
deploy("batch-infer", "ml", 10, res("4", "32Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL],
       affinity={"nodeAffinity": node_aff([("nvidia.com/gpu.present", "Exists", None)])},
       spread=spread("batch-infer", 1, minDomains=4))
# MIG slices spread over zones
deploy("embed", "ml", 40, res("2", "16Gi", ext={"nvidia.com/mig-1g.10gb": 1}), [GPU_TOL],
       node_selector={"nvidia.com/mig.config": "all-1g.10gb"},
       spread=spread("embed", 1, matchLabelKeys=["pod-template-hash"]))
# notebooks anywhere but A100: H100, or L40S in zones a and b; zone b and L40S preferred
deploy("notebook", "ml", 24, res("4", "32Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL],
       affinity={"nodeAffinity": node_aff([(P, "NotIn", [A100]), (P, "In", [H100])],
                                          [(P, "In", [L40S]), (ZONE, "In", ["eu-west-1a", "eu-west-1b"])],
                                          preferred=[(80, [(ZONE, "In", ["eu-west-1b"])]),
                                                     (20, [(P, "In", [L40S])])])})
# one renderer per L40S node (host port)
deploy("render", "ml", 10, res("4", "16Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL],
       node_selector={P: L40S},
       ports=[{"containerPort": 8443, "hostPort": 8443, "protocol": "TCP"}])
# 2-GPU fine-tuning on GPUs with more than 80000 MiB
deploy("finetune-2", "ml", 24, res("16", "128Gi", ext={"nvidia.com/gpu": 2}), [GPU_TOL],
       affinity={"nodeAffinity": node_aff([("nvidia.com/gpu.memory", "Gt", ["80000"]),
                                           ("dedicated", "DoesNotExist", None)])})
# a metrics exporter per CPU node (host port), cordon tolerated like a DaemonSet's pods
deploy("exporter", "monitoring", 16, res("100m", "128Mi"),
       [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
       node_selector={"nodepool": "general"},
       ports=[{"containerPort": 9400, "hostPort": 9400, "protocol": "TCP"}])
# web replicas spread over the general and edge pools (zones strictly, hosts if they can),
# preferably not two on a host
deploy("web-frontend", "web", 40, res("2", "4Gi", "2Gi"),
       affinity={"nodeAffinity": node_aff([("nodepool", "In", ["general", "edge"])]),
                 "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                                     preferred(100, "web-frontend")}},
       spread=spread("web-frontend", 1) + anyway("web-frontend", 1, HOST))
# gateways in the general pool, but every zone counts (nodeAffinityPolicy Ignore): the edge
# zone holds none, so at most two per zone
deploy("api-gateway", "web", 12, res("2", "4Gi"), node_selector={"nodepool": "general"},
       spread=spread("api-gateway", 2, nodeAffinityPolicy="Ignore"))
# databases: one per host, never beside a web frontend (existing pods' anti-affinity for
# frontends placed later)
deploy("db", "web", 6, res("2", "16Gi", "40Gi"),
       affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                     anti("db") + anti("web-frontend")}})
# service-mesh apps with a native sidecar (restartPolicy Always init container), spread over
# zones and hosts if they can, preferably in a database's zone and not beside each other
deploy("mesh", "web", 20, res("3", "6Gi"),
       sidecar={"name": "proxy", "image": "registry.example.com/proxy:1.22", "resources": res("1", "1Gi")},
       affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                                 preferred(20, "db", ZONE, {})},
                 "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
                                     preferred(10, "mesh")}},
       spread=anyway("mesh", 2, ZONE) + anyway("mesh", 1, HOST))
# scratch-heavy batch: one fits a node's ephemeral storage, two do not
deploy("scratch", "web", 16, res("1", "2Gi", "50Gi"))
# a pod sized to what the maintenance node has left beside its node agent, to the byte
deploy("whole-node", "web", 1, res("15840m", "63809184Ki"),
       [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}],
       node_selector={HOST: "cpu-a3"})
# CPU batch outside zone a, tolerating the maintenance NoExecute taint
deploy("spot-batch", "ml", 16, res("2", "4Gi"),
       [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}],
       affinity={"nodeAffinity": node_aff([(ZONE, "NotIn", ["eu-west-1a"]),
                                           ("node.kubernetes.io/instance-type", "Exists", None)],
                                          preferred=[(50, [("nodepool", "In", ["edge"])]),
                                                     (10, [(HOST, "In", ["cpu-b3"])])])})
# one per zone
deploy("singleton", "web", 5, res("500m", "1Gi"),
       affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti("singleton", ZONE)}})
# next to a database (another namespace, by namespace selector), per zone
deploy("db-client", "ml", 4, res("1", "2Gi"),
       affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti(
           "db", ZONE, {"matchLabels": {"kubernetes.io/metadata.name": "web"}})}})
# hugepages: only two nodes have them
deploy("dpdk-gw", "web", 3, res("2", "2Gi", ext={"hugepages-2Mi": "512Mi"}))
# CPU caches in a zone holding a 4-GPU job, one per host
deploy("feature-cache", "ml", 6, res("2", "8Gi"), [GPU_TOL],
       affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti("trainer-4", ZONE)},
                 "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti("feature-cache")}})

# PersistentVolumes bound to claims as the PV controller leaves them: the claim names the
# volume (spec.volumeName) and carries pv.kubernetes.io/bind-completed, the volume's claimRef
# names the claim (its uid filled in once the claim exists), both phases Bound (set by the
# test: no controller runs here). Classes as a cluster has them; nothing is provisioned.
classes, volumes, claims = [], [], []
def sclass(name, provisioner, mode):
    classes.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": {"name": name}, "provisioner": provisioner,
                    "reclaimPolicy": "Delete", "volumeBindingMode": mode,
                    "allowVolumeExpansion": provisioner != "kubernetes.io/no-provisioner"})
sclass("local-nvme", "kubernetes.io/no-provisioner", "WaitForFirstConsumer")
sclass("ebs-gp3", "ebs.csi.aws.com", "WaitForFirstConsumer")
sclass("nfs-datasets", "nfs.csi.k8s.io", "Immediate")
def uid():
    return "%08x-%04x-4%03x-8%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16),
                                            rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
def volume(ns, claim, size, modes, cls, source, terms=None, provisioner=None, name=None, labels=None):
    pv = name or "pvc-" + uid()
    v = {"apiVersion": "v1", "kind": "PersistentVolume",
         "metadata": {"name": pv, "finalizers": ["kubernetes.io/pv-protection"], "annotations": {},
                      "labels": labels or {}},
         "spec": dict(source, capacity={"storage": size}, accessModes=modes, storageClassName=cls,
                      volumeMode="Filesystem",
                      persistentVolumeReclaimPolicy="Delete" if provisioner else "Retain",
                      claimRef={"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                "namespace": ns, "name": claim})}
    c = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": claim, "namespace": ns, "finalizers": ["kubernetes.io/pvc-protection"],
                      "annotations": {"pv.kubernetes.io/bind-completed": "yes",
                                      "pv.kubernetes.io/bound-by-controller": "yes"}},
         "spec": {"accessModes": modes, "resources": {"requests": {"storage": size}},
                  "storageClassName": cls, "volumeMode": "Filesystem", "volumeName": pv}}
    if provisioner:
        v["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] = provisioner
        for k in ("volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner"):
            c["metadata"]["annotations"][k] = provisioner
    if terms is not None:
        v["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    volumes.append(v)
    claims.append(c)
# a vector database (GPU nodes tolerated), one node-local NVMe volume per replica, pinned by
# hostname as the static local provisioner writes it, one of them on the cordoned cpu-c3; and
# one on cpu-c3 pinned by matchFields metadata.name as local-path-provisioner v0.0.29 writes
# it: kube-scheduler (and the kubelet) check a volume's node affinity against the node's labels
# only, and a selector term's matchFields are ignored for a node without a name, so that pin
# constrains nothing
local_on = ["cpu-a1", "cpu-b1", "cpu-c0", "cpu-d1", "cpu-c3", "cpu-c3"]
for i, nm in enumerate(local_on):
    terms = [{"matchExpressions": [{"key": HOST, "operator": "In", "values": [nm]}]}]
    if i == 5:
        terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [nm]}]}]
    volume("web", "data-vector-db-%d" % i, "500Gi", ["ReadWriteOnce"], "local-nvme",
           {"local": {"path": "/mnt/disks/nvme%d" % (i % 2)}}, terms,
           name="local-pv-%08x" % rng.getrandbits(32))
deploy("vector-db", "web", len(local_on), res("2", "8Gi"), [GPU_TOL], sts=True,
       claims=lambda i: ["data-vector-db-%d" % i])
# a shared dataset over NFS, reachable from GPU nodes in zones a and c, and from one H100 node
# in zone b (ORed terms)
volume("ml", "datasets", "20Ti", ["ReadWriteMany"], "nfs-datasets",
       {"csi": {"driver": "nfs.csi.k8s.io", "volumeHandle": "nfs.example.com#datasets#",
                "volumeAttributes": {"server": "nfs.example.com", "share": "/datasets"}}},
       [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["eu-west-1a", "eu-west-1c"]},
                              {"key": "nvidia.com/gpu.present", "operator": "Exists"}]},
        {"matchExpressions": [{"key": HOST, "operator": "In", "values": ["gpu-h100-b0"]}]}],
       provisioner="nfs.csi.k8s.io")
deploy("eval", "ml", 10, res("4", "32Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL],
       claims=["datasets"])
# checkpointing trainers: a zonal EBS volume each (zones in turn) and the dataset: the zone b
# ones can only run on gpu-h100-b0, where both volumes are reachable
for i in range(9):
    volume("ml", "ckpt-ckpt-trainer-%d" % i, "200Gi", ["ReadWriteOnce"], "ebs-gp3",
           {"csi": {"driver": "ebs.csi.aws.com", "fsType": "ext4",
                    "volumeHandle": "vol-0%016x" % rng.getrandbits(64),
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity":
                                         "1767225600000-8081-ebs.csi.aws.com"}}},
           [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [ZONES[i % 3]]}]}],
           provisioner="ebs.csi.aws.com")
deploy("ckpt-trainer", "ml", 9, res("8", "64Gi", ext={"nvidia.com/gpu": 1}), [GPU_TOL], sts=True,
       affinity={"nodeAffinity": node_aff([(P, "In", [A100, H100])],
                                          preferred=[(30, [(P, "In", [H100])])])},
       claims=lambda i: ["ckpt-ckpt-trainer-%d" % i, "datasets"])
# a shared home over NFS without node affinity
volume("web", "shared-home", "1Ti", ["ReadWriteMany"], "",
       {"nfs": {"server": "nfs.example.com", "path": "/home"}}, name="nfs-home")
deploy("reports", "web", 4, res("1", "2Gi"), claims=["shared-home"])

# The parts whose outcome the fixture fixes, whatever the order (the pods of each alone on
# their nodes, or small enough to fit anywhere in their zone):
# shards: WaitForFirstConsumer claims of 80Gi, unbound; four 100Gi local volumes on the two
# local nodes and one of 50Gi (too small): 4 bound (gpusched picks the volume, the volume
# controller binds the claim), 1 pending (VolumeBinding: no volume left)
unbound_claims, free_volumes, csinodes = [], [], []
for k, (nm, size) in enumerate((("st-local-0", "100Gi"), ("st-local-0", "100Gi"), ("st-local-1", "100Gi"),
                                ("st-local-1", "100Gi"), ("st-local-0", "50Gi"))):
    free_volumes.append({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "local-shard-%d" % k},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local-nvme",
                 "volumeMode": "Filesystem", "local": {"path": "/mnt/shard%d" % k},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": HOST, "operator": "In", "values": [nm]}]}]}}}})
for i in range(5):
    unbound_claims.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-shard-%d" % i, "namespace": "web"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "80Gi"}},
                 "storageClassName": "local-nvme", "volumeMode": "Filesystem"}})
def group(g): return [{"key": GROUP, "operator": "Equal", "value": g, "effect": "NoSchedule"}]
deploy("shard", "web", 5, res("1", "2Gi"), group("local"), node_selector={GROUP: "local"}, sts=True,
       claims=lambda i: ["data-shard-%d" % i])
# EBS volumes (zone b) where each CSINode allows one volume of the driver: 2 bound, one per node,
# 1 pending (NodeVolumeLimits)
for i in range(3):
    volume("web", "data-ebs-app-%d" % i, "20Gi", ["ReadWriteOnce"], "ebs-gp3",
           {"csi": {"driver": "ebs.csi.aws.com", "fsType": "ext4", "volumeHandle": "vol-0%016x" % rng.getrandbits(64)}},
           [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["eu-west-1b"]}]}],
           provisioner="ebs.csi.aws.com")
for nm in ("st-ebs-0", "st-ebs-1"):
    csinodes.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": nm},
                     "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-" + nm,
                                           "allocatable": {"count": 1},
                                           "topologyKeys": ["topology.kubernetes.io/zone"]}]}})
deploy("ebs-app", "web", 3, res("1", "2Gi"), group("ebs"), node_selector={GROUP: "ebs"}, sts=True,
       claims=lambda i: ["data-ebs-app-%d" % i])
# zonal volumes labelled with their zone and no node affinity, as in-tree volumes were: only
# VolumeZone keeps each pod in its zone; 3 bound
for i, zone in enumerate(ZONES):
    volume("web", "data-zonal-%d" % i, "10Gi", ["ReadWriteOnce"], "",
           {"nfs": {"server": "nfs-%s.example.com" % zone, "path": "/zonal"}},
           name="nfs-zonal-%d" % i, labels={ZONE: zone, "topology.kubernetes.io/region": "eu-west-1"})
deploy("zonal", "web", 3, res("100m", "128Mi"), [GPU_TOL], sts=True, claims=lambda i: ["data-zonal-%d" % i])
# two pods of one ReadWriteOncePod claim: 1 bound, 1 pending (VolumeRestrictions)
volume("web", "ledger-journal", "10Gi", ["ReadWriteOncePod"], "",
       {"nfs": {"server": "nfs.example.com", "path": "/ledger"}}, name="nfs-ledger")
deploy("ledger", "web", 2, res("100m", "128Mi"), [GPU_TOL], sts=True, claims=["ledger-journal"])
# DRA: a driver's devices on two nodes (dra-a: 4 A100; dra-b: 2 A100, 2 L4), a ResourceClaim per
# pod: 6 A100 claims all bound, 3 L4 claims: 2 bound, 1 pending (DynamicResources)
dra_objs = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}]
for nm, models in (("dra-a", ["A100"] * 4), ("dra-b", ["A100", "A100", "L4", "L4"])):
    dra_objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": nm + "-gpu.example.com"},
        "spec": {"driver": "gpu.example.com", "nodeName": nm,
                 "pool": {"name": nm, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-%d" % k, "attributes": {"model": {"string": m}},
                              "capacity": {"memory": {"value": "80Gi" if m == "A100" else "24Gi"}}}
                             for k, m in enumerate(models)]}})
def dra_claim(name, model):
    dra_objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == '%s'" % model}}]}}]}}})
for i in range(6):
    dra_claim("infer-%d" % i, "A100")
for i in range(3):
    dra_claim("l4-%d" % i, "L4")
deploy("dra-infer", "ml", 6, res("1", "2Gi"), group("dra"), node_selector={GROUP: "dra"},
       dra=lambda i: "infer-%d" % i)
deploy("dra-l4", "ml", 3, res("1", "2Gi"), group("dra"), node_selector={GROUP: "dra"},
       dra=lambda i: "l4-%d" % i)
# gated pods, never ungated: 3 pending, never tried
deploy("gated", "ml", 3, res("100m", "128Mi"), gates=["example.com/admission"])

rng.shuffle(pods)
for f, items in (("classes", classes), ("volumes", volumes), ("claims", claims),
                 ("unbound", unbound_claims + free_volumes + csinodes), ("dra", dra_objs)):
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(os.path.join(out, f + ".json"), "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": pinned}, open(os.path.join(out, "pinned.json"), "w"))
# in waves: each a quarter of the pods, labelled with its number
WAVES = 4
for w in range(WAVES):
    part = pods[w * len(pods) // WAVES:(w + 1) * len(pods) // WAVES]
    for p in part:
        p["metadata"]["labels"]["e2e.gpusched.io/wave"] = str(w + 1)
    json.dump({"apiVersion": "v1", "kind": "List", "items": part}, open(os.path.join(out, "wave-%d.json" % (w + 1)), "w"))
print("generated %d nodes, %d pods (%d with spec.nodeName) in %d waves, %d volumes bound to claims, "
      "%d free volumes and %d claims waiting for their first consumer, %d ResourceClaims" % (
    len(nodes), len(pods) + len(pinned), len(pinned), WAVES, len(volumes), len(free_volumes),
    len(unbound_claims), sum(1 for o in dra_objs if o["kind"] == "ResourceClaim")))
PY

for ns in ml web monitoring; do "$K" create namespace $ns >/dev/null || exit 1; done
"$K" label namespace ml team=research >/dev/null
"$K" label namespace web team=product >/dev/null
for f in "$E2E_DIR"/gen/nodes/*.json; do
    n="$(basename "$f" .json)"
    "$K" create -f "$f" >/dev/null || exit 1
    "$K" patch node "$n" --subresource=status --type=merge \
        -p "$(cat "$E2E_DIR/gen/nodes/$n.status")" >/dev/null || exit 1
done
# claims, then volumes whose claimRef holds the claim's uid, then both statuses Bound
"$K" create -f "$E2E_DIR/gen/classes.json" >/dev/null || exit 1
"$K" create -f "$E2E_DIR/gen/claims.json" -o json > "$E2E_DIR/gen/claims.out" || exit 1
python3 - "$E2E_DIR/gen" <<'PY' || exit 1
import json, os, sys
g = sys.argv[1]
# kubectl prints each created object, one JSON document after the other
text, made, at, dec = open(os.path.join(g, "claims.out")).read(), [], 0, json.JSONDecoder()
while True:
    while at < len(text) and text[at].isspace():
        at += 1
    if at == len(text):
        break
    o, at = dec.raw_decode(text, at)
    made += o.get("items", [o])
uids = {(c["metadata"]["namespace"], c["metadata"]["name"]): c["metadata"]["uid"] for c in made}
vols = json.load(open(os.path.join(g, "volumes.json")))
with open(os.path.join(g, "status.txt"), "w") as st:
    for v in vols["items"]:
        ref = v["spec"]["claimRef"]
        ref["uid"] = uids[(ref["namespace"], ref["name"])]
        st.write("pv %s - %s\n" % (v["metadata"]["name"], json.dumps({"status": {"phase": "Bound"}})))
    for c in json.load(open(os.path.join(g, "claims.json")))["items"]:
        sp = c["spec"]
        st.write("pvc %s %s %s\n" % (c["metadata"]["name"], c["metadata"]["namespace"], json.dumps(
            {"status": {"phase": "Bound", "accessModes": sp["accessModes"],
                        "capacity": sp["resources"]["requests"]}}, separators=(",", ":"))))
json.dump(vols, open(os.path.join(g, "volumes.json"), "w"))
PY
"$K" create -f "$E2E_DIR/gen/volumes.json" >/dev/null || exit 1
while read -r kind name ns status; do
    if [ "$kind" = pv ]; then
        "$K" patch pv "$name" --subresource=status --type=merge -p "$status" >/dev/null || exit 1
    else
        "$K" patch pvc "$name" -n "$ns" --subresource=status --type=merge -p "$status" >/dev/null ||
            exit 1
    fi
done < "$E2E_DIR/gen/status.txt"
unbound="$("$K" get pv,pvc -A -o json | python3 -c '
import json, sys
print(" ".join(o["metadata"]["name"] for o in json.load(sys.stdin)["items"]
               if o.get("status", {}).get("phase") != "Bound"))')"
[ -z "$unbound" ] || { echo "FAIL: not Bound: $unbound"; exit 1; }
# then what waits for the scheduler: claims without a volume, free volumes, the CSINodes'
# limits; the DRA driver's class, slices and claims; the volume controller (which makes the
# free volumes Available and binds the claims the scheduler gives a volume)
"$K" create -f "$E2E_DIR/gen/unbound.json" >/dev/null || exit 1
"$K" create -f "$E2E_DIR/gen/dra.json" >/dev/null || exit 1
"$E2E_BIN/kube-controller-manager" --kubeconfig "$E2E_DIR/admin.kubeconfig" --leader-elect=false \
    --secure-port 0 --controllers persistentvolume-binder-controller \
    > "$E2E_DIR/controller-manager.log" 2>&1 &
echo $! > "$E2E_DIR/kcm.pid"
available() {
    [ "$("$K" get pv -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}' |
        grep -c '^local-shard-[0-9]* Available$')" = 5 ]
}
for i in $(seq 1 300); do available && break; sleep 0.2; done
available || { fail "the free volumes did not turn Available"; finish; }
"$K" create -f "$E2E_DIR/gen/pinned.json" >/dev/null || exit 1
ks_dump "$E2E_DIR/initial.json" || exit 1

port=$(e2e_free_port)
"$GS" --log-level debug scheduler --kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --leader-elect false --http-port "$port" > "$E2E_DIR/scheduler.log" 2>&1 &
echo $! > "$E2E_DIR/scheduler.pid"
# the waves: each created (kubectl create, in the background) as soon as gpusched has decided a
# bind of a pod of the one before (its log says "assume NS/POD on NODE"), so that it arrives
# while gpusched binds that one; the binds done by then ("NS/POD -> NODE" in its log) are
# noted, to show the overlap afterwards
decided_of() { # WAVE: binds decided for its pods
    sed -n 's/^.*scheduler: assume \([^ ]*\) on .*$/\1/p' "$E2E_DIR/scheduler.log" |
        grep -cFxf "$E2E_DIR/gen/wave-$1.names"
}
for w in 1 2 3 4; do
    python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["items"]:
    print(p["metadata"]["namespace"] + "/" + p["metadata"]["name"])' "$E2E_DIR/gen/wave-$w.json" \
        > "$E2E_DIR/gen/wave-$w.names"
done
: > "$E2E_DIR/waves.txt"
for w in 1 2 3 4; do
    if [ $w -gt 1 ]; then
        for i in $(seq 1 1200); do [ "$(decided_of $((w - 1)))" -gt 0 ] && break; sleep 0.1; done
    fi
    echo "$w $(grep -c '^info: scheduler: [^ ]* -> ' "$E2E_DIR/scheduler.log")" >> "$E2E_DIR/waves.txt"
    "$K" create -f "$E2E_DIR/gen/wave-$w.json" >/dev/null &
    creators="${creators:-} $!"
done
for c in $creators; do wait "$c" || { fail "creating a wave of pods"; finish; }; done

# settled: every pod of ours is bound or marked unschedulable (PodScheduled False), and the
# number bound has not changed for 10 s
count() {
    "$K" get pods -A -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
mine = [p for p in items if p["spec"].get("schedulerName") == "gpusched"]
bound = sum(1 for p in mine if p["spec"].get("nodeName"))
tried = all(p["spec"].get("nodeName") or any(c["type"] == "PodScheduled" and c["status"] == "False"
            for c in p.get("status", {}).get("conditions", [])) for p in mine)
print(bound, "tried" if tried else "untried")'
}
t0=$(date +%s); last=-1; since=$t0
while :; do
    read -r bound tried < <(count)
    now=$(date +%s)
    if [ "$bound" != "$last" ]; then last=$bound; since=$now; fi
    [ "$tried" = tried ] && [ $((now - since)) -ge 10 ] && break
    if [ $((now - t0)) -ge 240 ]; then fail "not settled after 240 s ($bound bound, $tried)"; break; fi
    sleep 2
done
echo "settled after $(( $(date +%s) - t0 )) s: $bound pods of gpusched bound"
kill -0 "$(cat "$E2E_DIR/scheduler.pid")" 2>/dev/null || fail "the scheduler died"

ks_dump "$E2E_DIR/dump.json" "$E2E_DIR/initial.json" || exit 1
ks_order "$E2E_DIR/scheduler.log" "$E2E_DIR/order.txt"
# each wave came while gpusched was binding the one before: binds of that one were done after
# the wave's creation began
python3 - "$E2E_DIR" <<'PY' || fail "waves"
import re, sys
d = sys.argv[1]
done = [m.group(1) for m in (re.match(r"info: scheduler: (\S+/\S+) -> ", l) for l in open(d + "/scheduler.log")) if m]
ok = True
for line in open(d + "/waves.txt"):
    w, before = (int(x) for x in line.split())
    if w == 1:
        continue
    prev = {l.strip() for l in open(d + "/gen/wave-%d.names" % (w - 1))}
    after = sum(1 for k in done[before:] if k in prev)
    print("wave %d created when %d binds were done; %d pods of wave %d were bound after" % (w, before, after, w - 1))
    if after == 0:
        print("FAIL: wave %d came after gpusched had bound wave %d" % (w, w - 1)); ok = False
sys.exit(0 if ok else 1)
PY
t0=$SECONDS
"$CHECK" -order "$E2E_DIR/order.txt" -reasons "$E2E_DIR/dump.json" > "$E2E_DIR/check.out" 2>&1
rc=$?
echo "kschedcheck took $((SECONDS - t0)) s"
# the same binds replayed in the reverse order must break rules (pods placed beside pods that
# would not be there yet, spread counts that would not hold): the replay sees the order
tac "$E2E_DIR/order.txt" > "$E2E_DIR/reversed.txt"
"$CHECK" -order "$E2E_DIR/reversed.txt" "$E2E_DIR/dump.json" > "$E2E_DIR/reversed.out" 2>&1
rrc=$?
rev="$(sed -n 's/^kschedcheck: .*; \([0-9]*\) disagreements.*$/\1/p' "$E2E_DIR/reversed.out")"
echo "in the reverse order: ${rev:-no} disagreements ($(grep -o 'refuses it: [^ ]*' "$E2E_DIR/reversed.out" |
    sort | uniq -c | sort -rn | awk '{printf "%s%s %d", (NR > 1 ? ", " : ""), $4, $1}'))"
[ "$rrc" = 1 ] && [ "${rev:-0}" -gt 0 ] || fail "the binds in the reverse order broke no rule (exit $rrc)"
grep -v '^pending ' "$E2E_DIR/check.out"
[ $rc -eq 0 ] || fail "kube-scheduler's filters disagree with gpusched (exit $rc)"
python3 - "$E2E_DIR/dump.json" "$E2E_DIR/check.out" <<'PY' || fail "figures"
import collections, json, re, sys
d = json.load(open(sys.argv[1]))
mine = [p for p in d["pods"] if p["spec"].get("schedulerName") == "gpusched"]
bound = [p for p in mine if p["spec"].get("nodeName")]
apps = collections.Counter((p["metadata"]["labels"]["app"], bool(p["spec"].get("nodeName"))) for p in mine)
print("nodes %d, pods %d (gpusched %d): bound %d, pending %d" % (len(d["nodes"]), len(d["pods"]),
      len(mine), len(bound), len(mine) - len(bound)))
print("per app (bound/pending): " + ", ".join("%s %d/%d" % (a, apps[(a, True)], apps[(a, False)])
      for a in sorted({a for a, _ in apps})))
ok = len(d["nodes"]) >= 50 and len(mine) >= 300 and len(bound) > 0 and len(mine) > len(bound)
# the mix as created: every kind of constraint is on pods of gpusched (bound and pending for
# the claims)
def aff(p, kind, when):
    return bool(p["spec"].get("affinity", {}).get(kind, {}).get(when + "DuringSchedulingIgnoredDuringExecution"))
kinds = {
    "required node affinity": lambda p: aff(p, "nodeAffinity", "required"),
    "preferred node affinity": lambda p: aff(p, "nodeAffinity", "preferred"),
    "required pod affinity": lambda p: aff(p, "podAffinity", "required"),
    "preferred pod affinity": lambda p: aff(p, "podAffinity", "preferred"),
    "required pod anti-affinity": lambda p: aff(p, "podAntiAffinity", "required"),
    "preferred pod anti-affinity": lambda p: aff(p, "podAntiAffinity", "preferred"),
    "spread DoNotSchedule": lambda p: any(c["whenUnsatisfiable"] == "DoNotSchedule"
                                          for c in p["spec"].get("topologySpreadConstraints", [])),
    "spread ScheduleAnyway": lambda p: any(c["whenUnsatisfiable"] == "ScheduleAnyway"
                                           for c in p["spec"].get("topologySpreadConstraints", [])),
    "host ports": lambda p: any(pt.get("hostPort") for c in p["spec"]["containers"]
                                for pt in c.get("ports", [])),
    "claims": lambda p: any("persistentVolumeClaim" in v for v in p["spec"].get("volumes", [])),
}
for k, f in kinds.items():
    n = [p for p in mine if f(p)]
    b = sum(1 for p in n if p["spec"].get("nodeName"))
    print("  %s: %d pods, %d bound" % (k, len(n), b))
    if b == 0 or (k == "claims" and b == len(n)):
        print("FAIL: the mix lacks bound%s pods with %s" % (" and pending" if k == "claims" else "", k))
        ok = False
affine = [v for v in d["persistentVolumes"] if v["spec"].get("nodeAffinity")]
print("volumes %d (%d with node affinity), claims %d" % (len(d["persistentVolumes"]), len(affine),
      len(d["persistentVolumeClaims"])))
# upstream's VolumeBinding really judged the claims: the nodes it alone allows, per pod
lets = {}
for line in open(sys.argv[2]):
    m = re.match(r"volumes (\S+): VolumeBinding lets it onto (\d+)/(\d+) nodes: (.*)$", line)
    if m:
        lets[m.group(1)] = (int(m.group(2)), m.group(4))
want = {"web/vector-db-0": (1, "cpu-a1"), "web/vector-db-4": (1, "cpu-c3"),
        "web/vector-db-5": (len(d["nodes"]), None)}  # matchFields: no constraint upstream
for p in mine:
    if kinds["claims"](p):
        k = p["metadata"]["namespace"] + "/" + p["metadata"]["name"]
        app = p["metadata"]["labels"]["app"]
        if k not in lets:
            print("FAIL: kschedcheck did not judge the volumes of %s" % k); ok = False
        elif app == "reports" and lets[k][0] != len(d["nodes"]):
            print("FAIL: %s: a volume without node affinity allows %d nodes" % (k, lets[k][0])); ok = False
        elif k in want and (lets[k][0] != want[k][0] or want[k][1] not in (None, lets[k][1])):
            print("FAIL: %s: VolumeBinding allows %s, want %s" % (k, lets[k], want[k])); ok = False
for k in want:
    if k not in lets:
        print("FAIL: no verdict on the volumes of %s" % k); ok = False

# the parts whose outcome the fixture fixes, whatever the order: bound/pending per app
fixed = {"shard": (4, 1), "ebs-app": (2, 1), "zonal": (3, 0), "ledger": (1, 1), "dra-infer": (6, 0),
         "dra-l4": (2, 1), "gated": (0, 3), "pinned-etl": (3, 0), "pinned-proxy": (1, 0)}
for a, want_ in fixed.items():
    if (apps[(a, True)], apps[(a, False)]) != want_:
        print("FAIL: %s %d bound/%d pending, want %d/%d" % (a, apps[(a, True)], apps[(a, False)], *want_)); ok = False
# the checker's own figures: every bound pod of gpusched judged in the order decided (but the
# 4 created with spec.nodeName, pinned), none decided and left unbound, every pending pod
# checked but the 3 gated ones, no disagreement
line = [l for l in open(sys.argv[2]) if l.startswith("kschedcheck: ")]
m = re.search(r"(\d+) filter plugins: (\d+) binds of gpusched judged in order against (\d+) pinned pods "
              r"\((\d+) of them gpusched's\), (\d+) listed but not bound, (\d+) pending checked, (\d+) gated, "
              r"\d+ with claims; (\d+) disagreements", line[0] if line else "")
if not m:
    print("FAIL: no summary from kschedcheck"); ok = False
else:
    got = tuple(int(x) for x in m.groups())
    npend = len(mine) - len(bound)
    want_ = (13, len(bound) - 4, 4, 4, 0, npend - 3, 3, 0)
    print("kschedcheck judged %d binds in order against %d pinned pods with %d filter plugins, "
          "checked %d pending pods (%d gated left out): %d disagreements" % (got[1], got[2], got[0], got[5], got[6], got[7]))
    if got != want_:
        print("FAIL: kschedcheck's figures %s, want %s (filter plugins, binds judged, pinned, of "
              "them gpusched's, listed but not bound, pending checked, gated, disagreements)" % (got, want_)); ok = False
# the volume plugins and DynamicResources refused nodes at the binds' turns (the pending pods'
# for VolumeRestrictions: the ledger's second pod, on every node); VolumeZone alone keeps each
# zonal pod in its volume's zone: it refuses exactly the nodes of the other zones
refuses = {}
for l in open(sys.argv[2]):
    r = re.match(r"refuses (\w+): (\d+) node\(s\) for (\d+) of \d+ binds judged; (\d+) node\(s\) for (\d+) of", l)
    if r:
        refuses[r.group(1)] = tuple(int(x) for x in r.groups()[1:])
print("refused at the binds' turns (nodes/binds; pending: nodes/pods): " + ", ".join(
    "%s %d/%d; %d/%d" % ((k,) + v) for k, v in sorted(refuses.items())))
pvs = {v["metadata"]["name"]: v for v in d["persistentVolumes"]}
claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in d["persistentVolumeClaims"]}
def zone_refused(pv, n):
    L = n["metadata"]["labels"]
    return any(L.get(k) != v for k, v in pv["metadata"].get("labels", {}).items()
               if k in ("topology.kubernetes.io/zone", "topology.kubernetes.io/region"))
zonal = [p for p in bound if p["metadata"]["labels"]["app"] == "zonal"]
want_zone = sum(1 for p in zonal for n in d["nodes"]
                if zone_refused(pvs[claims[("web", p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"])]["spec"]["volumeName"]], n))
if refuses.get("VolumeZone", (0, 0))[:2] != (want_zone, len(zonal)):
    print("FAIL: VolumeZone refused %s at the binds' turns, want %d nodes for the %d zonal pods" % (
        refuses.get("VolumeZone"), want_zone, len(zonal))); ok = False
for pl, at in (("VolumeBinding", 1), ("NodeVolumeLimits", 1), ("DynamicResources", 1), ("VolumeRestrictions", 3)):
    if refuses.get(pl, (0, 0, 0, 0))[at] < 1:
        print("FAIL: %s refused nothing %s" % (pl, "at the binds' turns" if at == 1 else "for a pending pod")); ok = False
if refuses.get("VolumeRestrictions", (0, 0, 0, 0))[2] < len(d["nodes"]):
    print("FAIL: VolumeRestrictions did not refuse the ledger's second pod every node"); ok = False
# the claims gpusched gave a volume: 4 shards' claims bound to distinct 100Gi volumes on their
# pods' nodes (the volume controller completed the binds), the fifth unbound
node_of = {("web", p["metadata"]["name"]): p["spec"].get("nodeName") for p in mine}
got_vols = []
for i in range(5):
    c = claims[("web", "data-shard-%d" % i)]
    v = c["spec"].get("volumeName")
    n = node_of.get(("web", "shard-%d" % i))
    if n:
        pv = pvs.get(v or "")
        host = pv and pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0]
        if c.get("status", {}).get("phase") != "Bound" or not pv or host != n or pv["spec"]["capacity"]["storage"] != "100Gi":
            print("FAIL: shard-%d on %s: claim %s, volume %s on %s" % (i, n, c.get("status", {}).get("phase"), v, host)); ok = False
        got_vols.append(v)
    elif v:
        print("FAIL: shard-%d pending, yet its claim has volume %s" % (i, v)); ok = False
if len(set(got_vols)) != len(got_vols):
    print("FAIL: two shards' claims on one volume: %s" % got_vols); ok = False
print("shard claims bound by gpusched and the volume controller: " + ", ".join(sorted(got_vols)))
# the ResourceClaims gpusched allocated: one device each, of the model asked, on the pod's node,
# reserved for the pod; no device in two claims; the pending pod's claim not allocated
taken = {}
dev_model = {(s["spec"]["pool"]["name"], x["name"]): x["attributes"]["model"]["string"]
             for s in d["resourceSlices"] for x in s["spec"].get("devices") or []}
for p in mine:
    rc = p["spec"].get("resourceClaims")
    if not rc:
        continue
    c = [x for x in d["resourceClaims"] if x["metadata"]["name"] == rc[0]["resourceClaimName"]][0]
    a = c.get("status", {}).get("allocation")
    model = "L4" if c["metadata"]["name"].startswith("l4-") else "A100"
    if not p["spec"].get("nodeName"):
        if a:
            print("FAIL: %s pending, yet its claim is allocated" % p["metadata"]["name"]); ok = False
        continue
    res = a["devices"]["results"] if a else []
    rf = [x["uid"] for x in c.get("status", {}).get("reservedFor") or []]
    sel = a and a["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
    if len(res) != 1 or sel != p["spec"]["nodeName"] or dev_model.get((res[0]["pool"], res[0]["device"])) != model \
            or rf != [p["metadata"]["uid"]]:
        print("FAIL: %s on %s: claim %s allocation %s reservedFor %s" % (p["metadata"]["name"], p["spec"]["nodeName"],
              c["metadata"]["name"], a, rf)); ok = False
    for x in res:
        k = (x["pool"], x["device"])
        if k in taken:
            print("FAIL: device %s/%s in claims %s and %s" % (k + (taken[k], c["metadata"]["name"]))); ok = False
        taken[k] = c["metadata"]["name"]
print("ResourceClaims allocated by gpusched: %d devices, none twice" % len(taken))
sys.exit(0 if ok else 1)
PY
if [ $fails -ne 0 ]; then
    echo "--- upstream's reasons for the pending pods"; grep '^pending ' "$E2E_DIR/check.out" | head -40
    echo "--- scheduler log (tail)"; tail -20 "$E2E_DIR/scheduler.log"
fi
finish
