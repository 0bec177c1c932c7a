#!/usr/bin/env bash
# Elastic scaling in the simulator (examples/elastic-inference.yaml: a pool of replicas on
# 3g.40gb slices under the article's gpu-hpa.yaml, a burst from 6 to 18 requests/s at 3h for
# 20 minutes). From the SCALE lines of --decisions: the autoscaler scales up on the burst only
# after its 60 s window, never by more than +50 % of the count 120 s before, stays within
# 2..20 replicas, holds the count for the 300 s scale-down window after the burst, then removes
# at most 25 % of the count 300 s before, the youngest replicas first, back to about the count
# it had before the burst. JSON: the autoscaler against the fixed count. Bad service keys are refused
# with file:line and field path; an HPA metric the replicas' devices cannot give is warned
# about, or refused when no replica could give it.
. "$(dirname "$0")/lib.sh"
EX="$SRC/examples/elastic-inference.yaml"
expect 0 "$GS" sim scenario "$EX" --decisions mig-priority && cp "$TMP/out" "$TMP/dec"
python3 - "$TMP/dec" <<'PY' && ok || fail "scaling behaviour"
import math, re, sys
burst, burst_end = 3 * 3600, 3 * 3600 + 20 * 60
events, live, born = [], [], {}
count = 4  # replicas: 4 at the start
for line in open(sys.argv[1]):
    m = re.match(r"t=([\d.]+) (BIND|NOMINATE) inference-pool-(\d+) ", line)
    if m and int(m.group(3)) not in born:
        born[int(m.group(3))] = float(m.group(1))
        live.append(int(m.group(3)))
    m = re.match(r"t=([\d.]+) SCALE inference-pool (\d+) -> (\d+) (\S+)(.*deleted=(\S+))?", line)
    if not m:
        continue
    t, a, b = float(m.group(1)), int(m.group(2)), int(m.group(3))
    assert a == count, (t, a, count)
    assert 2 <= b <= 20, (t, b)
    if b < a:  # the youngest go first (all are ready here, so the most recently ready)
        gone = [int(x.rsplit("-", 1)[1]) for x in m.group(6).split(",")]
        assert sorted(gone) == sorted(live)[-len(gone):], (t, gone, sorted(live))
        live = [p for p in live if p not in gone]
    events.append((t, a, b))
    count = b
print("SCALE events:", events)

def count_at(t):  # replicas once every event at or before t is applied
    c = 4
    for (te, a, b) in events:
        if te <= t:
            c = b
    return c

before = count_at(burst - 1)
ups = [e for e in events if burst <= e[0] < burst_end and e[2] > e[1]]
assert ups, "no scale-up on the burst"
# the burst is seen from the sync at 3h; the 60 s window holds the old proposal until every
# recommendation younger than 60 s is the burst's: the first scale-up is at 3h + 45 s
assert ups[0][0] == burst + 45, ups[0]
for (t, a, b) in ups:  # +50 % of the count at the start of the 120 s period
    start = count_at(t - 120)
    assert b <= math.ceil(start * 1.5), (t, a, b, start)
peak = max(b for (_, _, b) in events)
assert peak >= 13, peak  # the burst needs 13 replicas at the 70 % target
downs = [e for e in events if e[0] >= burst_end and e[2] < e[1]]
assert downs, "no scale-down after the burst"
# the last recommendation of the burst is the sync at 3h19m45s; the 300 s window keeps its
# count until that recommendation is 300 s old
assert downs[0][0] == burst_end - 15 + 300, downs[0]
assert not [e for e in events if burst_end <= e[0] < downs[0][0]], "scaled inside the window"
for (t, a, b) in downs:  # -25 % of the count at the start of the 300 s period
    start = count_at(t - 300)
    assert b >= int(start * 0.75), (t, a, b, start)
# back down: 5 replicas at 6 requests/s sit at 0.86 of the utilization target, outside the
# tolerance but ceil(0.86 * 5) is 5: the count before the burst or one more
assert before <= count_at(1e9) <= before + 1, (count_at(1e9), before)
print("before %d, peak %d at +%ds, first scale-down %ds after the burst, back to %d"
      % (before, peak, ups[-1][0] - burst, downs[0][0] - burst_end, count_at(1e9)))
PY
# the autoscaler against the fixed count: the burst costs the fixed 5 replicas many more
# requests over the SLA; the autoscaler holds more replicas only while it lasts
expect 0 "$GS" sim scenario "$EX" --format json && cp "$TMP/out" "$TMP/e.json"
python3 - "$TMP/e.json" <<'PY' && ok || fail "autoscaler vs fixed"
import json, sys
d = {s["strategy"]: s for s in json.load(open(sys.argv[1]))["strategies"]}
for name, s in d.items():
    a, f = s["services"][0], s["fixed_replicas"]["services"][0]
    assert a["class"] == "inference-pool" and a["fixed_replicas"] == 5, a
    assert abs(f["replicas_mean"] - 5) < 1e-9 and f["scale_ups"] == 0, f
    assert a["scale_ups"] >= 3 and a["replicas_max"] >= 13, a
    assert a["sla_miss_pct"] < f["sla_miss_pct"] / 2, (name, a["sla_miss_pct"], f["sla_miss_pct"])
    assert a["requests"] == f["requests"], "one load in both runs"
    assert 0 < a["busy_gpu_hours"] <= a["gpu_hours"], a
m = d["mig-priority"]["services"][0]
print("mig-priority: %.1f%% of requests over 1s with the HPA (%.1f replicas on average, %d at "
      "most), %.1f%% with 5 fixed" % (m["sla_miss_pct"], m["replicas_mean"], m["replicas_max"],
      d["mig-priority"]["fixed_replicas"]["services"][0]["sla_miss_pct"]))
PY
expect 0 "$GS" sim scenario "$EX" && has "$TMP/out" "elastic scaling, service inference-pool"
# bad service input: refused with the file, the line and the field path
bad() { # bad NAME PYTHON-EXPR-ON-TEXT WANT
    python3 - "$EX" "$TMP/$1.yaml" "$2" <<'PY'
import sys
t = open(sys.argv[1]).read()
exec(sys.argv[3])
open(sys.argv[2], "w").write(t)
PY
    expect 2 "$GS" sim scenario "$TMP/$1.yaml" && has "$TMP/err" "$3"
}
bad arrival 't = t.replace("    util: 0.35\n", "    util: 0.35\n    arrival: {process: poisson, per_hour: 1}\n", 1)' \
    "arrival.yaml:33: classes[0].arrival: a service's replicas neither arrive nor finish"
bad kind 't = t.replace("kind: online-inference", "kind: training", 1)' \
    "kind.yaml:27: classes[0]: class 'inference-pool': only online-inference classes run as services"
bad metric 't = t.replace("name: request_latency_ms", "name: queue_depth", 1)' \
    "metric.yaml:56: classes[0].service.hpa.metrics[1].pods.metric.name: 'queue_depth'"
bad minmax 't = t.replace("minReplicas: 2", "minReplicas: 30", 1)' \
    "minmax.yaml:43: classes[0].service.hpa: minReplicas 30 is above maxReplicas 20"
bad policies 't = t.replace("""            policies:\n              - type: Percent\n                value: 50\n                periodSeconds: 120\n""", "            policies: []\n", 1)' \
    "policies.yaml:63: classes[0].service.hpa.behavior.scaleUp.policies: must specify at least one policy"
bad select 't = t.replace("stabilizationWindowSeconds: 60", "stabilizationWindowSeconds: 60\n            selectPolicy: Fastest", 1)' \
    "select.yaml:63: classes[0].service.hpa.behavior.scaleUp.selectPolicy: 'Fastest': expected Max, Min or Disabled"
bad window 't = t.replace("stabilizationWindowSeconds: 300", "stabilizationWindowSeconds: 7200", 1)' \
    "window.yaml:68: classes[0].service.hpa.behavior.scaleDown.stabilizationWindowSeconds: 7200 is out of range 0..3600"
bad target 't = t.replace("type: AverageValue", "type: Utilization", 1)' \
    "target.yaml:51: classes[0].service.hpa.metrics[0].pods.target.type: 'Utilization': Pods metrics take AverageValue targets"
bad sla 't = t.replace("sla: 1s}", "sla: 1m}", 1)' \
    "sla.yaml:36: classes[0].service.latency: expected base < max and sla <= max"
bad capacity 't = t.replace("capacity: 2 ", "capacity: none ", 1)' \
    "capacity.yaml:35: classes[0].service.capacity"
bad typo 't = t.replace("startup: 60s", "startup: 60s\n      warmup: 1m", 1)' \
    "typo.yaml:38: classes[0].service.warmup: unexpected field"
bad burst 't = t.replace("factor: 3}", "factor: 3, shape: square}", 1)' \
    "burst.yaml:41: classes[0].service.load.bursts[0].shape: unexpected field"
# the pool on A100 slices, which measure no gpu_utilization (no GPM): warned under every
# strategy, refused where only MIG strategies run (no replica could ever report it)
python3 - "$EX" "$TMP/a100.yaml" <<'PY'
import sys
open(sys.argv[2], "w").write(open(sys.argv[1]).read().replace("gpu: H100-80GB", "gpu: A100-80GB", 1))
PY
expect 0 "$GS" sim scenario "$TMP/a100.yaml" --format json &&
    has "$TMP/err" "gpusched sim: warning: class 'inference-pool': service.hpa reads gpu_utilization, which its replicas on MIG slices of 'h100' (A100-80GB) lack under static-mig, mig-priority, dynamic-mig, all (MIG instances of A100-80GB measure no utilization: no GPM"
[ "$(grep -c warning "$TMP/err")" = 1 ] && ok || fail "one warning, for gpu_utilization only"
expect 2 "$GS" sim scenario "$TMP/a100.yaml" --decisions static-mig &&
    has "$TMP/err" "gpusched sim: class 'inference-pool': service.hpa reads gpu_utilization, which none of its replicas can report under static-mig"
expect 0 "$GS" sim scenario "$EX" --format json && [ ! -s "$TMP/err" ] && ok || fail "H100 slices: no warning"
finish
