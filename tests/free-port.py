#!/usr/bin/env python3
"""Prints a loopback TCP port for a service a test or benchmark starts.

Ports from bind(0) come from the kernel's ephemeral range, where an outgoing connection of a
parallel test may take them before our service binds; so pick outside that range, check the
port binds, and reserve it (a file made with O_EXCL, kept 10 minutes) so that tests running in
parallel never pick the same one.
"""
import os, random, socket, time
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
pool = [r for r in ((20000, lo - 1), (hi + 1, 65535)) if r[1] - r[0] > 1000] or [(20000, 30000)]
d = "/tmp/gpusched-e2e-ports"
os.makedirs(d, exist_ok=True)
now = time.time()
for f in os.listdir(d):
    try:
        if now - os.stat(os.path.join(d, f)).st_mtime > 600:
            os.unlink(os.path.join(d, f))
    except OSError:
        pass
for _ in range(1000):
    a, b = random.choice(pool)
    port = random.randint(a, b)
    try:
        os.close(os.open(os.path.join(d, str(port)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    raise SystemExit(0)
raise SystemExit("e2e: no free loopback port")
