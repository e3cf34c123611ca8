# SPDX-License-Identifier: BSD-2-Clause
"""The Prometheus endpoint ([metrics] listen): the exposition format (a strict
checker of our own, and promtool when $PROMTOOL is there), counters that
follow real traffic (SOCKS5 through PySocks, HTTP through curl, rules,
authentication, garbage), the sessions gauge, reload counters, /healthz
while draining, and the endpoint's answers to bad requests and to a client
that says nothing.

Counter checks take the difference of two scrapes of one shared instance
(tests in this module run one after the other), and wait for it with a
deadline: a scrape sums the workers' counters at that moment.
"""

from __future__ import annotations

import re
import signal
import socket
import threading
import time

import pytest

from ferrylib import (
    AUTH_FAIL,
    auth_handshake,
    echo_roundtrip,
    open_client,
    read_until_close,
    recv_exact,
    run_ferry,
    socks_connect,
    socks_connect_auth,
    unused_refused_port,
)
from opslib import (
    Exposition,
    escape_label,
    http_exchange,
    http_get,
    metrics_addr,
    parse_response,
    promtool_check,
    promtool_path,
    scrape,
    unescape_label,
    validate_exposition,
    wait_until,
)
from httplib import Conn, HttpUpstream, payload, read_response, request_bytes
from policylib import run_curl

USER, PASSWORD = "alice", "alice-secret"
SILENT_TIMEOUT = 5.0  # the endpoint's timeout for a whole request head (metrics.c)


def deny_rule(port: int) -> str:
    return f"deny to 127.0.0.1 port {port}"


def rule_label(f, rule: str) -> str:
    lines = f.config_path.read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if line.strip() == rule]
    assert len(hits) == 1, f"rule {rule!r} found {len(hits)} times in {f.config_path}"
    return f"{f.config_path.name}:{hits[0]}"


class Silent:
    """A client of the endpoint that connects and sends nothing; a thread
    records when the endpoint closes it."""

    def __init__(self, addr):
        self.sock = socket.create_connection(addr, timeout=5)
        self.t0 = time.monotonic()
        self.closed_at = None
        self.how = None
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self):
        try:
            data, how = read_until_close(self.sock, timeout=SILENT_TIMEOUT + 20)
            self.how = how if not data else f"{how} after {data[:80]!r}"
        except (AssertionError, OSError) as e:
            self.how = str(e)
        self.closed_at = time.monotonic()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(scope="module")
def holder():
    s, port = unused_refused_port()
    yield port
    s.close()


@pytest.fixture(scope="module")
def mf(module_ferry, holder):
    """The shared instance: [auth] (alice), a deny rule for one port, metrics
    on a port of its own (127.0.0.1:0: the log says which). Right after it
    starts, a silent client connects to the endpoint (checked by the last
    test, so that its wait overlaps the other tests)."""
    (module_ferry.workdir / "users.txt").write_text(f"{USER}:plain:{PASSWORD}\n")
    f = module_ferry(
        config={"access_log": "yes"},
        auth={"userlist": "users.txt", "max_failures": "0"},
        extra=f"[rules]\n{deny_rule(holder)}\nallow to 127.0.0.0/8\n\n[metrics]\nlisten = 127.0.0.1:0\n",
    )
    f.maddr = metrics_addr(f)
    f.silent = Silent(f.maddr)
    yield f
    f.silent.close()


def delta_until(f, before: Exposition, want: dict, timeout: float = 5.0) -> Exposition:
    """Scrape until every (name, labels) in want has grown by exactly its
    value since before; returns that scrape. A counter that overshoots fails
    at once."""
    last = None

    def check():
        nonlocal last
        last = scrape(f.maddr)
        done = True
        for (name, labels), d in want.items():
            got = last.get(name, **dict(labels)) - before.get(name, **dict(labels))
            assert got <= d, f"{name}{dict(labels)} grew by {got}, expected {d}"
            done = done and got == d
        return done

    try:
        wait_until(check, timeout, "counters")
    except AssertionError:
        lines = [f"{n}{dict(l)}: {last.get(n, **dict(l)) - before.get(n, **dict(l))} (want {d})"
                 for (n, l), d in want.items()]
        raise AssertionError("counters not at their expected values (grew by):\n" + "\n".join(lines)) from None
    return last


def K(name, **labels):
    return (name, tuple(sorted(labels.items())))


# ---- the checker itself ------------------------------------------------------------

GOOD = """# HELP x_total Things.
# TYPE x_total counter
x_total{a="q\\"uo\\\\te\\n"} 3
# HELP h Latency.
# TYPE h histogram
h_bucket{le="0.5"} 1
h_bucket{le="+Inf"} 2
h_sum 0.7
h_count 2
"""


@pytest.mark.parametrize(
    "bad,why",
    [
        (GOOD.replace("x_total{", "x{").replace("x_total ", "x ").replace("# HELP x_total", "# HELP x")
         .replace("# TYPE x_total", "# TYPE x"), "does not end in _total"),
        (GOOD.replace('le="+Inf"} 2', 'le="+Inf"} 0'), "not cumulative"),
        (GOOD.replace('h_bucket{le="+Inf"} 2\n', ""), "not +Inf"),
        (GOOD.replace("h_count 2", "h_count 3"), "_count 3.0 != +Inf bucket"),
        (GOOD.replace('\\"uo', '"uo'), "not a valid sample line"),
        (GOOD.replace("} 3", "} three"), "not a valid sample line"),
        (GOOD.replace("# HELP h Latency.\n", ""), "before its family's HELP and TYPE"),
        (GOOD + "x_total{a=\"b\"} 1\n", "continues after other families"),
        (GOOD.replace("h_sum 0.7\n", ""), "no _sum"),
        (GOOD.replace("counter", "summary"), "is not one of"),
        (GOOD + "# some comment\n", "not a HELP or TYPE line"),
        (GOOD.rstrip("\n"), "does not end with a newline"),
    ],
)
def test_checker_rejects(bad, why):
    assert validate_exposition(GOOD) == []
    problems = validate_exposition(bad)
    assert any(why in p for p in problems), problems


# ---- the exposition ------------------------------------------------------------------


def test_scrape_with_curl_is_valid_exposition(mf, tmp_path):
    host, port = mf.maddr
    hfile, bfile = tmp_path / "head", tmp_path / "body"
    r = run_curl(["-D", str(hfile), "-o", str(bfile), f"http://{host}:{port}/metrics"])
    assert r.returncode == 0, r.stderr
    head = hfile.read_bytes().decode("latin-1").rstrip("\r\n")
    body = bfile.read_bytes().decode()
    status = head.split("\r\n")[0]
    assert status.startswith("HTTP/1.1 200 "), head
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in head.split("\r\n")[1:])}
    ctype = [p.strip() for p in headers["content-type"].split(";")]
    assert ctype[0] == "text/plain" and "version=0.0.4" in ctype, headers
    assert int(headers["content-length"]) == len(bfile.read_bytes()), headers
    problems = validate_exposition(body)
    assert not problems, "\n".join(problems[:40]) + "\n--- body ---\n" + body[:3000]
    e = Exposition(body)
    assert e.get("ferry_workers") == 2
    assert e.get("ferry_draining") == 0
    assert e.types["ferry_handshake_duration_seconds"] == "histogram"
    assert e.find("ferry_rule_hits_total"), "no rule counters although [rules] is set"
    assert e.get("process_start_time_seconds") > 1.6e9
    # HEAD: the same head, no body
    h = http_get(mf.maddr, "/metrics", method="HEAD")
    assert h.status == 200 and h.body == b"" and h.headers["content-type"] == headers["content-type"]


def test_promtool_accepts_exposition(mf):
    if not promtool_path():
        pytest.skip("$PROMTOOL is not an executable (make build/tools/usr/bin/promtool fetches it)")
    # with traffic in every histogram and a denied rule counted, not only zeros
    s, _ = socks_connect_auth(mf.addr, USER, PASSWORD, "127.0.0.1", mf.maddr[1])
    s.close()
    body = scrape(mf.maddr).text
    rc, out = promtool_check(body)
    assert rc == 0, f"promtool check metrics: rc={rc}\n{out}"


# ---- counters follow traffic --------------------------------------------------------------


def test_socks5_connect_counts(mf, echo_server):
    socks = pytest.importorskip("socks", reason="PySocks (python3-socks) is not installed")
    before = scrape(mf.maddr)
    up = bytes(range(256)) * 48 + b"tail"  # 12292 bytes each way
    s = socks.socksocket(socket.AF_INET, socket.SOCK_STREAM)
    s.set_proxy(socks.SOCKS5, mf.addr[0], mf.port, rdns=False, username=USER, password=PASSWORD)
    s.settimeout(5)
    try:
        s.connect(echo_server.addr)
        s.sendall(up)
        assert recv_exact(s, len(up)) == up
        s.shutdown(socket.SHUT_WR)
        rest, how = read_until_close(s)
        assert (rest, how) == (b"", "eof")
    finally:
        s.close()
    after = delta_until(mf, before, {
        K("ferry_connections_accepted_total"): 1,
        K("ferry_sessions_total", protocol="socks5", outcome="ok"): 1,
        K("ferry_relay_bytes_total", direction="up"): len(up),
        K("ferry_relay_bytes_total", direction="down"): len(up),
        K("ferry_handshake_duration_seconds_count", protocol="socks5"): 1,
        K("ferry_auth_total", result="ok"): 1,
        K("ferry_sessions_total", protocol="socks5", outcome="denied"): 0,
    })
    inf = after.get("ferry_handshake_duration_seconds_bucket", protocol="socks5", le="+Inf")
    assert inf == after.get("ferry_handshake_duration_seconds_count", protocol="socks5")
    assert after.get("ferry_handshake_duration_seconds_sum", protocol="socks5") > 0


def test_denied_destination_counts_rule(mf, holder):
    label = rule_label(mf, deny_rule(holder))
    before = scrape(mf.maddr)
    assert before.get("ferry_rule_hits_total", rule=label, action="deny") >= 0
    s, r = socks_connect_auth(mf.addr, USER, PASSWORD, "127.0.0.1", holder, expect=0x02)
    s.close()
    after = delta_until(mf, before, {
        K("ferry_sessions_total", protocol="socks5", outcome="denied"): 1,
        K("ferry_rule_hits_total", rule=label, action="deny"): 1,
        K("ferry_denied_total"): 1,
        K("ferry_handshake_duration_seconds_count", protocol="socks5"): 0,
    })
    allow = rule_label(mf, "allow to 127.0.0.0/8")
    assert after.get("ferry_rule_hits_total", rule=allow, action="allow") == before.get(
        "ferry_rule_hits_total", rule=allow, action="allow")


def test_bad_credentials_count(mf):
    before = scrape(mf.maddr)
    with open_client(mf.addr) as s:
        assert auth_handshake(s, USER, PASSWORD + "x") == AUTH_FAIL
        read_until_close(s)
    delta_until(mf, before, {
        K("ferry_auth_total", result="denied"): 1,
        K("ferry_auth_total", result="ok"): 0,
        K("ferry_sessions_total", protocol="socks5", outcome="auth_failed"): 1,
    })


def test_http_proxy_counts(mf, http_server):
    before = scrape(mf.maddr)
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{mf.port}", "--proxy-user", f"{USER}:{PASSWORD}",
                  http_server.url("small.txt")])
    assert r.returncode == 0, r.stderr
    assert r.stdout == (http_server.directory / "small.txt").read_text()
    delta_until(mf, before, {
        K("ferry_connections_accepted_total"): 1,
        K("ferry_sessions_total", protocol="http", outcome="ok"): 1,
        K("ferry_handshake_duration_seconds_count", protocol="http"): 1,
        K("ferry_sessions_total", protocol="socks5", outcome="ok"): 0,
    })


def test_http_bytes_counted_everywhere(ferry, tcp_server, echo_server):
    """One definition of bytes for every protocol: all bytes relayed between
    the client and the destination, each way, as forwarded (HTTP heads as
    rewritten included; ferry's own replies and the CONNECT exchange not).
    The access log, ferry_relay_bytes_total and the stop line agree with
    each other and with what the client and the origin saw."""
    f = ferry(config={"access_log": "yes"}, extra="[metrics]\nlisten = 127.0.0.1:0\n")
    maddr = metrics_addr(f)
    up = tcp_server(HttpUpstream)
    base = f"http://127.0.0.1:{up.port}"
    before = scrape(maddr)
    size, post = 1_000_000, payload(100_000)
    with Conn.open(f.addr) as c:
        keepalive = c.sock.getsockname()
        c.send(request_bytes("GET", f"{base}/bytes/{size}", [("Host", "x")]))
        r_get = read_response(c, timeout=30)
        assert r_get.status == 200 and r_get.body == payload(size)
        c.send(request_bytes("POST", f"{base}/echo/bytes", [("Host", "x")], post))
        r_post = read_response(c, timeout=30)
        assert r_post.status == 200 and r_post.body == post
    tunnel = bytes(range(256)) * 200
    with Conn.open(f.addr) as c:
        connect = c.sock.getsockname()
        c.send(f"CONNECT 127.0.0.1:{echo_server.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200 ")
        c.send(tunnel)
        assert c.read_exact(len(tunnel)) == tunnel
        c.sock.shutdown(socket.SHUT_WR)
        assert c.read_to_eof() == b""
    with Conn.open(f.addr) as c:
        refused = c.sock.getsockname()
        c.send(b"GET /not-absolute HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(c).status == 400

    def lines_of(client, n):
        want = f"{client[0]}:{client[1]}"
        return wait_until(lambda: (lambda hits: hits if len(hits) == n else None)(
            [e for e in f.access_entries() if e.get("client") == want]), 5, f"{n} access lines of {want}")

    rec_get, rec_post = up.requests(f"/bytes/{size}")[0], up.requests("/echo/bytes")[0]
    get_line, post_line = lines_of(keepalive, 2)
    seen = {  # (up, down): what the origin got, what the client got
        "GET": (len(rec_get.head) + len(rec_get.raw_body), len(r_get.head) + len(r_get.raw_body)),
        "POST": (len(rec_post.head) + len(rec_post.raw_body), len(r_post.head) + len(r_post.raw_body)),
    }
    assert seen["GET"][0] > 0 and seen["GET"][1] > size  # heads count, both ways
    for line, cmd in ((get_line, "GET"), (post_line, "POST")):
        assert line["cmd"] == cmd and (int(line["up"]), int(line["down"])) == seen[cmd], (line, seen[cmd])
    (connect_line,) = lines_of(connect, 1)
    assert (connect_line["cmd"], connect_line["up"], connect_line["down"]) == (
        "CONNECT", str(len(tunnel)), str(len(tunnel))), connect_line
    (refused_line,) = lines_of(refused, 1)
    assert (refused_line["reply"], refused_line["up"], refused_line["down"]) == ("400", "0", "0"), refused_line

    total_up = sum(int(e["up"]) for e in (get_line, post_line, connect_line))
    total_down = sum(int(e["down"]) for e in (get_line, post_line, connect_line))
    f.maddr = maddr
    delta_until(f, before, {
        K("ferry_relay_bytes_total", direction="up"): total_up,
        K("ferry_relay_bytes_total", direction="down"): total_down,
    })
    assert f.stop() == 0
    m = re.search(r"stopped: \d+ connections accepted \(\d+ over max_connections\), (\d+) bytes up, "
                  r"(\d+) bytes down", f.log_text())
    assert m and (int(m.group(1)), int(m.group(2))) == (total_up, total_down), (m and m.group(0), total_up,
                                                                                 total_down)


def test_garbage_counts_unknown_protocol(mf):
    before = scrape(mf.maddr)
    with open_client(mf.addr) as s:
        s.sendall(b"\x00\x01garbage")
        read_until_close(s)
    delta_until(mf, before, {
        K("ferry_unknown_protocol_total"): 1,
        K("ferry_sessions_total", protocol="none", outcome="bad_request"): 1,
    })


def test_sessions_active_back_to_zero(mf, echo_server):
    socks = []
    try:
        for _ in range(3):
            s, _ = socks_connect_auth(mf.addr, USER, PASSWORD, *echo_server.addr)
            socks.append(s)
            echo_roundtrip(s, b"open")
        e = wait_until(lambda: (lambda x: x if x.get("ferry_sessions_active", protocol="socks5") == 3 else None)(
            scrape(mf.maddr)), 5, "3 socks5 sessions active")
        assert e.total("ferry_worker_sessions_active") == 3
    finally:
        for s in socks:
            s.close()

    def all_zero():
        x = scrape(mf.maddr)
        return x if all(s.value == 0 for s in x.find("ferry_sessions_active") + x.find(
            "ferry_worker_sessions_active")) else None

    e = wait_until(all_zero, 5, "every sessions gauge back to 0")
    assert e.get("ferry_sessions_active", protocol="none") == 0


# ---- reloads and draining --------------------------------------------------------------------


def test_reload_counters(ferry):
    f = ferry(extra="[metrics]\nlisten = 127.0.0.1:0\n")
    maddr = metrics_addr(f)
    e = scrape(maddr)
    assert e.get("ferry_config_reloads_total", result="ok") == 0
    assert e.get("ferry_config_reloads_total", result="failed") == 0
    t_start = e.get("ferry_config_last_reload_success_timestamp_seconds")
    good = f.config_path.read_text()

    off = f.log_offset()
    f.config_path.write_text(good.replace("handshake_timeout = 3s", "handshake_timeout = 4s"))
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    e = wait_until(lambda: (lambda x: x if x.get("ferry_config_reloads_total", result="ok") == 1 else None)(
        scrape(maddr)), 5, "reloads ok = 1")
    assert e.get("ferry_config_reloads_total", result="failed") == 0
    assert e.get("ferry_config_last_reload_success_timestamp_seconds") >= t_start

    off = f.log_offset()
    f.config_path.write_text(good + "no_such_key = 1\n")
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: the new configuration has 1 error", start=off)
    e = wait_until(lambda: (lambda x: x if x.get("ferry_config_reloads_total", result="failed") == 1 else None)(
        scrape(maddr)), 5, "reloads failed = 1")
    assert e.get("ferry_config_reloads_total", result="ok") == 1
    assert not validate_exposition(e.text)


def test_healthz_and_draining(ferry, echo_server):
    f = ferry(config={"shutdown_timeout": "20s"}, extra="[metrics]\nlisten = 127.0.0.1:0\n")
    maddr = metrics_addr(f)
    r = http_get(maddr, "/healthz")
    assert (r.status, r.body) == (200, b"ok\n"), r.raw
    assert r.headers["content-type"].startswith("text/plain")
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"before SIGTERM")
        off = f.log_offset()
        f.send_signal(signal.SIGTERM)
        f.wait_log(r"SIGTERM: stopping; draining 1 sessions", start=off)
        r = wait_until(lambda: (lambda x: x if x.status == 503 else None)(http_get(maddr, "/healthz")), 5,
                       "/healthz 503")
        assert r.body == b"draining\n", r.raw
        e = scrape(maddr)
        assert e.get("ferry_draining") == 1
        assert e.get("ferry_sessions_active", protocol="socks5") == 1
        assert not validate_exposition(e.text)
        echo_roundtrip(s, b"still relaying while draining")
        s.shutdown(socket.SHUT_WR)
        read_until_close(s)
    assert f.wait(15) == 0, f.log_text()


# ---- bad requests to the endpoint ------------------------------------------------------------


def test_endpoint_bad_requests(mf):
    r = http_exchange(mf.maddr, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert r.status == 405, r.raw
    assert r.headers.get("allow") == "GET, HEAD", r.raw
    r = http_get(mf.maddr, "/nope")
    assert r.status == 404, r.raw
    r = http_get(mf.maddr, "/metricsx")
    assert r.status == 404, r.raw
    r = http_get(mf.maddr, "/metrics?name[]=x")  # a query string is ignored
    assert r.status == 200, r.raw[:200]
    r = http_exchange(mf.maddr, b"garbage\r\n\r\n")
    assert r.status == 400, r.raw
    r = http_exchange(mf.maddr, b"GET /metrics HTTP/1.1 extra\r\n\r\n")
    assert r.status == 400, r.raw
    r = http_exchange(mf.maddr, b"GET /metrics SPDY/3\r\n\r\n")
    assert r.status == 400, r.raw
    # a head of exactly the buffer's size (4 KiB) without its end
    big = b"GET /metrics HTTP/1.1\r\nX-Filler: " + b"a" * 4096
    r = http_exchange(mf.maddr, big[:4096])
    assert r.status == 431, r.raw
    # the endpoint still answers
    assert scrape(mf.maddr).get("ferry_workers") == 2


def test_request_split_byte_by_byte(mf):
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(mf.maddr, timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(req)):
            s.send(req[i : i + 1])
            time.sleep(0.002)
        data, _ = read_until_close(s)
    r = parse_response(data)
    assert (r.status, r.body) == (200, b"ok\n"), data


def test_silent_client_closed_without_blocking_scrapes(mf):
    """Placed last: the silent client connected when the instance started."""
    extra = Silent(mf.maddr)  # a second one, open for sure during this scrape
    try:
        e = scrape(mf.maddr)
        assert e.get("ferry_workers") == 2
        assert extra.closed_at is None, f"a silent client was closed at once: {extra.how}"
    finally:
        extra.close()
    sil = mf.silent
    sil.thread.join(max(0.0, sil.t0 + SILENT_TIMEOUT + 10 - time.monotonic()))
    assert sil.closed_at is not None, f"the silent client is still open {SILENT_TIMEOUT + 10}s after connecting"
    assert sil.how in ("eof", "reset"), sil.how
    took = sil.closed_at - sil.t0
    assert took >= SILENT_TIMEOUT - 2, f"closed after {took:.1f}s, before the {SILENT_TIMEOUT}s timeout"


def test_idle_connections_do_not_lock_out_healthz(ferry):
    """More idle connections than the endpoint's 32 client slots (some
    with half a request): /healthz and /metrics still answer at once, each
    taking the place of the oldest idle connection; a second round too."""
    f = ferry(extra="[metrics]\nlisten = 127.0.0.1:0\n")
    maddr = metrics_addr(f)
    idle = []
    try:
        for i in range(40):
            s = socket.create_connection(maddr, timeout=5)
            if i % 2:
                s.sendall(b"GET /metrics HTTP/1.1\r\n")  # never finished
            idle.append(s)
        for _ in range(2):
            for path in ("/healthz", "/metrics"):
                r = http_get(maddr, path, timeout=4.0)
                assert r.status == 200, (path, r.status)
            idle += [socket.create_connection(maddr, timeout=5) for _ in range(8)]
    finally:
        for s in idle:
            s.close()


# ---- configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nonsense", "127.0.0.1", "127.0.0.1:99999", "localhost:9090"])
def test_check_bad_metrics_listen(tmp_path, value):
    conf = tmp_path / "m.conf"
    conf.write_text(f"workers = 1\n\n[metrics]\nlisten = {value}\n")
    r = run_ferry(["serve", "-c", str(conf), "--check"])
    assert r.rc == 1, r.text
    assert f"{conf}:4: metrics.listen: '{value}'" in r.err, r.text


def test_check_metrics_listen_same_as_proxy(tmp_path):
    conf = tmp_path / "m.conf"
    conf.write_text("listen = 127.0.0.1:18080\n[metrics]\nlisten = 127.0.0.1:18080\n")
    r = run_ferry(["serve", "-c", str(conf), "--check"])
    assert r.rc == 1, r.text
    assert "metrics.listen: 127.0.0.1:18080 is also a proxy listen address" in r.err, r.text


def test_escape_label_roundtrip():
    for v in ['a"b', "c\\d", "e\nf", 'x\\"\n']:
        assert unescape_label('"' + escape_label(v) + '"') == v


# ---- long and non-ASCII rule names -------------------------------------------------------------


@pytest.mark.parametrize("stem", ["r" * 70, "\u00e9" * 40], ids=["ascii", "utf8"])
def test_long_rules_file_name_labels(ferry, tmp_path, stem):
    rules = f"{stem}.rules"
    (tmp_path / rules).write_text("deny to 10.0.0.0/8\ndeny to 172.16.0.0/12\n")
    f = ferry(config={"rules_file": rules}, extra="[metrics]\nlisten = 127.0.0.1:0\n")
    r = http_get(metrics_addr(f), "/metrics")
    assert r.status == 200
    text = r.body.decode("utf-8")  # a label cut inside a character is not UTF-8
    assert not validate_exposition(text)
    e = Exposition(text)
    assert e.get("ferry_rule_hits_total", rule=f"{rules}:1", action="deny") == 0
    assert e.get("ferry_rule_hits_total", rule=f"{rules}:2", action="deny") == 0
    if promtool_path():
        rc, out = promtool_check(text)
        assert rc == 0, out
