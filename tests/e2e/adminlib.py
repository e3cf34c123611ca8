# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the admin API and status page tests ([metrics] admin):
a ferry with two users (alice, bob), the metrics listener on a port of its
own and a token file, and a small HTTP client for the API (bounded by
timeouts, one request per connection as the endpoint serves them)."""

from __future__ import annotations

import http.client
import json
import secrets

from opslib import metrics_addr, wait_until

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def admin_ferry(factory, extra: str = "", config: dict | None = None, token: str | None = None):
    """Start ferry with [auth] (USERS), [metrics] admin on and a fresh token
    (f.token); f.maddr is the metrics listener."""
    wd = factory.workdir
    (wd / "users.txt").write_text("".join(f"{u}:plain:{p}\n" for u, p in USERS.items()))
    token = token or secrets.token_hex(24)
    tf = wd / "admin.token"
    tf.write_text(f"# the admin API's token\n{token}\n")
    tf.chmod(0o600)
    f = factory(
        config={"access_log": "yes", **(config or {})},
        auth={"userlist": "users.txt", "max_failures": "0"},
        extra=extra + "\n[metrics]\nlisten = 127.0.0.1:0\nadmin = yes\n"
        f"admin_token_file = {tf}\n",
    )
    f.maddr = metrics_addr(f)
    f.token = token
    return f


class Reply:
    def __init__(self, status: int, headers: dict, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


def call(addr, method: str, path: str, token: str | None = None, headers: dict | None = None,
         body: bytes | None = None, timeout: float = 15.0) -> Reply:
    """One request to the metrics listener; token: sent as a bearer token."""
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    c = http.client.HTTPConnection(addr[0], addr[1], timeout=timeout)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        c.close()


def api(f, method: str, path: str, **kw) -> Reply:
    """call() with f's token."""
    return call(f.maddr, method, path, token=f.token, **kw)


def sessions_of(f, user: str | None = None) -> list[dict]:
    path = "/api/sessions?limit=1000" + (f"&user={user}" if user else "")
    r = api(f, "GET", path)
    assert r.status == 200, r
    return r.json()["sessions"]


def wait_sessions(f, pred, what: str, timeout: float = 10.0) -> list[dict]:
    """Poll /api/sessions until pred(sessions) holds."""
    got = []

    def check():
        nonlocal got
        got = sessions_of(f)
        return pred(got)

    wait_until(check, timeout, what, interval=0.1)
    return got
