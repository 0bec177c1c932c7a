#!/usr/bin/env bash
# Helpers for the tests that feed tests/e2e/tools/kschedcheck (kube-scheduler's filter plugins
# judging placements), sourced after cluster.sh (and e2e_up).
#
# KS_CHECK: the checker built from this checkout's source (build-control-plane.sh names it by
# the source's hash)
KS_CHECK="$E2E_BIN/kschedcheck-v1.37.2-$(cat "$E2E_SRC/tools/kschedcheck/"*.go | sha256sum | cut -c1-16)"
#
# ks_dump OUT [INITIAL]: write OUT, the dump kschedcheck reads: every kind its plugins read,
# as `kubectl get -o json` lists them; with INITIAL (a dump written earlier) its volumes, claims
# and ResourceClaims become the initial lists (the state before the scheduler placed anything).
ks_dump() {
    local out="$1" initial="${2:-}" k d="$E2E_DIR/ks-dump.$$"
    mkdir -p "$d"
    for k in nodes pods namespaces pv pvc storageclasses csinodes csidrivers csistoragecapacities \
        deviceclasses resourceslices resourceclaims; do
        "$E2E_BIN/kubectl" get "$k" -A -o json > "$d/$k.json" 2>/dev/null ||
            echo '{"items": []}' > "$d/$k.json"
    done
    python3 - "$d" "$out" "$initial" <<'PY'
import json, os, sys
d, out, initial = sys.argv[1:4]
def items(k): return json.load(open(os.path.join(d, k + ".json")))["items"]
dump = {"nodes": items("nodes"), "pods": items("pods"), "namespaces": items("namespaces"),
        "persistentVolumes": items("pv"), "persistentVolumeClaims": items("pvc"),
        "storageClasses": items("storageclasses"), "csiNodes": items("csinodes"),
        "csiDrivers": items("csidrivers"), "csiStorageCapacities": items("csistoragecapacities"),
        "deviceClasses": items("deviceclasses"), "resourceSlices": items("resourceslices"),
        "resourceClaims": items("resourceclaims")}
if initial:
    i = json.load(open(initial))
    dump["initialPersistentVolumes"] = i["persistentVolumes"]
    dump["initialPersistentVolumeClaims"] = i["persistentVolumeClaims"]
    dump["initialResourceClaims"] = i["resourceClaims"]
json.dump(dump, open(out, "w"))
PY
    local rc=$?
    rm -rf "$d"
    return $rc
}

# ks_order LOG OUT: the binds gpusched decided, in order, from its log at --log-level debug
# ("assume NS/POD on NODE", written by the scheduling cycle as it places each pod), as
# kschedcheck -order reads them
ks_order() {
    sed -n 's/^.*scheduler: assume \([^ ]*\) on \([^ ]*\)$/\1 \2/p' "$1" > "$2"
}
