#!/usr/bin/env bash
# gpusched advise scenario: on a cluster whose static MIG layout misfits the demand
# (examples/mig-misfit.yaml) it recommends a setup whose simulated used share is at least 1.5x
# the current one with online inference within its SLA; the configs it writes pass
# `gpusched mig validate` and the device-plugin reader, and simulating the scenario with the
# written mig-parted config gives the figures advise reported (what is simulated is what is
# recommended). Also the decision tree's time-slicing branch, the report, and bad input.
. "$(dirname "$0")/lib.sh"
expect 0 "$GS" advise scenario "$SRC/examples/mig-misfit.yaml" --format json --out "$TMP/cfg" \
    --report "$TMP/advice.html" --budget 60 && cp "$TMP/out" "$TMP/a.json"
python3 - "$TMP/a.json" <<'PY' && ok || fail "misfit advice"
import json, sys
a = json.load(open(sys.argv[1]))
cur, rec = a["current"], a["recommended"]
for k in ("used_share", "allocated_share", "online_p99_wait_s", "usd_per_useful_gpu_hour"):
    assert k in cur and k in rec, k
print("current: used %.1f%% alloc %.1f%% online p99 %.0fs $%.2f/useful GPU-h"
      % (100 * cur["used_share"], 100 * cur["allocated_share"], cur["online_p99_wait_s"],
         cur["usd_per_useful_gpu_hour"]))
print("recommended: used %.1f%% alloc %.1f%% online p99 %.0fs $%.2f/useful GPU-h, %d setups simulated"
      % (100 * rec["used_share"], 100 * rec["allocated_share"], rec["online_p99_wait_s"],
         rec["usd_per_useful_gpu_hour"], a["simulations"]))
assert rec["used_share"] >= 1.5 * cur["used_share"], "used share must grow 1.5x"
assert rec["online_p99_wait_s"] <= a["sla_online_wait_s"] and rec["sla_met"]
assert rec["usd_per_useful_gpu_hour"] < cur["usd_per_useful_gpu_hour"]
g = a["node_groups"]
assert [x["name"] for x in g] == ["a100"]
assert g[0]["decision_tree_pick"] == "mig" and "MIG" in g[0]["decision_tree"]
assert g[0]["mig_config"] == "gpusched-a100" and g[0]["sharing"] in ("none", "time-slicing")
assert len(g[0]["layout"]) == 8 and any(l != "whole" for l in g[0]["layout"])
assert g[0]["current"]["layout"] == ["7x1g.10gb"] * 8, g[0]["current"]["layout"]
# a 3g.40gb slice somewhere: the demand is mostly 3g.40gb
assert any("3g.40gb" in l for l in g[0]["layout"]), g[0]["layout"]
assert a["simulations"] <= 61
PY
# the written configs, read by gpusched's readers of NVIDIA's formats
for f in mig-parted-config.yaml device-plugin-config.yaml device-plugin/a100.yaml node-labels.sh; do
    [ -s "$TMP/cfg/$f" ] && ok || fail "$f not written"
done
expect 0 "$GS" mig validate "$TMP/cfg/mig-parted-config.yaml" && has "$TMP/out" "gpusched-a100"
expect 0 "$GS" mig validate "$TMP/cfg/mig-parted-config.yaml" --gpu A100-80GB --config gpusched-a100
expect 0 "$GS" dpconfig validate "$TMP/cfg/device-plugin/a100.yaml" "$TMP/cfg/device-plugin-config.yaml" &&
    has "$TMP/out" "migStrategy mixed"
has "$TMP/cfg/node-labels.sh" "nvidia.com/mig.config=gpusched-a100"
has "$TMP/cfg/node-labels.sh" "nvidia.com/device-plugin.config=a100.yaml"
# the ConfigMap's a100.yaml is the per-group file, indented
python3 - "$TMP/cfg" <<'PY' && ok || fail "device-plugin ConfigMap"
import sys
d = sys.argv[1]
cm = open(d + "/device-plugin-config.yaml").read()
body = cm.split("  a100.yaml: |\n", 1)[1]
lines = []
for l in body.splitlines():
    if not l.startswith("    "):
        break
    lines.append(l[4:])
assert "\n".join(lines) + "\n" == open(d + "/device-plugin/a100.yaml").read()
PY
# the scenario re-run with the written mig-parted config gives the recommended figures
python3 - "$SRC/examples/mig-misfit.yaml" "$TMP/cfg/mig-parted-config.yaml" "$TMP/a.json" > "$TMP/rec.yaml" <<'PY'
import json, sys
src, cm, a = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
doc = cm.split("  config.yaml: |\n", 1)[1]
doc = "\n".join("  " + l[4:] for l in doc.splitlines())
g = a["node_groups"][0]
src = src.replace("mig_config: all-1g.10gb", "mig_config: gpusched-a100")
if g["sharing"] == "time-slicing":
    src = src.replace("mig_config: gpusched-a100", "mig_config: gpusched-a100, sharing: timeslicing, replicas: %d" % g["replicas"])
print(src.replace("node_groups:", "mig_configs:\n" + doc + "\nnode_groups:"))
PY
expect 0 "$GS" sim scenario "$TMP/rec.yaml" --format json && cp "$TMP/out" "$TMP/rec.json"
python3 - "$TMP/a.json" "$TMP/rec.json" <<'PY' && ok || fail "recommended setup re-simulated"
import json, sys
a = json.load(open(sys.argv[1]))
s = {x["strategy"]: x for x in json.load(open(sys.argv[2]))["strategies"]}["all"]
print("re-simulated: used %.4f (advise said %.4f)" % (s["used_share"], a["recommended"]["used_share"]))
assert abs(s["used_share"] - a["recommended"]["used_share"]) < 1e-9
assert abs(s["online_p99_wait_s"] - a["recommended"]["online_p99_wait_s"]) < 1e-6
PY
# the report: self-contained, names the group and the recommended layout
[ -s "$TMP/advice.html" ] && ok || fail "no report"
has "$TMP/advice.html" "gpusched-a100"
if grep -qiE '(src|href)="?https?:' "$TMP/advice.html"; then fail "report loads from the network"; else ok; fi
# the table names the tree, the current and the recommended setup
expect 0 "$GS" advise scenario "$SRC/examples/mig-misfit.yaml" --out "$TMP/cfg2" --budget 20
has "$TMP/out" "decision tree: A100-80GB supports MIG? yes"
has "$TMP/out" "current:       8 GPUs MIG 7x1g.10gb"
has "$TMP/out" "recommended:"
# light inference on GPUs without MIG: the tree picks time-slicing and the search keeps it
cat > "$TMP/light.yaml" <<'Y'
name: light-inference
seed: 7
duration: 8h
warmup: 1h
node_groups:
  - {name: l40s, gpu: L40S-48GB, nodes: 2, gpus: 4, cpu: 64, memory: 512Gi}
classes:
  - name: chat-7b
    kind: online-inference
    priority: gpu-critical
    arrival: {process: poisson, per_hour: 12}
    duration: {dist: lognormal, median: 1h, sigma: 0.5}
    request: {gpus: 1, cpu: 4, memory: 16Gi, gpu_memory: 10Gi, share: timeslicing}
    util: 0.15
Y
expect 0 "$GS" advise scenario "$TMP/light.yaml" --format json --out "$TMP/cfg3" --budget 20 &&
    cp "$TMP/out" "$TMP/l.json"
python3 - "$TMP/l.json" <<'PY' && ok || fail "time-slicing branch"
import json, sys
a = json.load(open(sys.argv[1]))
g = a["node_groups"][0]
print("light inference:", g["decision_tree"], "->", g["summary"],
      "online p99 %.0fs -> %.0fs" % (a["current"]["online_p99_wait_s"], a["recommended"]["online_p99_wait_s"]))
assert g["decision_tree_pick"] == "time-slicing", g
assert g["sharing"] == "time-slicing" and g["mig_config"] is None
assert a["recommended"]["online_p99_wait_s"] < a["current"]["online_p99_wait_s"]
PY
expect 0 "$GS" dpconfig validate "$TMP/cfg3/device-plugin/l40s.yaml" && has "$TMP/out" "sharing time-slicing"
# bad input: a clear error, exit 2, nothing written
expect 2 "$GS" advise scenario "$TMP/nope.yaml" --out "$TMP/bad1" && has "$TMP/err" "nope.yaml"
[ ! -e "$TMP/bad1" ] && ok || fail "configs written for a missing scenario"
expect 2 "$GS" advise scenario "$SRC/examples/mig-misfit.yaml" --format xml && has "$TMP/err" "--format 'xml'"
expect 2 "$GS" advise scenario "$SRC/examples/mig-misfit.yaml" --budget 0 && has "$TMP/err" "--budget"
expect 2 "$GS" advise scenario "$SRC/examples/mig-misfit.yaml" --frobnicate 1 && has "$TMP/err" "frobnicate"
expect 2 "$GS" advise scenario && has "$TMP/err" "FILE is required"
expect 2 "$GS" advise && has "$TMP/err" "usage"
expect 2 "$GS" advise nonsense && has "$TMP/err" "unknown subcommand"
expect 0 "$GS" advise --help && has "$TMP/out" "decision tree"
printf 'name: t\ntrace: {file: pods.csv, format: openb}\nnode_groups:\n  - {name: a, gpu: A100-80GB, nodes: 1, gpus: 8}\n' > "$TMP/trace.yaml"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n' > "$TMP/pods.csv"
"$GS" advise scenario "$TMP/trace.yaml" >"$TMP/out" 2>"$TMP/err"
rc=$?
{ [ "$rc" = 2 ] && grep -q "needs workload classes\|trace" "$TMP/err"; } && ok || { fail "trace scenario: exit $rc"; cat "$TMP/err"; }
expect 2 "$GS" dpconfig validate "$TMP/light.yaml" && has "$TMP/err" "light.yaml"
finish
