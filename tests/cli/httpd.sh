#!/usr/bin/env bash
# The daemons' HTTP server (kube/httpd.c, shared by the scheduler, the extender and the agent)
# against hostile clients, through `gpusched agent run` without a cluster: while one address
# holds a thousand connections, some sending a header or a body a byte at a time, /healthz
# still answers from another; a 2 MiB body gets 413 with the limit; a connection that sends
# nothing is closed after the idle timeout; the server serves normally afterwards.
# (The scheduler and extender need an API server to start; tests/unit/test_httpd.c runs the
# same server with a handler that blocks.)
. "$(dirname "$0")/lib.sh"
command -v curl > /dev/null && command -v python3 > /dev/null || { echo "no curl or python3"; exit 77; }
cat > "$TMP/gpus.json" <<'J'
{"gpus": [{"model": "A100-80GB"}, {"model": "H100-80GB"}]}
J
# hostile clients. mode hold: from ADDR, N idle connections, S sending a header byte by byte
# and B sending a body byte by byte, kept until the file STOP exists; READY is written once
# they are open. mode idle: one connection from ADDR that sends nothing (or half a header);
# prints the seconds until the server closed it, or "open" after LIMIT seconds.
cat > "$TMP/hostile.py" <<'P'
import os, resource, socket, sys, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
def conn():
    s = socket.socket()
    s.bind((addr, 0))
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    return s
if mode == "hold":
    n, slow, body, ready, stop = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + slow + body + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        n = min(n, min(want, hard) - slow - body - 64)
    socks, drip = [], []
    for i in range(slow):
        s = conn()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        drip.append((s, b"X-Slow: " + b"a" * 4000 + b"\r\n"))
    for i in range(body):
        s = conn()
        s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n")
        drip.append((s, b"b" * 65536))
    for i in range(n):
        try:
            socks.append(conn())
        except OSError:
            pass  # refused or reset: the server keeps its slots
    open(ready, "w").write("%d\n" % len(socks))
    k = 0
    while not os.path.exists(stop):
        for s, data in drip:
            try:
                s.send(data[k % len(data):k % len(data) + 1])
            except OSError:
                pass
        k += 1
        time.sleep(0.2)
else:
    limit, half = float(sys.argv[4]), sys.argv[5] == "half"
    s = conn()
    if half:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
    t0 = time.monotonic()
    s.settimeout(0.5)
    while time.monotonic() - t0 < limit:
        try:
            if s.recv(4096) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    else:
        print("open")
        raise SystemExit(0)
    print("%.1f" % (time.monotonic() - t0))
P
port=$("$SRC/tests/free-port.py")
"$GS" agent run --fake "$TMP/gpus.json" --interval 0.5 --duration 120 --metrics-port "$port" \
    --metrics-bind 127.0.0.1 > "$TMP/run.log" 2>&1 &
agent=$!
url="http://127.0.0.1:$port"
for _ in $(seq 50); do
    curl -sf --max-time 1 "$url/healthz" > /dev/null && break
    sleep 0.2
done
healthz() { # healthz NAME: /healthz answers "ok" within a few seconds
    local code
    code=$(curl -s --max-time 3 -o "$TMP/h.txt" -w '%{http_code}' "$url/healthz")
    if [ "$code" = 200 ] && grep -qx ok "$TMP/h.txt"; then ok; else fail "$1: /healthz gave '$code'"; fi
}
healthz "before any hostile client"

# 1. one address holds a thousand connections, 40 dribbling a header, 10 a body
python3 "$TMP/hostile.py" hold 127.0.0.2 "$port" 1000 40 10 "$TMP/ready" "$TMP/stop" &
hold=$!
for _ in $(seq 300); do [ -s "$TMP/ready" ] && break; sleep 0.1; done
[ -s "$TMP/ready" ] && ok || fail "the hostile client could not open its connections"
sleep 1
healthz "while 127.0.0.2 holds 1000 connections"
curl -s --max-time 3 "$url/metrics" > "$TMP/m.txt" && has "$TMP/m.txt" 'gpu_temperature_celsius{gpu="1"'
healthz "again, while they dribble"

# 2. a body over the limit: 413 with the limit, the body never read
head -c $((2 << 20)) /dev/zero > "$TMP/big"
code=$(curl -s --max-time 5 -o "$TMP/413.txt" -w '%{http_code}' --data-binary @"$TMP/big" "$url/metrics")
[ "$code" = 413 ] && ok || fail "a 2 MiB POST got '$code', want 413"
has "$TMP/413.txt" "request body over the limit of 1048576 bytes"
# without a declared length too (chunked)
code=$(curl -s --max-time 5 -o "$TMP/413c.txt" -w '%{http_code}' -H 'Transfer-Encoding: chunked' \
    --data-binary @"$TMP/big" "$url/metrics")
[ "$code" = 413 ] && ok || fail "a 2 MiB chunked POST got '$code', want 413"
touch "$TMP/stop"
wait "$hold"

# 3. idle connections are closed after the timeout (10 s)
python3 "$TMP/hostile.py" idle 127.0.0.3 "$port" 25 none > "$TMP/nothing.txt" &
idle=$!
python3 "$TMP/hostile.py" idle 127.0.0.4 "$port" 25 half > "$TMP/half a header.txt"
wait "$idle"
for f in nothing "half a header"; do
    t=$(cat "$TMP/$f.txt")
    case "$t" in
    open | "") fail "a connection that sent $f was still open after 25 s" ;;
    *) ok ;;
    esac
done

# 4. all is well afterwards
healthz "after the hostile clients left"
curl -s --max-time 3 "$url/status" > "$TMP/status.json" && has "$TMP/status.json" '"uuid"'
kill "$agent" 2> /dev/null
wait "$agent" 2> /dev/null
if grep -q "ERROR: AddressSanitizer\|runtime error" "$TMP/run.log"; then
    fail "the agent reported a memory error:"; grep -m5 "ERROR\|runtime error" "$TMP/run.log"
fi
finish
