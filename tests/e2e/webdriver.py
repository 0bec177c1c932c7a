#!/usr/bin/env python3
"""webdriver.py - a W3C WebDriver client (the HTTP protocol, python3's stdlib only) for the
e2e tests that drive a real browser: Debian's headless Chromium through chromedriver.

    with Browser(chromedriver="/usr/bin/chromedriver", binary="/usr/bin/chromium") as b:
        b.open("http://127.0.0.1:PORT/ui")
        rows = b.script("return [...document.querySelectorAll('[data-node]')].map(e => e.dataset.node)")
        open("shot.png", "wb").write(b.screenshot())

The driver runs on a free loopback port for the life of the object; the session and the
driver end with it.
"""
import base64
import json
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


class WebDriverError(Exception):
    pass


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Browser:
    def __init__(self, chromedriver, binary, width=1600, height=1100, log=None):
        self.port = _free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.profile = tempfile.mkdtemp(prefix="gs-chromium-")
        out = open(log, "ab") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen([chromedriver, "--port=%d" % self.port],
                                     stdout=out, stderr=out)
        self.session = None
        try:
            self._wait_ready()
            caps = {"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": binary,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--hide-scrollbars",
                             "--window-size=%d,%d" % (width, height),
                             "--user-data-dir=" + self.profile]}}}}
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except BaseException:
            self.close()
            raise

    def _wait_ready(self):
        end = time.time() + 30
        while time.time() < end:
            if self.proc.poll() is not None:
                raise WebDriverError("chromedriver exited with %s" % self.proc.returncode)
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.2)
        raise WebDriverError("chromedriver did not become ready")

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                reply = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                v = json.loads(text)["value"]
                text = "%s: %s" % (v.get("error"), v.get("message", "").splitlines()[0])
            except (ValueError, KeyError, AttributeError, IndexError):
                pass
            raise WebDriverError("%s %s: HTTP %d: %s" % (method, path, e.code, text))
        return reply.get("value", reply)

    def _s(self, path):
        return "/session/%s%s" % (self.session, path)

    def open(self, url):
        self._call("POST", self._s("/url"), {"url": url})

    def url(self):
        return self._call("GET", self._s("/url"))

    def script(self, js, *args):
        """Run js (a function body) in the page; returns what it returns."""
        return self._call("POST", self._s("/execute/sync"), {"script": js, "args": list(args)})

    def screenshot(self):
        """The viewport as PNG bytes."""
        return base64.b64decode(self._call("GET", self._s("/screenshot")))

    def close(self):
        if self.session:
            try:
                self._call("DELETE", self._s(""))
            except (OSError, WebDriverError):
                pass
            self.session = None
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["rm", "-rf", self.profile])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
