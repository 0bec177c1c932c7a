#!/usr/bin/env bash
# The Helm chart (charts/gpusched) on a real kube-apiserver, without installing it:
#  - `helm lint --strict` is clean on the defaults and on every examples/*.yaml, NOTES.txt
#    renders, appVersion is the project's version, deploy/crds/ links to the chart's CRDs;
#  - each of them renders and every object is accepted by `kubectl apply --dry-run=server`
#    (the chart's CRDs applied for real first), and the objects are what they should be:
#    the scheduler's replicas, leader election on a Lease its Role names, a PDB selecting it,
#    probes, non-root and read-only root filesystem; extender mode renders the extender, its
#    Service and a kube-scheduler calling that Service, and no standalone scheduler; the agent's
#    device plugin dir under agent.kubeletDir, its ConfigMaps rendered and none optional, its
#    node selector not a label it sets itself; the fake backend's ConfigMap and --fake; RBAC
#    with no '*' and nothing beyond deploy/rbac.yaml, deploy/agent.yaml and deploy/dra/rbac.yaml;
#    the release labels and release-derived names on every object (but the DeviceClasses, named
#    after the driver), so two releases share none; with dra.enabled (examples/dra.yaml) the
#    DeviceClasses gpu.gpusched.io and mig.gpusched.io of driver gpu.gpusched.io, as
#    deploy/dra/deviceclasses.yaml has them, the agent's --dra flags on the kubelet's plugins/
#    and plugins_registry/ and the CDI folder, each mounted from the same host path, and its RBAC
#    on ResourceSlices; without it none of these;
#  - what is rendered runs, with the chart's own ServiceAccounts and RBAC (applied for real,
#    tokens from the TokenRequest API): the mig-parted config passes `gpusched mig validate`;
#    the agent, on its rendered command line with its ConfigMaps as files (the fake spec, or a
#    stand-in for NVML), publishes its Node's inventory and serves the monitor config's labels;
#    with dra.enabled the agent registers its DRA plugin's sockets and publishes its Node's
#    ResourceSlices; the scheduler and the extender become ready (the scheduler takes its Lease); the stock
#    kube-scheduler accepts its rendered config and takes its Lease; none is refused anything
#    (no 403 in their logs);
#  - the metrics path: the PodMonitors select the chart's pods on a port they declare; every
#    alert, prometheus-adapter and dashboard query parses (Prometheus' own parser) and names
#    only series the agent or the scheduler exports in the live scrapes above (or an
#    application's own metric the adapter is told to map);
#  - bad values files (a wrong type, an unknown key, a bad enum, a negative replica count...)
#    are refused by `helm template` with a message naming the field.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
HELM="$E2E_BIN/helm-v4.3.1"
[ -x "$HELM" ] || skip "helm did not build ($HELM)"
ROOT="$(cd "$E2E_SRC/../.." && pwd)"
CHART="$ROOT/charts/gpusched"
SECONDS=0
# helm keeps its caches and config out of $HOME
export HELM_CACHE_HOME="$E2E_DIR/helm/cache" HELM_CONFIG_HOME="$E2E_DIR/helm/config" \
    HELM_DATA_HOME="$E2E_DIR/helm/data"
fails=0 checks=0
check() { # NAME COMMAND...: run it; print ok or FAIL with its output
    checks=$((checks + 1))
    if out="$(eval "$2" 2>&1)"; then
        echo "ok: $1"
    else
        echo "FAIL: $1"
        [ -n "$out" ] && echo "$out" | head -20 | sed 's/^/    /'
        fails=$((fails + 1))
    fi
}
NS=gpusched-test
REL=gs

# the chart and the project agree on the version, once CMakeLists.txt declares one
app="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml")"
proj="$(sed -En 's/^project\(gpusched VERSION ([0-9.]+).*/\1/p' "$ROOT/CMakeLists.txt")"
if [ -n "$proj" ]; then
    check "Chart.yaml appVersion $app is the project's version ($proj)" '[ "$app" = "$proj" ]'
else
    echo "note: CMakeLists.txt declares no project version; appVersion is $app"
fi
# one copy of the CRDs: deploy/crds/ points into the chart
for f in "$CHART"/crds/*.yaml; do
    b="$(basename "$f")"
    check "deploy/crds/$b is the chart's crds/$b (a symlink, one copy)" \
        '[ -L "$ROOT/deploy/crds/$b" ] && [ "$(readlink -f "$ROOT/deploy/crds/$b")" = "$(readlink -f "$f")" ]'
done

# the values sets: the defaults and every example
sets="defaults"
for f in "$CHART"/examples/*.yaml; do sets="$sets $(basename "$f" .yaml)"; done
vals() { [ "$1" = defaults ] || echo "-f $CHART/examples/$1.yaml"; }

for v in $sets; do
    check "helm lint --strict ($v): no warning, no error" \
        '"$HELM" lint --strict "$CHART" $(vals $v) > "$E2E_DIR/lint.out" 2>&1 &&
         ! grep -E "^\[(WARNING|ERROR)\]" "$E2E_DIR/lint.out" || { cat "$E2E_DIR/lint.out"; false; }'
    # NOTES.txt is only rendered by install: a client-side dry run, no cluster
    check "NOTES.txt renders ($v)" \
        'KUBECONFIG=/nonexistent "$HELM" install $REL "$CHART" -n $NS --dry-run=client $(vals $v) |
         grep -q "^Pods opt in with:"'
done

# the CRDs for real (custom resources and RBAC on them validate against them), the namespace
check "the chart's CRDs apply" '"$K" apply -f "$CHART/crds" > /dev/null'
"$K" wait --for condition=established --timeout=60s -f "$CHART/crds" > /dev/null 2>&1
"$K" create namespace $NS > /dev/null

mkdir -p "$E2E_DIR/r"
for v in $sets; do
    check "helm template ($v) renders" \
        '"$HELM" template $REL "$CHART" -n $NS $(vals $v) > "$E2E_DIR/r/$v.yaml"'
    check "the API server accepts every object of $v (apply --dry-run=server)" \
        '"$K" apply --dry-run=server -o json -f "$E2E_DIR/r/$v.yaml" > "$E2E_DIR/r/$v.json"'
done

# a second release in another namespace, for the check that two releases share nothing
for v in defaults extender; do
    "$HELM" template b "$CHART" -n other $(vals $v) --set priorityClasses.create=false |
        "$K" create --dry-run=client -o json -f - > "$E2E_DIR/r/b-$v.json" 2>&1
done

# the expectations on the objects, per values set; also writes what the runs below need into
# $E2E_DIR/r/<set>.run/ (ConfigMap data as files, each container's args)
python3 - "$E2E_DIR/r" "$REL" "$NS" "$ROOT" $sets > "$E2E_DIR/expect.out" <<'PY'
import json, os, re, sys, yaml

rdir, rel, ns, root, sets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
fails = 0

def check(name, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok or not detail else "\n    " + str(detail)))
    fails += 0 if ok else 1

def load(path):
    text, dec, pos, items = open(path).read(), json.JSONDecoder(), 0, []
    while text[pos:].strip():
        o, pos = dec.raw_decode(text, len(text) - len(text[pos:].lstrip()))
        items += o.get("items", []) if o.get("kind") == "List" else [o]
    return items

def kubectl_yaml_rules(path):
    """(group, resource, verb) of every rule in a deploy/ manifest, read without a YAML
    library: the manifests write rules in flow style, one key per line."""
    out, groups, res = set(), [], []
    for line in open(path):
        m = re.match(r"\s*-?\s*(apiGroups|resources|verbs):\s*\[([^\]]*)\]", line)
        if not m:
            continue
        vals = [x.strip().strip('"') for x in m.group(2).split(",")]
        if m.group(1) == "apiGroups":
            groups = vals
        elif m.group(1) == "resources":
            res = vals
        else:
            out |= {(g, r, v) for g in groups for r in res for v in vals}
    return out

allowed = kubectl_yaml_rules(os.path.join(root, "deploy/rbac.yaml")) | \
    kubectl_yaml_rules(os.path.join(root, "deploy/agent.yaml")) | \
    kubectl_yaml_rules(os.path.join(root, "deploy/dra/rbac.yaml"))
DRA_CLASSES = ("gpu.gpusched.io", "mig.gpusched.io")
agent_src = open(os.path.join(root, "src/agent/agent.c")).read()
agent_labels = set(re.findall(r'"(nvidia\.com/[a-z.-]+)"', agent_src))
fullname = rel + "-gpusched"
sel_keys = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component")
seen_names = {}

def comp(objs, kind, c):
    return [o for o in objs if o["kind"] == kind and
            o["metadata"]["labels"].get("app.kubernetes.io/component") == c]

def arg(args, flag):
    """the value of --flag=v or --flag v in a container's args"""
    for i, a in enumerate(args):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None

for s in sets:
    objs = load(os.path.join(rdir, s + ".json"))
    run = os.path.join(rdir, s + ".run")
    os.makedirs(run, exist_ok=True)
    p = "[%s] " % s
    kinds = sorted({o["kind"] for o in objs})
    print("note: %s renders %d objects: %s" % (s, len(objs), ", ".join(kinds)))
    # every object: the release's labels, a release-derived name, the release namespace
    bad = [o["kind"] + "/" + o["metadata"]["name"] for o in objs
           if o["metadata"].get("labels", {}).get("app.kubernetes.io/instance") != rel or
           o["metadata"]["labels"].get("app.kubernetes.io/managed-by") != "Helm" or
           not o["metadata"]["labels"].get("helm.sh/chart", "").startswith("gpusched-") or
           o["metadata"]["labels"].get("app.kubernetes.io/name") != "gpusched"]
    check(p + "every object carries app.kubernetes.io/{name,instance,managed-by} and helm.sh/chart",
          not bad, bad)
    # PriorityClasses and DeviceClasses are named as pods and claims name them
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "PriorityClass", "DeviceClass"}
    bad = [o["kind"] + "/" + o["metadata"]["name"] for o in objs
           if (o["kind"] == "DeviceClass" and o["metadata"]["name"] not in DRA_CLASSES) or
           (o["kind"] in cluster_scoped and o["kind"] not in ("PriorityClass", "DeviceClass") and
               not o["metadata"]["name"].startswith(ns + "-" + fullname + "-")) or
           (o["kind"] not in cluster_scoped and
            (o["metadata"].get("namespace") != ns or
             not o["metadata"]["name"].startswith(fullname)))]
    check(p + "every name derives from the release (cluster-scoped ones from its namespace too), "
          "every namespaced object is in the release namespace", not bad, bad)
    seen_names[s] = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
                     for o in objs}
    # RBAC: nothing wild, nothing beyond deploy/
    rules = [(o["kind"] + "/" + o["metadata"]["name"], r) for o in objs
             if o["kind"] in ("Role", "ClusterRole") for r in o.get("rules", [])]
    wild = [n for n, r in rules if "*" in r.get("verbs", []) + r.get("resources", []) +
            r.get("apiGroups", []) + r.get("resourceNames", [])]
    check(p + "RBAC: no '*' in any verb, resource, group or name (%d rules)" % len(rules),
          rules and not wild, wild)
    extra = sorted({(n, g, res, v) for n, r in rules for g in r.get("apiGroups", [])
                    for res in r.get("resources", []) for v in r.get("verbs", [])
                    if (g, res, v) not in allowed})
    check(p + "RBAC: every rule is one deploy/rbac.yaml, deploy/agent.yaml or deploy/dra/rbac.yaml "
          "grants", not extra, extra)
    named = [r for n, r in rules if "leases" in r.get("resources", []) and
             set(r["verbs"]) & {"get", "update", "patch", "delete"}]
    check(p + "RBAC: get/update on Leases only with resourceNames",
          all(r.get("resourceNames") for r in named), named)
    ours = {o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole"}
    foreign = sorted(o["roleRef"]["name"] for o in objs if o["kind"] == "ClusterRoleBinding" and
                     o["roleRef"]["name"] not in ours)
    # extender mode runs a stock kube-scheduler: the built-in roles every second
    # kube-scheduler is given, nothing else
    ks = comp(objs, "Deployment", "kube-scheduler")
    check(p + "ClusterRoleBindings name the chart's own ClusterRoles%s" %
          (" or system:kube-scheduler/volume-scheduler" if ks else ""),
          foreign == (["system:kube-scheduler", "system:volume-scheduler"] if ks else []), foreign)
    # workloads: their selectors match their pods, PDBs select them
    for o in objs:
        if o["kind"] not in ("Deployment", "DaemonSet"):
            continue
        tl = o["spec"]["template"]["metadata"]["labels"]
        ml = o["spec"]["selector"]["matchLabels"]
        check(p + "%s/%s: the selector (%s) matches its pods" %
              (o["kind"], o["metadata"]["name"], ",".join(sorted(ml))),
              all(tl.get(k) == v for k, v in ml.items()) and all(k in ml for k in sel_keys))
        for c in o["spec"]["template"]["spec"]["containers"]:
            with open(os.path.join(run, c["name"] + ".args"), "w") as f:
                f.write("\n".join(c.get("command", [])[1:] + c.get("args", [])) + "\n")
    for o in objs:
        if o["kind"] == "ConfigMap":
            d = os.path.join(run, "cm", o["metadata"]["name"])
            os.makedirs(d, exist_ok=True)
            for k, v in o["data"].items():
                open(os.path.join(d, k), "w").write(v)

    sched = comp(objs, "Deployment", "scheduler")
    pdbs = [o for o in objs if o["kind"] == "PodDisruptionBudget"]
    if s in ("defaults", "dra", "fake-gpus", "mps", "nvidia-stack", "small-cluster"):
        check(p + "one standalone scheduler Deployment, no extender, no kube-scheduler",
              len(sched) == 1 and not comp(objs, "Deployment", "extender") and not ks)
    if sched:
        d = sched[0]
        spec = d["spec"]["template"]["spec"]
        c = spec["containers"][0]
        args = c["args"]
        want = 1 if s == "small-cluster" else 2
        check(p + "the scheduler runs %d replica(s)" % want, d["spec"]["replicas"] == want,
              d["spec"]["replicas"])
        check(p + "the scheduler runs `gpusched scheduler --in-cluster`",
              c["command"] == ["gpusched"] and "scheduler" in args and "--in-cluster" in args)
        pdb = [x for x in pdbs if x["metadata"]["labels"]["app.kubernetes.io/component"] ==
               "scheduler"]
        if s == "small-cluster":
            check(p + "one replica: no PDB (minAvailable 1 would block drains), no leader election",
                  not pdb and arg(args, "--leader-elect") == "false")
        else:
            tl = d["spec"]["template"]["metadata"]["labels"]
            check(p + "a PDB with minAvailable 1 selects the scheduler's pods",
                  len(pdb) == 1 and pdb[0]["spec"]["minAvailable"] == 1 and
                  all(tl.get(k) == v for k, v in pdb[0]["spec"]["selector"]["matchLabels"].items()))
            lease = arg(args, "--lease-name")
            roles = [o for o in objs if o["kind"] == "Role" and any(
                lease in r.get("resourceNames", []) for r in o["rules"])]
            check(p + "leader election on the Lease %s/%s, which a Role of the scheduler names" %
                  (arg(args, "--lease-namespace"), lease),
                  arg(args, "--leader-elect") == "true" and arg(args, "--lease-namespace") == ns
                  and lease == fullname and len(roles) == 1 and
                  arg(args, "--identity") == "$(POD_NAME)")
        check(p + "probes: liveness /healthz, readiness /readyz",
              c["livenessProbe"]["httpGet"]["path"] == "/healthz" and
              c["readinessProbe"]["httpGet"]["path"] == "/readyz")
        sc, psc = c["securityContext"], spec.get("securityContext", {})
        check(p + "the scheduler is non-root (uid %s), read-only root fs, no privilege escalation, "
              "no capabilities" % psc.get("runAsUser"),
              psc.get("runAsNonRoot") and psc.get("runAsUser", 0) > 0 and
              sc.get("readOnlyRootFilesystem") and sc.get("allowPrivilegeEscalation") is False
              and sc["capabilities"]["drop"] == ["ALL"])
        check(p + "the scheduler has resources and priorityClassName system-cluster-critical",
              c.get("resources", {}).get("requests") and
              spec.get("priorityClassName") == "system-cluster-critical")
        dyn = s in ("defaults", "dra", "fake-gpus")
        check(p + "dynamic MIG %s (--dynamic-mig=%s)" % ("on" if dyn else "off", arg(args, "--dynamic-mig")),
              arg(args, "--dynamic-mig") == ("true" if dyn else "false") and
              (arg(args, "--recarve-hold") is not None) == dyn)
        patch = [r for n, r in rules if "scheduler" in n and "nodes" in r["resources"] and
                 "patch" in r["verbs"]]
        check(p + "the scheduler may patch Nodes only with dynamic MIG", bool(patch) == dyn, patch)
    if s == "extender":
        x, svc = comp(objs, "Deployment", "extender"), comp(objs, "Service", "extender")
        check(p + "extender mode: the extender, its Service and a kube-scheduler; no standalone "
              "scheduler", len(x) == 1 and len(svc) == 1 and len(ks) == 1 and not sched)
        xc = x[0]["spec"]["template"]["spec"]["containers"][0]
        check(p + "the extender runs `gpusched extender` on 0.0.0.0:%s" % arg(xc["args"], "--http-port"),
              "extender" in xc["args"] and arg(xc["args"], "--http-bind") == "0.0.0.0")
        svc = svc[0]
        tl = x[0]["spec"]["template"]["metadata"]["labels"]
        check(p + "the extender Service selects the extender's pods on its port",
              all(tl.get(k) == v for k, v in svc["spec"]["selector"].items()) and
              str(svc["spec"]["ports"][0]["port"]) == arg(xc["args"], "--http-port"))
        cm = comp(objs, "ConfigMap", "kube-scheduler")[0]["data"]["config.yaml"]
        url = "http://%s.%s.svc:%s" % (svc["metadata"]["name"], ns, svc["spec"]["ports"][0]["port"])
        check(p + "the kube-scheduler's config calls the extender Service (%s)" % url,
              "urlPrefix: " + url + "\n" in cm, cm)
        check(p + "the kube-scheduler's profile is schedulerName gpusched (a second scheduler)",
              re.search(r"profiles:\n\s*- schedulerName: gpusched\n", cm) is not None)
        lease = re.search(r"resourceName: (\S+)", cm).group(1)
        check(p + "the kube-scheduler leads through its own Lease (%s), which its Role names" % lease,
              any(lease in r.get("resourceNames", []) for n, r in rules))
        kc = ks[0]["spec"]["template"]["spec"]["containers"][0]
        check(p + "the kube-scheduler's image is the value (%s)" % kc["image"],
              kc["image"] == "registry.k8s.io/kube-scheduler:v1.37.2")
        check(p + "PDBs select the extender and the kube-scheduler",
              sorted(x["metadata"]["labels"]["app.kubernetes.io/component"] for x in pdbs) ==
              ["extender", "kube-scheduler"])
    ds = comp(objs, "DaemonSet", "agent")
    if s == "nvidia-stack":
        check(p + "agent.enabled false: no DaemonSet; priorityClasses.create false: no PriorityClass",
              not ds and not [o for o in objs if o["kind"] == "PriorityClass"])
    else:
        check(p + "one agent DaemonSet", len(ds) == 1)
    if ds:
        spec = ds[0]["spec"]["template"]["spec"]
        c = spec["containers"][0]
        args = c["args"]
        vols = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        dp = arg(args, "--device-plugin-dir")
        hp = [v["hostPath"]["path"] for v in vols.values() if "hostPath" in v]
        check(p + "the agent enables its device plugin in agent.kubeletDir (%s), mounted from the host" % dp,
              dp == "/var/lib/kubelet/device-plugins" and dp in hp and dp in mounts.values())
        check(p + "the agent reads the kubelet's pod-resources socket",
              arg(args, "--pod-resources-socket") == "/var/lib/kubelet/pod-resources/kubelet.sock")
        env = {e["name"]: e.get("value") for e in c["env"]}
        want = {"CHECK_INTERVAL": "5" if s == "fake-gpus" else "60", "MEMORY_ERROR_THRESHOLD": "10",
                "TEMPERATURE_THRESHOLD": "90",
                "AUTO_CORDON": "false" if s == "fake-gpus" else "true"}
        check(p + "the article's health knobs: %s" % " ".join("%s=%s" % kv for kv in sorted(want.items())),
              all(env.get(k) == v for k, v in want.items()), env)
        check(p + "the agent serves /metrics on 9400", arg(args, "--metrics-port") == "9400" and
              any(pt["containerPort"] == 9400 for pt in c["ports"]))
        sel = spec.get("nodeSelector", {})
        check(p + "the agent has a node selector (%s), none of its keys a label the agent sets" %
              ",".join(sel), sel and not set(sel) & agent_labels)
        cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
        refs = [(v["configMap"]["name"], [i["key"] for i in v["configMap"].get("items", [])],
                 v["configMap"].get("optional")) for v in vols.values() if "configMap" in v]
        check(p + "every ConfigMap the agent mounts is rendered with its keys, none optional (%s)" %
              ", ".join(n for n, k, o in refs),
              all(n in cms and all(k in cms[n]["data"] for k in ks_) and not o
                  for n, ks_, o in refs), refs)
        fake = s == "fake-gpus"
        check(p + ("fake GPUs: --fake on the fake-gpus ConfigMap, no driver mount, not privileged"
                   if fake else "real GPUs: no --fake, the driver mounted, privileged (MIG)"),
              (arg(args, "--fake") is not None) == fake and ("nvidia" in vols) != fake and
              bool(c["securityContext"].get("privileged")) != fake)
        if fake:
            check(p + "a test node needs only the fake label: nodeSelector %s" % sel,
                  sel == {"gpusched.io/fake-gpus": "true"})
            check(p + "the fake ConfigMap holds the example's 4 GPUs",
                  len(json.loads(cms[fullname + "-fake-gpus"]["data"]["gpus.json"])["gpus"]) == 4)
        dpc = cms[fullname + "-device-plugin-config"]["data"]["config.yaml"]
        if s == "mps":
            check(p + "sharing.mode mps: the device plugin config shares through MPS, 2 replicas, "
                  "no MIG manager", "\n  mps:\n" in dpc and "replicas: 2" in dpc and
                  arg(args, "--mig-config") is None, dpc)
        else:
            check(p + "time-slicing in the device plugin config, migStrategy mixed, MIG manager on",
                  "timeSlicing:" in dpc and "migStrategy: mixed" in dpc and
                  arg(args, "--mig-config") is not None, dpc)
    # DRA: the DeviceClasses, the agent's flags, mounts and RBAC, only with dra.enabled
    dra = s == "dra"
    dcs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "DeviceClass"}
    agent_rules = [r for o in objs if o["kind"] == "ClusterRole" and
                   o["metadata"]["name"].endswith("-agent") for r in o.get("rules", [])]
    slice_rules = [r for r in agent_rules if "resource.k8s.io" in r.get("apiGroups", [])]
    if not dra:
        check(p + "dra.enabled false: no DeviceClass, no --dra on the agent, no RBAC on resource.k8s.io",
              not dcs and not slice_rules and not (ds and "--dra" in
                  ds[0]["spec"]["template"]["spec"]["containers"][0]["args"]), (sorted(dcs), slice_rules))
    else:
        want = {d["metadata"]["name"]: d["spec"] for d in
                yaml.safe_load_all(open(os.path.join(root, "deploy/dra/deviceclasses.yaml"))) if d}
        exprs = {n: [x["cel"]["expression"] for x in o["spec"].get("selectors", [])]
                 for n, o in dcs.items()}
        check(p + "the DeviceClasses %s, resource.k8s.io/v1, each selecting driver gpu.gpusched.io "
              "and its type: %s" % (sorted(dcs), exprs),
              sorted(dcs) == sorted(DRA_CLASSES) and
              all(o["apiVersion"] == "resource.k8s.io/v1" for o in dcs.values()) and
              all(len(e) == 1 and "device.driver == 'gpu.gpusched.io'" in e[0] and
                  "device.attributes['gpu.gpusched.io'].type == '%s'" % n.split(".")[0] in e[0]
                  for n, e in exprs.items()), exprs)
        check(p + "the DeviceClasses are deploy/dra/deviceclasses.yaml's (%s)" % sorted(want),
              {n: o["spec"] for n, o in dcs.items()} == want,
              ({n: o["spec"] for n, o in dcs.items()}, want))
        c = ds[0]["spec"]["template"]["spec"]["containers"][0]
        args = c["args"]
        vols = {v["name"]: v for v in ds[0]["spec"]["template"]["spec"]["volumes"]}
        flags = {f: arg(args, f) for f in ("--dra-plugins-dir", "--dra-registry-dir", "--cdi-dir")}
        check(p + "the agent runs the DRA driver: --dra --dra-dynamic-mig %s" %
              " ".join("%s %s" % kv for kv in flags.items()),
              "--dra" in args and "--dra-dynamic-mig" in args and flags == {
                  "--dra-plugins-dir": "/var/lib/kubelet/plugins",
                  "--dra-registry-dir": "/var/lib/kubelet/plugins_registry",
                  "--cdi-dir": "/var/run/cdi"}, args)
        mounted = {m["mountPath"]: vols[m["name"]].get("hostPath", {}).get("path")
                   for m in c["volumeMounts"] if not m.get("readOnly")}
        check(p + "each of them is mounted writable from the same host path: %s" %
              {f: mounted.get(v) for f, v in flags.items()},
              all(v and mounted.get(v) == v for v in flags.values()), mounted)
        verbs = {(res, v) for r in slice_rules for res in r.get("resources", []) for v in r["verbs"]}
        check(p + "the agent's ClusterRole may list, watch, create, update and delete ResourceSlices "
              "and get ResourceClaims",
              {("resourceslices", v) for v in ("get", "list", "watch", "create", "update", "delete")} |
              {("resourceclaims", "get")} <= verbs, sorted(verbs))
        with open(os.path.join(run, "dra-rbac.json"), "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": o["apiVersion"], "kind": o["kind"], "rules": o["rules"],
                 "metadata": {k: v for k, v in o["metadata"].items() if k in ("name", "labels")}}
                for o in objs if o["kind"] == "ClusterRole" and
                o["metadata"]["name"].endswith("-agent")]}, f)
    pcs = {o["metadata"]["name"]: o["value"] for o in objs if o["kind"] == "PriorityClass"}
    if s != "nvidia-stack":
        check(p + "the article's PriorityClasses: %s" % pcs,
              pcs == {"gpu-critical": 1000000, "gpu-high": 900000, "gpu-low": 100000})

# two releases: the second (release b in namespace other, not creating the PriorityClasses)
# shares no object with the first, in either mode
for s in ("defaults", "extender"):
    if s not in seen_names:
        continue
    b = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
         for o in load(os.path.join(rdir, "b-" + s + ".json"))}
    clash = sorted(seen_names[s] & b)
    check("[two releases, %s] release b in another namespace shares none of the first's %d "
          "objects" % (s, len(seen_names[s])), b and not clash, clash)
sys.exit(1 if fails else 0)
PY
rc=$?
cat "$E2E_DIR/expect.out"
checks=$((checks + $(grep -c '^ok: \|^FAIL: ' "$E2E_DIR/expect.out")))
fails=$((fails + $(grep -c '^FAIL: ' "$E2E_DIR/expect.out")))
[ $rc -ne 0 ] && [ "$(grep -c '^FAIL: ' "$E2E_DIR/expect.out")" -eq 0 ] && fails=$((fails + 1))

# ---- what is rendered runs ----
# the chart's ServiceAccounts and RBAC for real (defaults and extender mode), and a kubeconfig
# per ServiceAccount: the daemons below run with exactly the permissions the chart grants
python3 - "$E2E_DIR/r/defaults.json" "$E2E_DIR/r/extender.json" > "$E2E_DIR/rbac.json" <<'PY'
import json, sys
items = {}
for path in sys.argv[1:]:
    text, dec, pos = open(path).read(), json.JSONDecoder(), 0
    while text[pos:].strip():
        o, pos = dec.raw_decode(text, len(text) - len(text[pos:].lstrip()))
        for i in o.get("items", []) if o.get("kind") == "List" else [o]:
            if i["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
                i["metadata"] = {k: v for k, v in i["metadata"].items()
                                 if k in ("name", "namespace", "labels")}
                items[(i["kind"], i["metadata"]["name"])] = i
json.dump({"apiVersion": "v1", "kind": "List", "items": list(items.values())}, sys.stdout)
PY
check "the chart's ServiceAccounts and RBAC apply (defaults and extender mode)" \
    '"$K" apply -f "$E2E_DIR/rbac.json" > /dev/null'
sa_kubeconfig() { # COMPONENT: a kubeconfig for the chart's ServiceAccount $REL-gpusched-COMPONENT
    local tok
    tok="$("$K" create token "$REL-gpusched-$1" -n $NS --duration 1h)" || return 1
    cat > "$E2E_DIR/$1.sa.kubeconfig" <<C
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "$E2E_SERVER", certificate-authority-data: "$(base64 -w0 "$E2E_DIR/ca.crt")"}
users:
- name: u
  user: {token: "$tok"}
contexts:
- name: e2e
  context: {cluster: e2e, user: u}
current-context: e2e
C
}
for c in scheduler extender agent kube-scheduler; do
    sa_kubeconfig $c || echo "FAIL: no token for the ServiceAccount $REL-gpusched-$c"
done
# a stand-in for NVML where the chart runs the real backend: an A100 in the article's mixed
# layout and a whole one
printf '%s\n' '{"gpus": [{"model": "A100-80GB", "mig": true, "instances": [{"profile": "3g.40gb", "start": 0},' \
    '{"profile": "3g.40gb", "start": 4}]}, {"model": "A100-80GB"}]}' > "$E2E_DIR/standin.json"

# rendered ARGS FILE with the pod's paths mapped to this machine (the ConfigMaps as files, the
# kubelet's directories under $E2E_DIR), --in-cluster to the ServiceAccount's kubeconfig
mapped_args() { # SET CONTAINER COMPONENT
    local run="$E2E_DIR/r/$1.run" cm="$E2E_DIR/r/$1.run/cm/$REL-gpusched"
    sed -e "s#^--in-cluster\$#--kubeconfig\n$E2E_DIR/$3.sa.kubeconfig#" \
        -e "s#/etc/gpusched/mig/#$cm-mig-config/#" \
        -e "s#/etc/gpusched/dp/#$cm-device-plugin-config/#" \
        -e "s#/etc/gpusched/monitor/#$cm-monitor-config/#" \
        -e "s#/etc/gpusched/fake/#$cm-fake-gpus/#" \
        -e "s#^/var/lib/kubelet/#$E2E_DIR/kubelet/#" \
        -e "s#^/var/run/cdi\$#$E2E_DIR/cdi#" \
        -e 's#^--identity=$(POD_NAME)$#--identity=helm-test-0#' \
        "$run/$2.args"
}
mkdir -p "$E2E_DIR/kubelet/device-plugins" "$E2E_DIR/kubelet/pod-resources" \
    "$E2E_DIR/kubelet/plugins" "$E2E_DIR/kubelet/plugins_registry" "$E2E_DIR/cdi"
readyz() { # PORT SECONDS: /readyz answers 200 within SECONDS
    local end=$(( $(date +%s) + $2 ))
    while [ "$(date +%s)" -le $end ]; do
        curl -sf "http://127.0.0.1:$1/readyz" > /dev/null && return 0
        sleep 0.2
    done
    return 1
}
# SIGTERM, then SIGKILL after a second: the scheduler and the extender take seconds to stop
# (their watches end first), which this test need not wait for
stop() {
    kill "$1" 2>/dev/null
    for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

for v in $sets; do
    run="$E2E_DIR/r/$v.run"
    mig="$run/cm/$REL-gpusched-mig-config/config.yaml"
    [ -f "$mig" ] && check "[$v] the rendered mig-parted config passes gpusched mig validate" \
        '"$GS" mig validate "$mig" > "$E2E_DIR/out" 2>&1 || { cat "$E2E_DIR/out"; false; }'
    if [ -f "$run/agent.args" ]; then
        # the agent as the DaemonSet runs it, on a Node of its own, with the chart's RBAC
        node="gpu-helm-$v"
        "$K" create -f - > /dev/null <<N
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "$node",
 "labels": {"kubernetes.io/hostname": "$node", "feature.node.kubernetes.io/pci-10de.present": "true"}}}
N
        # the agent's ClusterRole as this set renders it (with dra.enabled: ResourceSlices)
        [ -f "$run/dra-rbac.json" ] && check "[$v] the agent's ClusterRole with DRA applies" \
            '"$K" apply -f "$run/dra-rbac.json" > /dev/null'
        port=$(e2e_free_port)
        mapfile -t args < <(mapped_args $v agent agent | sed "s#^9400\$#$port#")
        grep -qx -- --fake "$run/agent.args" || args+=(--fake "$E2E_DIR/standin.json")
        NODE_NAME="$node" CHECK_INTERVAL=0.5 "$GS" "${args[@]}" --metrics-bind 127.0.0.1 \
            > "$E2E_DIR/agent-$v.log" 2>&1 &
        apid=$!
        inv=""
        for i in $(seq 1 50); do
            inv="$("$K" get node "$node" -o jsonpath='{.metadata.annotations.gpusched\.io/inventory}')"
            [ -n "$inv" ] && break
            sleep 0.2
        done
        check "[$v] the agent runs on its rendered command line and ConfigMaps, and publishes its node's inventory with the chart's RBAC" \
            '[ -n "$inv" ] && kill -0 $apid || { tail -5 "$E2E_DIR/agent-$v.log"; false; }'
        curl -sf "http://127.0.0.1:$port/metrics" > "$E2E_DIR/scrape-agent-$v.txt"
        check "[$v] its /metrics carry the monitor config's labels (cluster=\"production\")" \
            'grep -q "^gpu_utilization{.*cluster=\"production\"" "$E2E_DIR/scrape-agent-$v.txt"'
        if grep -qx -- --dra "$run/agent.args"; then
            # the DRA driver: the kubelet finds its registration socket, the plugin's socket is
            # where the registration says, and its Node's pool of ResourceSlices is published
            drv=gpu.gpusched.io
            check "[$v] the agent's DRA plugin sockets: plugins_registry/$drv-reg.sock and plugins/$drv/dra.sock" \
                'for i in $(seq 1 50); do [ -S "$E2E_DIR/kubelet/plugins_registry/$drv-reg.sock" ] &&
                     [ -S "$E2E_DIR/kubelet/plugins/$drv/dra.sock" ] && break; sleep 0.2; done
                 [ -S "$E2E_DIR/kubelet/plugins_registry/$drv-reg.sock" ] && [ -S "$E2E_DIR/kubelet/plugins/$drv/dra.sock" ]'
            draslices() {
                "$K" get resourceslices -o json --field-selector "spec.driver=$drv,spec.nodeName=$node" |
                    python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
names = sorted(d["name"] for s in items for d in s["spec"].get("devices") or [])
sets = sorted(c["name"] for s in items for c in s["spec"].get("sharedCounters") or [])
whole = [n for n in names if "-" not in n[4:]]
static = [n for n in names if "-mig-" in n]
parts = [n for n in names if "-part-" in n]
print("%d ResourceSlices in pool %s: %s, %s, %d placements on %s" % (len(items),
      sorted({s["spec"]["pool"]["name"] for s in items}), whole, static, len(parts), sets))
# the stand-in: GPU 0 carved 3g.40gb at 0 and 4 (static), GPU 1 whole (partitionable)
ok = {s["spec"]["pool"]["name"] for s in items} == {sys.argv[1]} and whole == ["gpu-1"] and \
    static == ["gpu-0-mig-3g-40gb-0", "gpu-0-mig-3g-40gb-4"] and sets == ["gpu-1-counters"] and \
    "gpu-1-part-7g-80gb-0" in parts
sys.exit(0 if ok else 1)' "$node"
            }
            for i in $(seq 1 50); do draslices > /dev/null && break; sleep 0.2; done
            check "[$v] the agent publishes its Node's ResourceSlices: $(draslices)" draslices
        fi
        check "[$v] the agent was refused nothing by the API server (no 403 in its log)" \
            '! grep -i "forbidden\|403" "$E2E_DIR/agent-$v.log"'
        stop $apid
        # the next sets' agents run with the ClusterRole of the defaults again
        [ -f "$run/dra-rbac.json" ] && "$K" apply -f "$E2E_DIR/rbac.json" > /dev/null
    fi
    if [ -f "$run/scheduler.args" ]; then
        port=$(e2e_free_port)
        mapfile -t args < <(mapped_args $v scheduler scheduler | sed "s#^--http-port=.*#--http-port=$port#")
        "$GS" "${args[@]}" --http-bind 127.0.0.1 > "$E2E_DIR/scheduler-$v.log" 2>&1 &
        spid=$!
        check "[$v] the scheduler runs on its rendered command line and becomes ready with the chart's RBAC" \
            'readyz $port 15 || { tail -5 "$E2E_DIR/scheduler-$v.log"; false; }'
        curl -sf "http://127.0.0.1:$port/metrics" > "$E2E_DIR/scrape-scheduler-$v.txt"
        if grep -qx -- --leader-elect=true "$run/scheduler.args"; then
            check "[$v] and leads through the Lease $NS/$REL-gpusched" \
                'for i in $(seq 1 50); do [ "$("$K" get lease -n $NS $REL-gpusched -o jsonpath="{.spec.holderIdentity}" 2>/dev/null)" = helm-test-0 ] && break; sleep 0.2; done; [ $i -lt 50 ]'
        fi
        # the policy objects (queues, quotas, PDBs, gangs, MigManagers) are read by their own
        # thread: give it a moment, then nothing may have been refused
        sleep 1
        check "[$v] the scheduler was refused nothing by the API server (no 403 in its log)" \
            '! grep -i "forbidden\|403" "$E2E_DIR/scheduler-$v.log"'
        stop $spid
        "$K" delete lease -n $NS $REL-gpusched --ignore-not-found > /dev/null
    fi
    if [ -f "$run/extender.args" ]; then
        port=$(e2e_free_port)
        mapfile -t args < <(mapped_args $v extender extender |
            sed -e "s#^--http-port=.*#--http-port=$port#" -e "s#^--http-bind=.*#--http-bind=127.0.0.1#")
        "$GS" "${args[@]}" > "$E2E_DIR/extender-$v.log" 2>&1 &
        xpid=$!
        check "[$v] the extender runs on its rendered command line and becomes ready with the chart's RBAC" \
            'readyz $port 15 || { tail -5 "$E2E_DIR/extender-$v.log"; false; }'
        sleep 1
        check "[$v] the extender was refused nothing by the API server (no 403 in its log)" \
            '! grep -i "forbidden\|403" "$E2E_DIR/extender-$v.log"'
        stop $xpid
    fi
    ksc="$run/cm/$REL-gpusched-kube-scheduler/config.yaml"
    if [ -f "$ksc" ]; then
        # the stock kube-scheduler on the rendered config, with its ServiceAccount's RBAC: it
        # syncs its caches and takes its Lease
        { cat "$ksc"; printf 'clientConnection:\n  kubeconfig: %s\n' "$E2E_DIR/kube-scheduler.sa.kubeconfig"; } \
            > "$E2E_DIR/ks.yaml"
        "$E2E_BIN/kube-scheduler" --config "$E2E_DIR/ks.yaml" --secure-port 0 \
            > "$E2E_DIR/kube-scheduler-$v.log" 2>&1 &
        kpid=$!
        check "[$v] the kube-scheduler accepts its rendered config and takes its Lease with the chart's RBAC" \
            'for i in $(seq 1 100); do [ -n "$("$K" get lease -n $NS $REL-gpusched-kube-scheduler -o jsonpath="{.spec.holderIdentity}" 2>/dev/null)" ] && break; kill -0 $kpid 2>/dev/null || break; sleep 0.2; done; [ $i -lt 100 ] && kill -0 $kpid || { tail -5 "$E2E_DIR/kube-scheduler-$v.log"; false; }'
        check "[$v] the kube-scheduler was refused nothing by the API server" \
            '! grep -i "forbidden" "$E2E_DIR/kube-scheduler-$v.log"'
        stop $kpid
    fi
done

# ---- the metrics path: every query names a series the agent or the scheduler exports ----
# the alert rules (PrometheusRule and the rules ConfigMap), the prometheus-adapter rules and the
# Grafana dashboard, rendered with everything on; each PromQL expression parsed by Prometheus'
# own parser (promqlcheck), and each metric it names found in the live scrapes above (a family
# the agent or scheduler declares), but the applications' own metrics the adapter maps
PQ="$E2E_BIN/promqlcheck-v0.316.0"
check "helm template renders the monitoring objects (PodMonitors, PrometheusRule, rules, adapter, dashboard)" \
    '"$HELM" template $REL "$CHART" -n $NS --set monitoring.podMonitor.enabled=true \
        --set monitoring.prometheusRule.enabled=true > "$E2E_DIR/r/monitoring.yaml"'
python3 - "$E2E_DIR/r/monitoring.yaml" "$E2E_DIR/r/defaults.json" "$E2E_DIR/queries" \
    "$E2E_DIR/structure.txt" <<'P'
import json, re, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
pods = {}
for o in json.load(open(sys.argv[2])).get("items", []):
    spec = o.get("spec", {}).get("template", {})
    if spec:
        pods[o["metadata"]["name"]] = spec
out, notes = [], []
def add(where, expr):
    out.append((where, expr))
def rules(groups, where):
    for g in groups:
        for r in g["rules"]:
            add("%s %s" % (where, r.get("alert") or r.get("record")), r["expr"])
app = []
for d in docs:
    k, name = d["kind"], d["metadata"]["name"]
    if k == "PrometheusRule":
        rules(d["spec"]["groups"], "PrometheusRule")
    elif k == "ConfigMap" and name.endswith("alert-rules"):
        rules(yaml.safe_load(d["data"]["gpusched-rules.yaml"])["groups"], "rules ConfigMap")
    elif k == "ConfigMap" and name.endswith("adapter-rules"):
        for r in yaml.safe_load(d["data"]["config.yaml"])["rules"]:
            sub = lambda q: q.replace("<<.Series>>", r["name"]["as"]).replace(
                "<<.LabelMatchers>>", 'namespace="x"').replace("<<.GroupBy>>", "pod")
            add("adapter " + r["name"]["as"] + " seriesQuery", r["seriesQuery"])
            add("adapter " + r["name"]["as"] + " metricsQuery", sub(r["metricsQuery"]))
    elif k == "ConfigMap" and any(key.endswith(".json") for key in d.get("data", {})):
        for key, text in d["data"].items():
            if not key.endswith(".json"):
                continue
            def walk(x):
                if isinstance(x, dict):
                    if isinstance(x.get("expr"), str) and x["expr"]:
                        add("dashboard %s: %s" % (key, x.get("legendFormat") or x.get("refId", "")), x["expr"])
                    for v in x.values(): walk(v)
                elif isinstance(x, list):
                    for v in x: walk(v)
            walk(json.loads(text))
    elif k == "PodMonitor":
        # it selects the chart's pods and names a port they declare
        sel = d["spec"]["selector"]["matchLabels"]
        port = d["spec"]["podMetricsEndpoints"][0]["port"]
        hit = [n for n, t in pods.items() if all(t["metadata"]["labels"].get(a) == b for a, b in sel.items())]
        ports = [p.get("name") for n in hit for c in pods[n]["spec"]["containers"] for p in c.get("ports", [])]
        notes.append("%s\t%s\t%s" % (name, ",".join(hit) or "-", "yes" if port in ports else "no"))
with open(sys.argv[3], "w") as f:
    for where, expr in out:
        f.write(json.dumps([where, expr]) + "\n")
open(sys.argv[4], "w").write("\n".join(notes) + "\n")
P
while IFS=$'\t' read -r pm hit port; do
    check "PodMonitor $pm selects the chart's pods ($hit) on a port they declare" '[ "$hit" != - ] && [ "$port" = yes ]'
done < "$E2E_DIR/structure.txt"
python3 -c 'import json,sys; [print(json.dumps(json.loads(l)[1])) for l in open(sys.argv[1])]' "$E2E_DIR/queries" |
    "$PQ" > "$E2E_DIR/parsed" 2>&1
check "every alert, adapter and dashboard query parses ($(wc -l < "$E2E_DIR/queries") queries, Prometheus' parser)" \
    '! grep "\"error\"" "$E2E_DIR/parsed"'
cat "$E2E_DIR"/scrape-agent-defaults.txt "$E2E_DIR"/scrape-scheduler-defaults.txt |
    sed -n 's/^# TYPE \([a-zA-Z_:][a-zA-Z0-9_:]*\) .*/\1/p' | sort -u > "$E2E_DIR/families"
apps="$(sed -n '/applicationMetrics:/s/.*\[\(.*\)\].*/\1/p' "$CHART/values.yaml" | tr -d ' ' | tr , '\n')"
python3 - "$E2E_DIR/queries" "$E2E_DIR/parsed" "$E2E_DIR/families" "$apps" > "$E2E_DIR/names" <<'P'
import json, sys
qs = [json.loads(l) for l in open(sys.argv[1])]
ps = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
fam = set(open(sys.argv[3]).read().split())
apps = set(sys.argv[4].split())
for (where, _), p in zip(qs, ps):
    for m in p.get("metrics", []):
        # a histogram's series are its family's name with _bucket, _sum or _count
        base = m[:m.rfind("_")] if m.endswith(("_bucket", "_sum", "_count")) else m
        print("%s\t%s\t%s" % (where, m, "app" if m in apps else "yes" if m in fam or base in fam else "no"))
P
while IFS=$'\t' read -r where m found; do
    case "$found" in
    yes) check "$where: $m is exported (live scrape of the agent or the scheduler)" true ;;
    app) check "$where: $m is the application's own metric (monitoring.adapterRules.applicationMetrics)" true ;;
    *) check "$where: $m is exported (live scrape of the agent or the scheduler)" false ;;
    esac
done < "$E2E_DIR/names"

# ---- bad values are refused, naming the field ----
# each case: a values file, then what the error must contain
bad=0
while IFS='|' read -r name expect yaml; do
    [ -z "$name" ] && continue
    printf '%b\n' "$yaml" > "$E2E_DIR/bad.yaml"
    if "$HELM" template $REL "$CHART" -n $NS -f "$E2E_DIR/bad.yaml" > /dev/null 2> "$E2E_DIR/bad.err"; then
        check "bad values ($name) are refused" false
    else
        check "bad values ($name) are refused: $(grep -m1 -F -- "$expect" "$E2E_DIR/bad.err" | sed 's/^[- ]*//')" \
            'grep -qF -- "$expect" "$E2E_DIR/bad.err" || { cat "$E2E_DIR/bad.err"; false; }'
    fi
    bad=$((bad + 1))
done <<'B'
a negative replica count|at '/scheduler/replicas': minimum|scheduler:\n  replicas: -1
a wrong type|at '/scheduler/replicas': got string, want integer|scheduler:\n  replicas: two
an unknown key (a typo)|at '/scheduler': additional properties 'replica' not allowed|scheduler:\n  replica: 3
an unknown top-level key|additional properties 'schedular' not allowed|schedular:\n  mode: standalone
a bad enum|at '/scheduler/mode': value must be one of|scheduler:\n  mode: both
a bad pull policy|at '/image/pullPolicy'|image:\n  pullPolicy: Sometimes
a relative kubeletDir|at '/agent/kubeletDir'|agent:\n  kubeletDir: var/lib/kubelet
a toleration operator|at '/agent/tolerations/0/operator'|agent:\n  tolerations:\n    - {key: x, operator: Maybe}
a port out of range|at '/agent/metrics/port': maximum|agent:\n  metrics:\n    port: 70000
MPS with migStrategy mixed|at '/sharing/migStrategy'|sharing:\n  mode: mps\n  migStrategy: mixed
one replica of sharing|at '/sharing/replicas': minimum|sharing:\n  replicas: 1
a monitor label gpusched sets itself|at '/monitor/labels/pod'|monitor:\n  labels:\n    pod: x
an unknown metric|at '/monitor/metrics/0'|monitor:\n  metrics: [gpu_fan_speed]
a bad MIG profile|at '/migConfig/configs/bad/0/mig-devices': additional properties '9z'|migConfig:\n  configs:\n    bad:\n      - {devices: all, mig-enabled: true, mig-devices: {9z: 1}}
an unknown field in the fake spec|at '/agent/fake/spec/gpus/0': additional properties 'colour'|agent:\n  fake:\n    enabled: true\n    spec:\n      gpus: [{model: H100-80GB, colour: green}]
a bad extender timeout|at '/extender/httpTimeout'|extender:\n  httpTimeout: 5 seconds
a priority above user classes|at '/priorityClasses/classes/0/value': maximum|priorityClasses:\n  create: true\n  classes: [{name: x, value: 2000000000}]
a PDB that blocks drains|scheduler.podDisruptionBudget.minAvailable (1) must be less than scheduler.replicas (1)|scheduler:\n  replicas: 1
two replicas without leader election|scheduler.leaderElection.enabled is false with scheduler.replicas 2|scheduler:\n  leaderElection:\n    enabled: false
dynamic MIG without MIG devices advertised|scheduler.dynamicMig.enabled needs sharing.migStrategy mixed|sharing:\n  migStrategy: none
a re-carve hold over the scheduler's 1d|scheduler.dynamicMig.recarveHold 3d is longer than 1d|scheduler:\n  dynamicMig:\n    enabled: true\n    recarveHold: 3d
a re-carve hold over 1d in hours|scheduler.dynamicMig.recarveHold 25h is longer than 1d|scheduler:\n  dynamicMig:\n    enabled: true\n    recarveHold: 25h
B

echo "checked: $checks checks over the values sets ($sets) and $bad bad values files in ${SECONDS} s"
[ $fails -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed ($fails checks failed)"
[ $fails -eq 0 ]
