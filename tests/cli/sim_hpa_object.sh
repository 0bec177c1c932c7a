#!/usr/bin/env bash
# The article's gpu-hpa.yaml pasted as it is under a service's hpa: (the whole
# HorizontalPodAutoscaler: apiVersion, kind, metadata, spec with scaleTargetRef) runs the same
# autoscaler as its spec fields alone (examples/elastic-inference.yaml): the same scaling, the
# same figures. A metric the simulated replicas cannot report (Resource cpu) is accepted and
# missing in the run; invalid objects are refused with the field path and why.
. "$(dirname "$0")/lib.sh"
HPA="$SHARED/seed/examples/gpu-hpa.yaml"
[ -f "$HPA" ] || skip "no $HPA"
EX="$SRC/examples/elastic-inference.yaml"
# splice FILE OUT: examples/elastic-inference.yaml with its hpa: block replaced by FILE, indented
splice() {
    python3 - "$EX" "$1" > "$2" <<'PY'
import sys
lines, obj = open(sys.argv[1]).read().split("\n"), open(sys.argv[2]).read().rstrip("\n").split("\n")
out, skip = [], False
for l in lines:
    if l.startswith("      hpa:"):
        out.append("      hpa:")
        out += ["        " + o if o else "" for o in obj]
        skip = True
        continue
    if skip and (l.startswith("        ") or not l.strip()):
        continue
    skip = False
    out.append(l)
print("\n".join(out))
PY
}
splice "$HPA" "$TMP/pasted.yaml"
has "$TMP/pasted.yaml" "scaleTargetRef:"
expect 0 "$GS" sim scenario "$EX" --format json && cp "$TMP/out" "$TMP/spec.json"
expect 0 "$GS" sim scenario "$TMP/pasted.yaml" --format json && cp "$TMP/out" "$TMP/object.json"
python3 - "$TMP/spec.json" "$TMP/object.json" <<'PY' && ok || fail "the object and its spec differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for x in (a, b):
    for s in x["strategies"]:
        s.pop("wall_seconds", None)
assert a["strategies"] == b["strategies"]
assert any(s["services"][0]["scale_ups"] > 0 for s in b["strategies"])
PY
expect 0 "$GS" sim scenario "$EX" --decisions mig-priority && grep SCALE "$TMP/out" > "$TMP/spec.dec"
expect 0 "$GS" sim scenario "$TMP/pasted.yaml" --decisions mig-priority &&
    grep SCALE "$TMP/out" > "$TMP/object.dec"
[ -s "$TMP/spec.dec" ] && cmp -s "$TMP/spec.dec" "$TMP/object.dec" && ok || fail "SCALE lines differ"

# refuse FIND REPLACE MESSAGE: the object edited so, refused with MESSAGE
refuse() {
    python3 -c 'import sys; print(open(sys.argv[1]).read().replace(sys.argv[2], sys.argv[3], 1), end="")' \
        "$HPA" "$1" "$2" > "$TMP/edited.yaml"
    splice "$TMP/edited.yaml" "$TMP/bad.yaml"
    expect 2 "$GS" sim scenario "$TMP/bad.yaml" && has "$TMP/err" "$3"
}
refuse "autoscaling/v2" "autoscaling/v1" "'autoscaling/v1': expected autoscaling/v2"
refuse "    name: inference-pool" "    nam: inference-pool" "spec.scaleTargetRef.nam: unexpected field"
refuse "    kind: Deployment" "    kind: \"\"" "spec.scaleTargetRef.kind: must not be empty"
# A Resource cpu metric beside the Pods metric request_latency_ms: valid autoscaling/v2, so
# accepted; no simulated replica reports cpu, so the HPA finds it missing (no proposal from it,
# a warning says so) and request_latency_ms still scales the service up.
python3 -c 'import sys; print(open(sys.argv[1]).read().replace(sys.argv[2], sys.argv[3], 1), end="")' \
    "$HPA" "    - type: Pods
      pods:
        metric:
          name: gpu_utilization
        target:
          type: AverageValue
          averageValue: \"70\"" "    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 70" > "$TMP/cpu-hpa.yaml"
has "$TMP/cpu-hpa.yaml" "name: cpu"
splice "$TMP/cpu-hpa.yaml" "$TMP/cpu.yaml"
expect 0 "$GS" sim scenario "$TMP/cpu.yaml" --format json &&
    has "$TMP/err" "service.hpa reads Resource cpu, which the simulated replicas cannot report" &&
    has "$TMP/err" "no proposal"
python3 - "$TMP/out" "$TMP/object.json" <<'PY' && ok || fail "the Pods metric beside a missing Resource metric does not scale as the HPA would"
import json, sys
cpu, both = (json.load(open(f)) for f in sys.argv[1:])
# the latency metric alone still scales up
assert any(s["services"][0]["scale_ups"] > 0 for s in cpu["strategies"])
# and without gpu_utilization's proposals the run is not the article's
assert [s["services"][0] for s in cpu["strategies"]] != [s["services"][0] for s in both["strategies"]]
PY
refuse "    - type: Pods
      pods:
        metric:
          name: gpu_utilization
        target:
          type: AverageValue
          averageValue: \"70\"" "    - type: Resource
      resource:
        name: cpu
        target:
          type: Value
          value: 70" "'Value': this metric source takes Utilization or AverageValue targets"
refuse "    - type: Pods
      pods:" "    - type: External
      pods:" "a metric of type External needs 'external'"
refuse "    - type: Pods" "    - type: Custom" "'Custom': expected Pods, Resource, ContainerResource, Object or External"
finish
