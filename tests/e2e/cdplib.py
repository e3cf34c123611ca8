# SPDX-License-Identifier: BSD-2-Clause
"""Headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: JSON messages ended by NUL on descriptors 3 and
4), so no websocket library is needed. One page, its events kept, every
wait bounded."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Debian's /usr/bin/chromium is a shell launcher that does not keep the
# pipe's descriptors 3 and 4 open: start the browser itself.
REAL = "/usr/lib/chromium/chromium"
if CHROMIUM and os.access(REAL, os.X_OK):
    CHROMIUM = REAL


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000):
        self.prof = tempfile.TemporaryDirectory()
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                "--disable-sync", "--disable-extensions", "--hide-scrollbars",
                f"--user-data-dir={self.prof.name}", "about:blank"]
        # The browser reads descriptor 3 and writes 4: a small exec shim
        # puts the pipe's ends there (through high numbers, so that neither
        # overwrites the other).
        shim = ("import fcntl, os, sys\n"
                "a = fcntl.fcntl(int(sys.argv[1]), fcntl.F_DUPFD, 10)\n"
                "b = fcntl.fcntl(int(sys.argv[2]), fcntl.F_DUPFD, 10)\n"
                "os.dup2(a, 3); os.dup2(b, 4)\n"
                "os.execv(sys.argv[3], sys.argv[3:])\n")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", shim, str(to_r), str(from_w), CHROMIUM, *args],
            pass_fds=(to_r, from_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env={**os.environ, "HOME": self.prof.name})
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []
        self.session = None
        target = self.cmd("Target.createTarget", url="about:blank", session=False)["targetId"]
        self.session = self.cmd("Target.attachToTarget", targetId=target, flatten=True,
                                session=False)["sessionId"]
        self.cmd("Page.enable")
        self.cmd("Network.enable")
        self.cmd("Emulation.setDeviceMetricsOverride", width=width, height=height,
                 deviceScaleFactor=1, mobile=False)

    def _read(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                return None
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise AssertionError("chromium went away")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def cmd(self, method: str, timeout: float = 30.0, session: bool = True, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._read(deadline - time.monotonic())
            if m is None:
                break
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise AssertionError(f"{method}: no answer within {timeout}s")

    def wait_event(self, method: str, timeout: float = 30.0, start: int = 0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events[start:]:
                if e.get("method") == method:
                    return e
            m = self._read(max(0.0, deadline - time.monotonic()))
            if m is None:
                raise AssertionError(f"no {method} within {timeout}s")
            self.events.append(m)

    def navigate(self, url: str, timeout: float = 30.0):
        mark = len(self.events)
        self.cmd("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout, start=mark)

    def eval(self, expr: str, timeout: float = 30.0):
        r = self.cmd("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True,
                     timeout=timeout)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_true(self, expr: str, timeout: float = 20.0, what: str = ""):
        deadline = time.monotonic() + timeout
        while not self.eval(expr):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what or expr}: not within {timeout}s")
            time.sleep(0.2)

    def screenshot(self, path) -> None:
        data = self.cmd("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def close(self):
        try:
            os.close(self.to_w)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.from_r)
        self.prof.cleanup()
