#!/usr/bin/env bash
# The scheduler's dashboard (GET /ui) in a real browser: Debian's headless Chromium, driven
# through chromedriver with the W3C WebDriver protocol (tests/e2e/webdriver.py), loads /ui
# from gpusched running against the real control plane. Three GPU nodes as NVIDIA's stack
# labels them (an H100 carved all-3g.40gb, an A100 carved mixed, a time-sliced L40S), two
# GPUQueues, eight bound pods and one that waits for a GPU model no node has. The page's DOM
# is checked against the API: every Node is shown; every MIG slice of the gpusched agent's
# inventory is shown, and each pod holds exactly the slices (or GPUs, or replicas) its
# gpusched.io/devices annotation names, no other slice has a holder; the waiting pod is
# listed with the reason /debug/pending gives; both queues are shown, each resource row with
# the deserved, used and borrowed figures (data attributes and the text) that /ui/state reports
# and that follow from the API: deserved from the GPUQueue's spec, used from the bound pods of
# its namespaces (GPUs, MIG instances, GPU-equivalents: a MIG profile's larger share of a GPU's
# 7 compute and 8 memory slices), borrowed what is used beyond deserved (team-a borrows 0.5
# GPU-equivalents, team-b 1 GPU); the page loaded nothing from anywhere but the scheduler.
# Then a pod that fits is created: the page, still open and never reloaded, shows it on the
# slice its annotation names, lists its bind and its queue's new figures. With
# every 3g.40gb slot taken, a gpu-critical pod preempts: the page lists the preemption and its
# victims.
# A screenshot of the page is kept as a test artifact (test-artifacts/dashboard.png beside
# the gpusched binary; its path is printed); an empty one fails the test.
set -u
GS="$1"; DRIVER="$2"
. "$(dirname "$0")/cluster.sh"
CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver
[ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ] ||
    skip "no $CHROMIUM or $CHROMEDRIVER (Debian's chromium and chromium-driver: scripts/install-deps.sh)"
e2e_up || exit 1
K="$E2E_BIN/kubectl"
. "$(dirname "$0")/tenancy.sh"
ART="$(cd "$(dirname "$GS")" && pwd)/test-artifacts"
mkdir -p "$ART"
rm -f "$ART/dashboard.png"

"$DRIVER" nodes <<'S' || exit 1
1 h100 H100-80GB 2 mig:all-3g.40gb
1 a100 A100-80GB 2 mig:mixed
1 l40s L40S 2 ts:4
S
tn_crds || exit 1
for ns in team-a team-b; do
    "$K" create namespace $ns > /dev/null
done
"$K" apply -f - > /dev/null <<'Q' || exit 1
apiVersion: gpusched.io/v1alpha1
kind: GPUQueue
metadata: {name: team-a}
spec:
  namespaces: [team-a]
  deserved: {gpusched.io/gpu-units: 1}
  overQuotaWeight: 1
---
apiVersion: gpusched.io/v1alpha1
kind: GPUQueue
metadata: {name: team-b}
spec:
  namespaces: [team-b]
  deserved: {nvidia.com/gpu: 1}
  overQuotaWeight: 2
Q
tn_start || exit 1
tn_pods team-a infer 0 3 - nvidia.com/mig-3g.40gb=1 | "$K" create -f - > /dev/null
tn_pods team-b embed 0 3 - nvidia.com/mig-1g.10gb=1 | "$K" create -f - > /dev/null
tn_pods team-b notebook 0 2 - nvidia.com/gpu=1 | "$K" create -f - > /dev/null
python3 - <<'P' | "$K" create -f - > /dev/null
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b200", "namespace": "team-a"},
  "spec": {"schedulerName": "gpusched", "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-B200"},
           "containers": [{"name": "c", "image": "registry.invalid/none:1",
                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}))
P
bound_total() { [ "$(( $(tn_bound team-a) + $(tn_bound team-b) ))" -ge "$1" ]; }
tn_wait 60 bound_total 8 || { tn_fail "$(( $(tn_bound team-a) + $(tn_bound team-b) )) pods bound, want 8"; tn_done; }
has_verdict() {
    curl -sf "http://127.0.0.1:$TN_PORT/debug/pending" |
        python3 -c 'import json,sys; sys.exit(0 if any(r["pod"] == "b200" for r in json.load(sys.stdin)) else 1)'
}
tn_wait 30 has_verdict || { tn_fail "no verdict for team-a/b200 in /debug/pending"; tn_done; }

python3 - "$K" "$TN_PORT" "$ART/dashboard.png" "$CHROMEDRIVER" "$CHROMIUM" "$E2E_DIR" "$E2E_SRC" \
    <<'P' || TN_OK=1
import json, subprocess, sys, time, urllib.request
K, port, shot, chromedriver, chromium, d, src = sys.argv[1:8]
sys.path.insert(0, src)
from webdriver import Browser

base = "http://127.0.0.1:%s" % port
bad = 0
def check(ok, what):
    global bad
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    bad += not ok

def kget(*a):
    return json.loads(subprocess.check_output([K, "get", *a, "-o", "json"]))

def expected():
    """From the API: (node, slice) -> holder for MIG, (node/gpu) -> holders otherwise."""
    slices, shares = {}, {}
    for p in kget("pods", "-A")["items"]:
        node = p["spec"].get("nodeName")
        dev = p["metadata"].get("annotations", {}).get("gpusched.io/devices", "")
        if not node or not dev:
            continue
        who = "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
        kind, _, toks = dev.partition("=")
        for t in toks.split(","):
            if kind == "mig":
                slices[(node, t)] = who
            else:
                shares.setdefault("%s/%s" % (node, t.split(":")[0]), set()).add(who)
    return slices, shares

JS = """
const q = s => [...document.querySelectorAll(s)];
return {
  status: document.getElementById('status').textContent,
  marker: window.__gsMarker || 0,
  nodes: q('[data-node]').map(e => e.dataset.node),
  slices: q('[data-slice]').map(e => ({node: e.closest('[data-node]').dataset.node,
                                       slice: e.dataset.slice, holder: e.dataset.holder})),
  shares: q('.share [data-holder]').map(e => ({gpu: e.closest('[data-gpu]').dataset.gpu,
                                               holder: e.dataset.holder})),
  pending: q('[data-pending-pod]').map(e => ({pod: e.dataset.pendingPod, reason: e.dataset.reason,
                                               text: e.textContent})),
  queues: q('[data-queue]').map(e => e.dataset.queue),
  qres: q('[data-queue] [data-resource]').map(e => ({queue: e.closest('[data-queue]').dataset.queue,
        resource: e.dataset.resource, deserved: e.dataset.deserved, used: e.dataset.used,
        borrowed: e.dataset.borrowed, text: e.textContent,
        borrowing: e.closest('[data-queue]').dataset.borrowing})),
  events: q('[data-event]').map(e => ({kind: e.dataset.event, text: e.textContent})),
  resources: performance.getEntriesByType('resource').map(r => r.name),
};
"""

# GPU-equivalents of a MIG instance: the larger of its shares of the GPU's 7 compute and 8
# memory slices (the A100's and H100's geometry), counted in thousandths per pod
UNITS = {"3g.40gb": max(3 / 7, 4 / 8), "1g.10gb": max(1 / 7, 1 / 8)}
def api_queues():
    """From the API: queue -> resource -> (deserved, used, borrowed)."""
    pods = kget("pods", "-A")["items"]
    out = {}
    for q in kget("gpuqueues")["items"]:
        spec = q["spec"]
        des = {k: float(v) for k, v in spec.get("deserved", {}).items()}
        used = {}
        for p in pods:
            if p["metadata"]["namespace"] not in spec.get("namespaces", []) or \
                    not p["spec"].get("nodeName") or p["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            for c in p["spec"]["containers"]:
                for k, v in c.get("resources", {}).get("limits", {}).items():
                    if k == "nvidia.com/gpu":
                        u = int(v)
                    elif k.startswith("nvidia.com/mig-"):
                        u = int(v) * UNITS[k[len("nvidia.com/mig-"):]]
                    else:
                        continue
                    used[k] = used.get(k, 0) + int(v)
                    g = "gpusched.io/gpu-units"
                    used[g] = used.get(g, 0) + int(u * 1000 + 0.5) / 1000
        out[q["metadata"]["name"]] = {
            r: (des.get(r, 0), used.get(r, 0), max(used.get(r, 0) - des.get(r, 0), 0))
            for r in set(des) | set(spec.get("limit", {})) | {k for k, v in used.items() if v}}
    return out

def fmt(v):  # the page's number format
    return str(round(v)) if abs(v - round(v)) < 1e-9 else "%.2f" % v

def queues_match(dom):
    """The page's queue rows against /ui/state and the API: (ok, page, state, api)."""
    st = json.load(urllib.request.urlopen(base + "/ui/state"))
    state = {q["name"]: {r["resource"]: (r["deserved"], r["used"], r["borrowed"]) for r in q["resources"]}
             for q in st["queues"]}
    page, text_ok = {}, True
    for r in dom["qres"]:
        v = (float(r["deserved"]), float(r["used"]), float(r["borrowed"]))
        page.setdefault(r["queue"], {})[r["resource"]] = v
        text_ok &= (fmt(v[1]) + " / " + fmt(v[0])) in r["text"] and \
            ((" (+" + fmt(v[2]) + ")") in r["text"]) == (v[2] > 0)
    borrowing = {r["queue"]: r["borrowing"] for r in dom["qres"]}
    api = api_queues()
    def same(a, b):
        return a.keys() == b.keys() and all(
            a[q].keys() == b[q].keys() and
            all(abs(x - y) < 1e-6 for r in a[q] for x, y in zip(a[q][r], b[q][r])) for q in a)
    ok = same(page, state) and same(state, api) and text_ok and all(
        borrowing.get(q) == ("true" if any(v[2] > 0 for v in rows.values()) else "false")
        for q, rows in page.items())
    return ok, page, state, api

def show_queues(rows):
    return "; ".join("%s: %s" % (q, ", ".join("%s used %s / deserved %s, borrowed %s" %
                     (r, fmt(v[1]), fmt(v[0]), fmt(v[2])) for r, v in sorted(rows[q].items())))
                     for q in sorted(rows))

def wait_queues(b, seconds):
    """Poll the open page until its queue figures agree with /ui/state and the API."""
    end = time.time() + seconds
    while True:
        dom = b.script(JS)
        ok, page, state, api = queues_match(dom)
        if ok or time.time() > end:
            return ok, page, state, api
        time.sleep(0.3)

def dom_matches(dom, slices, shares):
    got = {(s["node"], s["slice"]): s["holder"] for s in dom["slices"] if s["holder"]}
    gsh = {}
    for s in dom["shares"]:
        gsh.setdefault(s["gpu"], set()).add(s["holder"])
    return got == slices and gsh == shares, got, gsh

with Browser(chromedriver, chromium, log=d + "/chromedriver.log") as b:
    b.open(base + "/ui")
    end = time.time() + 30
    dom = b.script(JS)
    while time.time() < end and (dom["status"] != "live" or not dom["nodes"]):
        time.sleep(0.3)
        dom = b.script(JS)
    check(dom["status"] == "live", "the page reads /ui/state (status %r)" % dom["status"])
    nodes = sorted(n["metadata"]["name"] for n in kget("nodes")["items"])
    check(sorted(dom["nodes"]) == nodes, "every Node is shown: %s" % dom["nodes"])
    # every MIG instance of each node's inventory is a slice of the page
    for n in kget("nodes")["items"]:
        inv = json.loads(n["metadata"]["annotations"]["gpusched.io/inventory"])
        want = sorted("%d:%s" % (g["i"], x.split(";")[0]) for g in inv["gpus"] for x in g.get("mig", []))
        have = sorted(s["slice"] for s in dom["slices"] if s["node"] == n["metadata"]["name"])
        check(want == have, "%s: slices %s" % (n["metadata"]["name"], " ".join(have) or "none (no MIG)"))
    slices, shares = expected()
    ok, got, gsh = dom_matches(dom, slices, shares)
    check(ok, "each pod holds what its gpusched.io/devices names: %d slices, %d shared GPUs"
          % (len(slices), len(shares)))
    if not ok:
        print("   want %s %s\n   page %s %s" % (slices, shares, got, gsh))
    pend = json.load(urllib.request.urlopen(base + "/debug/pending"))
    want = {"%s/%s" % (r["namespace"], r["pod"]): r["reason"] for r in pend}
    page = {p["pod"]: p["reason"] for p in dom["pending"]}
    check(page.get("team-a/b200") == want.get("team-a/b200") == "selector",
          "team-a/b200 waits for '%s' on the page, '%s' in /debug/pending" %
          (page.get("team-a/b200"), want.get("team-a/b200")))
    msg = next((p["text"] for p in dom["pending"] if p["pod"] == "team-a/b200"), "")
    want_msg = next((r["message"] for r in pend if r["pod"] == "b200"), None)
    check(want_msg and want_msg in msg, "with /debug/pending's message: %s" % want_msg)
    check(sorted(dom["queues"]) == ["team-a", "team-b"], "queues shown: %s" % dom["queues"])
    ok, page, state, api = wait_queues(b, 10)
    check(ok and page.get("team-a", {}).get("gpusched.io/gpu-units", (0, 0, 0))[2] > 0 and
          page.get("team-b", {}).get("nvidia.com/gpu", (0, 0, 0))[2] > 0,
          "the queues' figures on the page are /ui/state's and the API's: %s" % show_queues(page))
    if not ok:
        print("   page  %s\n   state %s\n   api   %s" % (page, state, api))
        print("   rows  %s" % [(r["queue"], r["resource"], r["text"]) for r in dom["qres"]])
    foreign = [r for r in dom["resources"] if not r.startswith(base + "/")]
    check(not foreign, "the page loaded only from the scheduler (%d requests; others: %s)"
          % (len(dom["resources"]), foreign))
    # a pod that fits, while the page stays open
    b.script("window.__gsMarker = 42; return 0;")
    subprocess.run([K, "create", "-f", "-"], check=True, capture_output=True, input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late", "namespace": "team-a"},
        "spec": {"schedulerName": "gpusched", "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                 "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                 "resources": {"limits": {"nvidia.com/mig-3g.40gb": "1"}}}]}}).encode())
    dev, node = "", ""
    end = time.time() + 60
    while time.time() < end and not dev:
        p = kget("pod", "-n", "team-a", "late")
        dev = p["metadata"].get("annotations", {}).get("gpusched.io/devices", "")
        node = p["spec"].get("nodeName", "")
        time.sleep(0.3)
    check(dev.startswith("mig="), "team-a/late bound to %s %s" % (node, dev))
    end = time.time() + 30
    while time.time() < end:
        dom = b.script(JS)
        if any(s["node"] == node and "mig=" + s["slice"] == dev and s["holder"] == "team-a/late"
               for s in dom["slices"]):
            break
        time.sleep(0.3)
    held = [s for s in dom["slices"] if s["holder"] == "team-a/late"]
    check(len(held) == 1 and (held[0]["node"], "mig=" + held[0]["slice"]) == (node, dev),
          "the open page shows team-a/late on %s" % (held and "%s %s" % (held[0]["node"], held[0]["slice"])))
    check(dom["marker"] == 42, "without a reload")
    check(any(e["kind"] == "bind" and "team-a/late" in e["text"] for e in dom["events"]),
          "its bind is listed among the recent events")
    ok, page, state, api = wait_queues(b, 10)
    check(ok and api["team-a"].get("nvidia.com/mig-3g.40gb", (0, 0, 0))[1] == 4,
          "its queue's new figures on the open page: %s" % show_queues({"team-a": page.get("team-a", {})}))
    if not ok:
        print("   page  %s\n   state %s\n   api   %s" % (page, state, api))
    slices, shares = expected()
    ok, got, gsh = dom_matches(dom, slices, shares)
    check(ok, "every holder still matches the API")
    # every 3g.40gb slot taken, then a gpu-critical one: the page lists the preemption
    def pod(name, pc=None):
        spec = {"schedulerName": "gpusched", "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                "containers": [{"name": "c", "image": "registry.invalid/none:1",
                                "resources": {"limits": {"nvidia.com/mig-3g.40gb": "1"}}}]}
        if pc:
            spec["priorityClassName"] = pc
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}
    subprocess.run([K, "create", "-f", "-"], check=True, capture_output=True, input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [pod("fill-0"), pod("fill-1")]}).encode())
    end = time.time() + 60
    while time.time() < end and len(expected()[0]) < 9:
        time.sleep(0.3)
    check(len(expected()[0]) == 9, "every MIG slot of 3g.40gb is taken (%d slices held)" % len(expected()[0]))
    subprocess.run([K, "create", "priorityclass", "gpu-critical", "--value", "1000000"], check=True,
                   capture_output=True)
    subprocess.run([K, "create", "-f", "-"], check=True, capture_output=True,
                   input=json.dumps(pod("critical", "gpu-critical")).encode())
    end = time.time() + 60
    pre = []
    while time.time() < end and not pre:
        dom = b.script(JS)
        pre = [e["text"] for e in dom["events"] if e["kind"] == "preempt" and "team-a/critical" in e["text"]]
        time.sleep(0.3)
    check(bool(pre), "the open page lists the preemption: %s" % (pre and pre[0].strip()))
    named = pre[0].split("evicted ", 1)[-1].rsplit(" (", 1)[0].split(", ") if pre else []
    left = {p["metadata"]["name"]: p for p in kget("pods", "-n", "team-a")["items"]}
    gone = [v for v in named if v.startswith("team-a/") and
            (v[7:] not in left or left[v[7:]]["metadata"].get("deletionTimestamp"))]
    check(named and gone == named, "its victims %s are gone or leaving" % named)
    png = b.screenshot()
    open(shot, "wb").write(png)
check(len(png) > 1000 and png[:8] == b"\x89PNG\r\n\x1a\n", "screenshot: %s (%d bytes)" % (shot, len(png)))
sys.exit(1 if bad else 0)
P
tn_done
