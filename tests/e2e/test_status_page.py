# SPDX-License-Identifier: BSD-2-Clause
"""The status page (/status, [metrics] admin = yes) in headless Chromium:
the login form sets the cookie; with a few sessions moving bytes, the page
shows the session table and four charts, and its figures change between
two loads; it loads nothing from anywhere but ferry; the close button ends
a session; without JavaScript the server-rendered page has the same
tables. Screenshots are kept as build/status-page.png and
build/status-page-nojs.png (look at them). Also the cookie's rules,
checked with a plain HTTP client: wrong tokens, cross-origin posts."""

from __future__ import annotations

import threading
import time

import pytest

from adminlib import USERS, admin_ferry, api, call, wait_sessions
from cdplib import CHROMIUM, Browser
from ferrylib import REPO_ROOT, echo_roundtrip, read_until_close, socks_connect_auth

LOAD_SECONDS = 40  # an upper bound: the load stops when the test ends


class Load:
    """A few authenticated sessions moving bytes, and a new session every
    half second, until stopped (or LOAD_SECONDS pass)."""

    def __init__(self, f, echo_server):
        self.f, self.echo = f, echo_server
        self.stop_ev = threading.Event()
        self.socks = [self._open(u) for u in ("alice", "alice", "bob")]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, user):
        s, _ = socks_connect_auth(self.f.addr, user, USERS[user], "127.0.0.1", self.echo.port)
        return s

    def _run(self):
        end = time.monotonic() + LOAD_SECONDS
        n = 0
        while not self.stop_ev.is_set() and time.monotonic() < end:
            for s in list(self.socks[:3]):
                try:
                    echo_roundtrip(s, b"y" * 32768)
                except (OSError, AssertionError):
                    pass
            n += 1
            if n % 5 == 0:  # a short session: a setup on the chart
                try:
                    s = self._open("bob")
                    echo_roundtrip(s, b"z" * 1000)
                    s.close()
                except (OSError, AssertionError):
                    pass
            time.sleep(0.1)

    def stop(self):
        self.stop_ev.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


@pytest.fixture(scope="module")
def sf(module_ferry):
    return admin_ferry(module_ferry, extra="[rules]\nallow to 127.0.0.0/8\n")


FIGURES = ("[...document.querySelectorAll('.fig .v')].map(e => e.textContent).join('|') + '#' +"
           "[...document.querySelectorAll('#t-sessions tbody td')].map(e => e.textContent).join('|')")


def login(b, base, token):
    b.navigate(base + "/status")
    assert b.eval("!!document.querySelector('form[action=\"/status/login\"]')"), "no login form"
    b.eval(f"document.querySelector('input[name=token]').value = {token!r}; "
           "document.querySelector('form').submit(); true")
    b.wait_true("!!document.getElementById('t-sessions')", what="the page after signing in")


@pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (make deps-test)")
def test_status_page_in_chromium(sf, echo_server):
    base = f"http://{sf.maddr[0]}:{sf.maddr[1]}"
    load = Load(sf, echo_server)
    b = Browser()
    try:
        login(b, base, sf.token)
        # The script fills the charts from /api/history and the tables from /api/status.
        b.wait_true("document.querySelectorAll('#charts .chart svg').length == 4 && "
                    "document.querySelectorAll('#charts polyline').length >= 4 && "
                    "/^updated/.test(document.getElementById('updated').textContent)",
                    what="four charts drawn and the figures updated")
        b.wait_true("document.querySelectorAll('#t-sessions tbody tr').length >= 3",
                    what="the session table")
        assert "alice" in b.eval("document.getElementById('t-sessions').textContent")
        assert "bytes/s" in b.eval("document.getElementById('charts').textContent")  # units
        assert "min" in b.eval("document.getElementById('charts').textContent")
        first = b.eval(FIGURES)
        time.sleep(3)
        b.navigate(base + "/status")  # the second load
        b.wait_true("/^updated/.test(document.getElementById('updated').textContent)",
                    what="the figures updated again")
        time.sleep(1)
        b.screenshot(REPO_ROOT / "build" / "status-page.png")
        second = b.eval(FIGURES)
        assert first != second, "the figures did not change between two loads"
        assert int(b.eval("document.getElementById('f-sessions').textContent")) >= 3
        # Nothing but ferry itself: no CDN, no fonts.
        others = [u for u in b.requested_urls()
                  if not u.startswith(base) and not u.startswith(("data:", "about:"))]
        assert others == [], others
        # The close button ends a session.
        sid = b.eval("document.querySelector('#t-sessions tbody tr td').textContent")
        b.eval("document.querySelector('#t-sessions tbody button.close').click(); true")
        wait_sessions(sf, lambda ss: all(str(x["id"]) != sid for x in ss),
                      "the session closed from the page")
    finally:
        b.close()
        load.stop()


@pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (make deps-test)")
def test_status_page_without_javascript(sf, echo_server):
    base = f"http://{sf.maddr[0]}:{sf.maddr[1]}"
    s, _ = socks_connect_auth(sf.addr, "bob", USERS["bob"], "127.0.0.1", echo_server.port)
    echo_roundtrip(s, b"w" * 5000)
    b = Browser()
    try:
        login(b, base, sf.token)  # the form works without the script too
        b.cmd("Emulation.setScriptExecutionDisabled", value=True)
        b.navigate(base + "/status")
        for t in ("t-clients", "t-users", "t-rules", "t-errors", "t-sessions"):
            assert b.eval(f"!!document.getElementById('{t}')"), t
        assert "bob" in b.eval("document.getElementById('t-sessions').textContent")
        assert "bob" in b.eval("document.getElementById('t-users').textContent")
        assert "127.0.0.1" in b.eval("document.getElementById('t-clients').textContent")
        assert b.eval("document.querySelectorAll('#t-rules tbody tr').length") == 2
        assert b.eval("document.getElementById('updated').textContent") == "server-rendered"
        b.screenshot(REPO_ROOT / "build" / "status-page-nojs.png")
        # Its close button is a plain form: it posts and comes back to the page.
        b.eval("document.querySelector('#t-sessions tbody form').submit(); true")
        assert read_until_close(s, timeout=10)[0] == b""
    finally:
        b.close()
        s.close()


def test_login_cookie_rules(sf):
    r = call(sf.maddr, "GET", "/status")
    assert r.status == 401 and b'action="/status/login"' in r.body
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = call(sf.maddr, "POST", "/status/login", headers=form, body=b"token=nope")
    assert r.status == 401 and "set-cookie" not in r.headers
    r = call(sf.maddr, "POST", "/status/login", headers=form, body=f"token={sf.token}".encode())
    assert r.status == 303 and r.headers["location"] == "/status"
    cookie = r.headers["set-cookie"].split(";")[0]
    assert sf.token not in cookie and "HttpOnly" in r.headers["set-cookie"]
    assert "SameSite=Strict" in r.headers["set-cookie"]
    ok = call(sf.maddr, "GET", "/api/sessions", headers={"Cookie": cookie})
    assert ok.status == 200
    # The last character changed (to another one: "0" when it was "0" left it valid).
    bad = call(sf.maddr, "GET", "/api/sessions",
               headers={"Cookie": cookie[:-1] + ("1" if cookie.endswith("0") else "0")})
    assert bad.status == 401
    # A post carrying the cookie from another origin is refused.
    r = call(sf.maddr, "POST", "/api/sessions/1/close",
             headers={"Cookie": cookie, "Origin": "http://evil.example"})
    assert r.status == 403
    # The assets are public (the login page uses them), and embedded.
    for name, ctype in (("app.css", "text/css"), ("app.js", "text/javascript")):
        r = call(sf.maddr, "GET", "/status/" + name)
        assert r.status == 200 and r.headers["content-type"].startswith(ctype) and r.body
    assert call(sf.maddr, "GET", "/status/nothing.js").status == 404
    assert api(sf, "GET", "/status").status == 200  # the bearer token works for the page too
