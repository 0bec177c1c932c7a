#!/usr/bin/env bash
# Helpers for the device plugin tests, sourced with D (a scratch folder) set: the fake GPUs
# they share and a poll over the harness's JSON lines.

# gpus JSON: 4 fake H100s, GPUs 2 and 3 in all-3g.40gb; JSON is merged into GPU 0 (XIDs...)
gpus() {
    python3 - "$1" > "$D/gpus.tmp" <<'P'
import json, sys
g = [{"model": "H100-80GB"} for _ in range(4)]
for i in (2, 3):
    g[i].update({"mig": True, "instances": [{"profile": "3g.40gb", "start": 0},
                                           {"profile": "3g.40gb", "start": 4}]})
g[0].update(json.loads(sys.argv[1]))
print(json.dumps({"gpus": g}))
P
    mv "$D/gpus.tmp" "$D/gpus.json"
}

# wait_for SECONDS CONDITION: a Python expression over ev (the harness's events so far) and
# last (its latest capacity event), polled every 0.2 s
wait_for() {
    local end=$(( $(date +%s) + $1 ))
    while [ "$(date +%s)" -le $end ]; do
        python3 - "$D/h.log" "$2" <<'P' && return 0
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
cap = [e for e in ev if e["event"] == "capacity"]
last = cap[-1] if cap else {"capacity": {}, "allocatable": {}}
sys.exit(0 if eval(sys.argv[2]) else 1)
P
        sleep 0.2
    done
    return 1
}
