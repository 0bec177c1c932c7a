#!/usr/bin/env python3
"""holdproxy.py - a plain-HTTP front for the e2e API server that holds back one kind's lists,
or the requests of one method to one path.

  holdproxy.py PORT UPSTREAM CA CERT KEY [METHOD ]PATH-PREFIX HOLD-FILE LOG

Every request is forwarded to UPSTREAM (https, verified against CA, as the user of CERT/KEY)
and its response streamed back (watches too), one request per connection. A GET whose path
starts with PATH-PREFIX and that is not a watch waits while HOLD-FILE exists: the list of that
kind completes only when the test removes the file, however long the other lists take. With a
METHOD before the prefix ("POST /api/v1/namespaces/ev/pods/a/binding"), requests of that
method to such a path are held instead. Each request is logged to LOG ("METHOD PATH", then
"held PATH" for a held one and "released PATH" when it goes on) as it arrives.
"""
import http.client
import http.server
import os
import ssl
import sys
import threading
import time
import urllib.parse

port, upstream, ca, cert, key, prefix, hold, log = sys.argv[1:9]
method, _, prefix = prefix.rpartition(" ")
up = urllib.parse.urlsplit(upstream)
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)
log_mu = threading.Lock()


def note(line):
    with log_mu, open(log, "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body runs to the connection's end: watches stream

    def log_message(self, *args):
        pass

    def forward(self):
        note("%s %s" % (self.command, self.path))
        u = urllib.parse.urlsplit(self.path)
        if u.path.startswith(prefix) and (self.command == method if method else
                                          self.command == "GET" and "watch=" not in u.query):
            note("held " + self.path)
            while os.path.exists(hold):
                time.sleep(0.05)
            note("released " + self.path)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "connection", "content-length", "authorization",
                                         "expect")}
        c = http.client.HTTPSConnection(up.hostname, up.port, context=ctx, timeout=600)
        c.request(self.command, self.path, body=body, headers=headers)
        r = c.getresponse()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(k, v)
        self.end_headers()
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            self.wfile.write(chunk)
            self.wfile.flush()
        c.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()
