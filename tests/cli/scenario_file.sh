#!/usr/bin/env bash
# `gpusched sim scenario FILE`: a pod trace replayed through the simulator, and a scenario
# with classes written by hand.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" sim scenario "$SRC/tests/data/scenario_trace.yaml" --format json &&
    python3 - "$TMP/out" <<'PY' && ok || fail "trace replay"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["scenario"] == "trace-replay" and d["gpus"] == 40
for s in d["strategies"]:
    c = s["classes"][0]
    assert c["arrived"] > 250 and c["started"] > 0.9 * c["arrived"], c
    assert 0 < s["allocated_share"] <= 1 and s["used_share"] <= s["allocated_share"] + 1e-9
PY
cat > "$TMP/classes.yaml" <<'Y'
name: two-teams
duration: 6h
warmup: 30m
node_groups:
  - {name: a100, gpu: A100-SXM4-80GB, nodes: 2, gpus: 8, mig_layout: {"3g.40gb": 2}}
  - {name: l40s, gpu: L40S, nodes: 1, gpus: 4, sharing: timeslicing, replicas: 4}
tenants: [{name: a}, {name: b}]
classes:
  - {name: chat, tenant: a, kind: online-inference, priority: gpu-critical,
     arrival: {process: poisson, per_hour: 20}, duration: {dist: exponential, mean: 30m},
     request: {gpus: 1, mig: 3g.40gb, gpu_memory: 30Gi}, util: 0.3}
  - {name: tune, tenant: b, kind: training, priority: gpu-low,
     arrival: {process: poisson, per_hour: 4}, duration: {dist: fixed, mean: 1h},
     request: {gpus: 2, gpu_memory: 60Gi}, util: 0.9}
Y
expect 0 "$GS" sim scenario "$TMP/classes.yaml" --report "$TMP/r.html" && {
    has "$TMP/out" "scenario 'two-teams': 20 GPUs"
    has "$TMP/r.html" "chat"
    python3 - "$TMP/r.html" <<'PY' && ok || fail "report HTML is not well formed"
import sys
from html.parser import HTMLParser
void = {"meta", "br", "img", "hr", "input", "link"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []
    def handle_starttag(self, tag, attrs):
        if tag not in void: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs): pass
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
        self.stack.pop()
p = P(); p.feed(open(sys.argv[1]).read()); p.close()
assert p.stack == [], p.stack
PY
}
sed 's/per_hour: 20/per_hour: lots/' "$TMP/classes.yaml" > "$TMP/bad.yaml"
expect 2 "$GS" sim scenario "$TMP/bad.yaml" && has "$TMP/err" "bad.yaml:10: classes[0].arrival.per_hour"
# a second class of the same name
sed 's/name: tune/name: chat/' "$TMP/classes.yaml" > "$TMP/twice.yaml"
expect 2 "$GS" sim scenario "$TMP/twice.yaml" &&
    has "$TMP/err" "twice.yaml:12: classes[1].name: 'chat' is already the name of classes[0] (line 9)"
finish
