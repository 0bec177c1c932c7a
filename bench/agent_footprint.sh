#!/usr/bin/env bash
# The node agent's footprint: `gpusched agent run` on 8 fake H100 GPUs (2 of them in MIG)
# with CHECK_INTERVAL 1 s, no cluster, pods from a pods file. Measures resident memory and
# CPU over 20 s of steady running, then a soak of 100,000 /metrics scrapes over keep-alive
# connections while pods come and go (the pods file changes every 500 scrapes), and prints
# RSS before and after. Goals: RSS < 15 MB, CPU < 1 % of a core, RSS flat over the soak.
set -euo pipefail
GS="${1:-build/gpusched}"
SCRAPES="${SCRAPES:-100000}"
dir="$(mktemp -d)"
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
python3 - "$dir" <<'P'
import json, sys
d = sys.argv[1]
gpus = [{"model": "H100-80GB", "util": 10 * i, "temp_c": 50 + i, "power_w": 300} for i in range(8)]
for i in (6, 7):
    gpus[i].update({"mig": True, "instances": [{"profile": "3g.40gb", "start": 0},
                                               {"profile": "3g.40gb", "start": 4}]})
json.dump({"gpus": gpus}, open(d + "/gpus.json", "w"))
json.dump([], open(d + "/pods.json", "w"))
P
port=$("$(dirname "$0")/../tests/free-port.py")
"$GS" --log-level warn agent run --fake "$dir/gpus.json" --pods-file "$dir/pods.json" \
    --interval 1 --metrics-port "$port" --metrics-bind 127.0.0.1 > "$dir/agent.log" 2>&1 &
pid=$!
python3 - "$pid" "$port" "$dir" "$SCRAPES" <<'P'
import http.client, json, os, sys, time
pid, port, d, scrapes = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
tick = os.sysconf("SC_CLK_TCK")
def rss_kb():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
def cpu_s():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
for _ in range(100):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics"); c.getresponse().read(); break
    except OSError:
        time.sleep(0.1)
time.sleep(3)
c0, t0 = cpu_s(), time.time()
time.sleep(20)
c1, t1 = cpu_s(), time.time()
rss = rss_kb()
print(json.dumps({"bench": "agent_footprint", "gpus": 8, "interval_s": 1, "rss_kb": rss,
                  "cpu_pct": round(100 * (c1 - c0) / (t1 - t0), 3), "cpu_s": round(c1 - c0, 3), "window_s": round(t1 - t0, 1), "goal_rss_kb": 15360,
                  "goal_cpu_pct": 1}))
sys.stdout.flush()
start = rss_kb()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
changes = 0
ts = time.time()
for i in range(scrapes):
    if i % 500 == 0:
        pods = [{"metadata": {"namespace": "ns", "name": "pod-%d-%d" % (changes, k)},
                 "spec": {"containers": [{"name": "c"}]},
                 "devices": "gpu=%d" % k if k < 6 else "mig=%d:3g.40gb@%d" % (k, 4 * (changes % 2))}
                for k in range(8) if (changes + k) % 3]
        tmp = d + "/pods.json.tmp"
        json.dump(pods, open(tmp, "w")); os.replace(tmp, d + "/pods.json")
        changes += 1
    try:
        conn.request("GET", "/metrics"); r = conn.getresponse(); r.read()
    except (OSError, http.client.HTTPException):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics"); conn.getresponse().read()
end = rss_kb()
print(json.dumps({"bench": "agent_soak", "scrapes": scrapes, "pod_changes": changes,
                  "seconds": round(time.time() - ts, 1), "rss_start_kb": start,
                  "rss_end_kb": end, "rss_growth_kb": end - start}))
P
