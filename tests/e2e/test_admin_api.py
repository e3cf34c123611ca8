# SPDX-License-Identifier: BSD-2-Clause
"""The admin API on the metrics listener ([metrics] admin = yes): every
endpoint refuses a request without the token (or with a wrong one) with a
JSON 401; sessions are listed with their client, user, destination and
bytes; closing one ends it (its client sees the connection close), kicking
a user ends all of theirs and nobody else's; a reload through the API is a
reload; edge routes are listed with their backends' health; bad methods,
ids and names get JSON errors with their codes; the
answer is bounded (limit, total, truncated); a start with admin on and no
usable token fails; admin is off by default."""

from __future__ import annotations

import socket

import pytest

from adminlib import USERS, admin_ferry, api, call, sessions_of, wait_sessions
from ferrylib import echo_roundtrip, read_until_close, run_ferry, socks_connect_auth
from opslib import wait_until

# Every endpoint, with the answer it gives a request carrying the token.
ENDPOINTS = [
    ("GET", "/api/sessions", 200),
    ("GET", "/api/users", 200),
    ("GET", "/api/outbounds", 200),
    ("GET", "/api/routes", 200),
    ("GET", "/api/status", 200),
    ("GET", "/api/history", 200),
    ("POST", "/api/sessions/999999/close", 404),
    ("POST", "/api/users/bob/kick", 200),
    ("POST", "/api/reload", 200),
    ("GET", "/status", 200),
]


@pytest.fixture(scope="module")
def af(module_ferry):
    return admin_ferry(module_ferry)


def connect(af, echo_server, user="alice"):
    s, _ = socks_connect_auth(af.addr, user, USERS[user], "127.0.0.1", echo_server.port)
    echo_roundtrip(s, b"x" * 1000)
    return s


def test_every_endpoint_needs_the_token(af):
    for method, path, ok in ENDPOINTS:
        for token in (None, "wrong-" + af.token, af.token[:-1]):
            r = call(af.maddr, method, path, token=token)
            assert r.status == 401, (method, path, token, r)
            if path.startswith("/api/"):
                assert r.headers["content-type"] == "application/json"
                assert "error" in r.json()
                assert r.headers["www-authenticate"].startswith("Bearer")
        r = api(af, method, path)
        assert r.status == ok, (method, path, r)


def test_session_listed_then_closed(af, echo_server):
    s = connect(af, echo_server)
    try:
        mine = wait_sessions(
            af, lambda ss: [x for x in ss if x["user"] == "alice" and x["bytes_up"] >= 1000],
            "alice's session with its bytes")
        row = mine[0]
        assert row["destination"] == f"127.0.0.1:{echo_server.port}"
        assert row["protocol"] == "socks5"
        assert row["outbound"] == "direct"
        assert row["bytes_down"] >= 1000
        assert row["client"].startswith("127.0.0.1:")
        assert row["age_s"] >= 0 and row["idle_s"] >= 0
        r = api(af, "POST", f"/api/sessions/{row['id']}/close")
        assert r.status == 200, r
        assert r.json()["closed"] == 1
        data, how = read_until_close(s, timeout=5)  # the client sees the close
        assert data == b"" and how in ("eof", "reset")
        wait_sessions(af, lambda ss: all(x["id"] != row["id"] for x in ss), "the session gone")
        af.wait_log(r"access .*user=alice.*end=admin-close", timeout=5)
        r = api(af, "POST", f"/api/sessions/{row['id']}/close")
        assert r.status == 404 and r.json()["status"] == 404
    finally:
        s.close()


def test_kick_ends_one_users_sessions(af, echo_server):
    alice = [connect(af, echo_server) for _ in range(2)]
    bob = connect(af, echo_server, "bob")
    try:
        wait_sessions(af, lambda ss: len([x for x in ss if x["user"] == "alice"]) == 2,
                      "alice's two sessions")
        r = api(af, "POST", "/api/users/alice/kick")
        assert r.status == 200, r
        assert r.json() == {"user": "alice", "closed": 2, "workers": r.json()["workers"],
                            "workers_answered": r.json()["workers"]}
        for s in alice:
            assert read_until_close(s, timeout=5)[0] == b""
        echo_roundtrip(bob, b"still here")  # bob's session goes on
        assert [x["user"] for x in sessions_of(af, "bob")] == ["bob"]
        assert sessions_of(af, "alice") == []
    finally:
        for s in alice + [bob]:
            s.close()


def test_users_show_live_figures(af, echo_server):
    s = connect(af, echo_server, "bob")
    try:
        def bob():
            users = {u["name"]: u for u in api(af, "GET", "/api/users").json()["users"]}
            assert set(users) == set(USERS)
            return users["bob"] if users["bob"]["sessions"] == 1 else None

        b = wait_until(bob, 10, "bob's live session")
        assert b["bytes_up"] >= 1000 and b["bytes_down"] >= 1000
        # The accounting's cumulative figures beside the live ones (since the
        # server started: earlier tests' sessions of bob count too; the live
        # one's bytes as the relay moves them).
        t = b["totals"]
        assert t["sessions"] >= 1 and t["udp_datagrams"] == 0
        assert t["bytes_up"] >= 1000 and t["bytes_down"] >= 1000
        assert "quota_bytes" not in t  # no [quota] for bob
        r = api(af, "GET", "/api/users?limit=1&offset=1")
        assert r.status == 200 and [u["name"] for u in r.json()["users"]] == ["bob"]
        assert r.json()["total"] == 2
    finally:
        s.close()


def test_outbounds_and_limit(af, echo_server):
    r = api(af, "GET", "/api/outbounds")
    assert r.status == 200
    obs = {o["name"]: o for o in r.json()["outbounds"]}
    assert obs["direct"]["state"] == "up" and obs["direct"]["kind"] == "direct"
    assert r.json()["default"] == "direct"
    socks = [connect(af, echo_server) for _ in range(3)]
    try:
        wait_sessions(af, lambda ss: len(ss) >= 3, "three sessions")
        r = api(af, "GET", "/api/sessions?limit=1")
        j = r.json()
        assert j["returned"] == 1 and len(j["sessions"]) == 1
        assert j["total"] >= 3 and j["truncated"] is True
    finally:
        for s in socks:
            s.close()


def test_bad_methods_ids_and_paths(af):
    cases = [
        ("GET", "/api/sessions/1/close", 405),
        ("POST", "/api/sessions", 405),
        ("DELETE", "/api/users", 405),
        ("GET", "/api/reload", 405),
        ("GET", "/api/users/alice/kick", 405),
        ("POST", "/api/sessions/abc/close", 400),
        ("POST", "/api/sessions/0/close", 400),
        ("POST", "/api/sessions/99999999999999999999999/close", 400),
        ("POST", "/api/sessions/12345678/close", 404),
        ("POST", "/api/sessions/1/open", 404),
        ("POST", "/api/users/nobody/kick", 404),
        ("POST", "/api/users/a%3Ab/kick", 400),
        ("GET", "/api/nothing", 404),
        ("GET", "/api/sessions?limit=5000", 400),
        ("GET", "/api/history?since=x", 400),
    ]
    for method, path, code in cases:
        r = api(af, method, path)
        assert r.status == code, (method, path, r)
        assert r.headers["content-type"] == "application/json", (method, path)
        assert r.json()["status"] == code
        if code == 405:
            assert "allow" in r.headers
    assert call(af.maddr, "GET", "/metrics").status == 200  # the endpoint's own paths stay
    assert call(af.maddr, "POST", "/metrics").status == 405


def test_reload_through_the_api(af, echo_server):
    users = af.workdir / "users.txt"
    old = users.read_text()
    users.write_text(old + "carol:plain:carol-secret\n")
    try:
        r = api(af, "POST", "/api/reload")
        assert r.status == 200 and r.json()["reload"] == "ok", r
        names = [u["name"] for u in api(af, "GET", "/api/users").json()["users"]]
        assert "carol" in names
        af.config_path.write_text(af.config_path.read_text() + "\nno_such_key = 1\n")
        r = api(af, "POST", "/api/reload")
        assert r.status == 500 and "reload failed" in r.json()["error"], r
        # The log's errors are kept for the status page, newest first.
        errors = api(af, "GET", "/api/status").json()["errors"]
        assert errors and errors[0]["level"] == "error", errors
        assert any("no_such_key" in e["message"] for e in errors), errors
    finally:
        users.write_text(old)
        af.config_path.write_text(af.config_path.read_text().replace("\nno_such_key = 1\n", ""))
    assert api(af, "POST", "/api/reload").status == 200


def test_admin_needs_a_usable_token(tmp_path):
    def check(token_line: str | None, extra: str = "") -> str:
        cfg = tmp_path / "f.conf"
        tf = tmp_path / "t"
        body = "[metrics]\nlisten = 127.0.0.1:0\nadmin = yes\n" + extra
        if token_line is not None:
            tf.write_text(token_line)
            body += f"admin_token_file = {tf}\n"
        cfg.write_text(body)
        r = run_ferry(["serve", "--check", "-c", str(cfg)])
        assert r.rc != 0, r.text
        return r.text

    assert "needs metrics.admin_token_file" in check(None)
    assert "holds no token" in check("\n# only a comment\n\n")
    assert "holds no token" in check("")
    assert "16 to 256 printable" in check("short\n")
    (tmp_path / "gone").unlink(missing_ok=True)
    cfg = tmp_path / "g.conf"
    cfg.write_text("[metrics]\nlisten = 127.0.0.1:0\nadmin = yes\n"
                   f"admin_token_file = {tmp_path / 'gone'}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0 and "cannot read" in r.text
    cfg.write_text("[metrics]\nadmin = yes\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0 and "needs metrics.listen" in r.text


def test_admin_is_off_by_default(ferry):
    f = ferry(extra="[metrics]\nlisten = 127.0.0.1:0\n")
    from opslib import metrics_addr
    addr = metrics_addr(f)
    assert call(addr, "GET", "/api/sessions", token="anything").status == 404
    assert call(addr, "GET", "/status").status == 404


def test_routes_list_edges_and_backend_health(ferry):
    """Edge sections, routes and backends with their health check state
    and counters; configured names only."""
    up = socket.socket()
    up.bind(("127.0.0.1", 0))
    up.listen(8)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()
    try:
        f = admin_ferry(ferry, extra=(
            "\n[edge games]\nlisten = 127.0.0.1:0\nsniff = mc\nhealth_check = 1s\n"
            f"route = a.mc.test -> 127.0.0.1:{up.getsockname()[1]}, 127.0.0.1:{dead_port}\n"))

        def routes():
            e = api(f, "GET", "/api/routes").json()["edges"]
            b = e[0]["routes"][0]["backends"]
            return e if [x["state"] for x in b] == ["up", "down"] else None

        e = wait_until(routes, 10, "the health checks' verdicts")[0]
        assert e["name"] == "games" and e["sniff"] == "mc" and e["halfopen"] == 0
        assert e["rejects"]["unknown-host"] == 0 and e["bans"] == 0
        r = e["routes"][0]
        assert r["host"] == "a.mc.test" and r["signed"] == "off" and r["ok"] == 0
        assert r["backends"][1]["addr"] == f"127.0.0.1:{dead_port}"
    finally:
        up.close()
