#!/usr/bin/env bash
# The extender does not answer kube-scheduler's verbs before its node and pod caches are
# synced: against an API server that answers the startup probe and then stalls every list,
# /filter, /prioritize and /bind get 503 with a JSON Error (kube-scheduler retries such a
# pod with backoff), where an answer from empty caches would have marked the pod
# unschedulable for every node; /readyz says 503 too.
. "$(dirname "$0")/lib.sh"
command -v curl > /dev/null && command -v python3 > /dev/null || skip "no curl or python3"
cat > "$TMP/stall.py" <<'P'
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/api/v1/nodes?limit=1":
            b = b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)
            return
        time.sleep(120)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
P
api=$("$SRC/tests/free-port.py"); port=$("$SRC/tests/free-port.py")
python3 "$TMP/stall.py" "$api" & stall=$!
cat > "$TMP/kubeconfig" <<K
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:$api"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
K
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$api/api/v1/nodes?limit=1" && break; sleep 0.1; done
"$GS" extender --kubeconfig "$TMP/kubeconfig" --http-port "$port" --http-bind 127.0.0.1 \
    > "$TMP/extender.log" 2>&1 & ext=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
pod='{"Pod": {"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": {"containers":
  [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}, "NodeNames": ["n1"]}'
for verb in filter prioritize bind; do
    code=$(curl -s -o "$TMP/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        -d "$pod" "http://127.0.0.1:$port/$verb")
    if [ "$code" = 503 ]; then ok; else fail "/$verb before sync: HTTP $code, want 503"; fi
    has "$TMP/out" '"Error":"gpusched extender not ready'
done
code=$(curl -s -o "$TMP/out" -w '%{http_code}' "http://127.0.0.1:$port/readyz")
if [ "$code" = 503 ]; then ok; else fail "/readyz before sync: HTTP $code, want 503"; fi
kill "$ext" "$stall" 2>/dev/null
wait "$ext" 2>/dev/null
finish
