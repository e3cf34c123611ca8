# SPDX-License-Identifier: BSD-2-Clause
"""Access rules and limits ([rules], rules_file, rules_default, protected
ranges, [limits]) seen from clients.

Rules: allowed and denied destinations by address range, by name (exact and
*.suffix; names under .localhost resolve to 127.0.0.1 and ::1 inside ferry),
by port, by command and by user, over SOCKS5, SOCKS4/4a and HTTP (curl and
raw requests), with the exact refusals (SOCKS5 0x02, SOCKS4 0x5B, HTTP 403)
and `rule=FILE:LINE` in the access log; ranges applied to what a name
resolves to; first match wins; rules_default; rules_file; rule errors named
by FILE:LINE in --check and at start; UDP destinations one by one; the
protected ranges of a public listener.

Limits: per_ip (the connection over it is closed at accept without a byte),
rate (a flood from 127.0.0.2 is cut while 127.0.0.3 is served; logged once),
per_user (RFC 1929 failure with end=user-limit, HTTP 429), bandwidth per
connection and per user (a 4 MiB transfer at 1 MiB/s takes ~3.75 s, with
ferry's CPU far below the wall time: no busy loop), and descriptor
exhaustion (ferry under `prlimit --nofile=64:64` pauses accepting, then
serves again).

Loopback only; every wait is bounded. Timing checks are one-sided where
they prove a limit (a transfer cannot finish faster than the rate allows)
and generous where they only guard against a hang."""

import base64
import hashlib
import socket
import time

import pytest

from ferrylib import (
    HAVE_IPV6,
    EchoServer,
    echo_roundtrip,
    expect_auth_refused,
    greeting,
    open_client,
    read_method,
    read_until_close,
    run_ferry,
    userpass,
)
from policylib import (
    SOCKS4_GRANTED,
    SOCKS4_REJECTED,
    Downloader,
    SendServer,
    closed_without_reply,
    connect_raw,
    cpu_seconds,
    http_raw,
    make_userlist,
    nofile_limit,
    rule_ref,
    rules_text,
    run_curl,
    socks4_try,
    socks5_try,
    start_with_nofile,
    wait_until,
)
from opslib import metrics_addr, scrape
from udplib import UdpAssoc, UdpEcho

need_v6 = pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback (::1) on this host")

SUCCEEDED = 0x00
NOT_ALLOWED = 0x02
USERS = {"alice": "alice-pw-1", "bob": "bob-pw-2", "carol": "carol-pw-3"}


def basic(user: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()


# ---- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def srv(echo_server, http_server):
    """Destinations: echo servers on 127.0.0.1 (e, e2, pd), one on 127.0.0.9
    (x9), one on 127.0.0.1 and ::1 with the same port (p46), and the
    session's HTTP file server (h)."""
    made = []

    def mk(host, **kw):
        s = EchoServer(host, **kw)
        made.append(s)
        return s

    class S:
        pass

    s = S()
    s.echo = echo_server
    s.e = echo_server.port
    s.echo2 = mk("127.0.0.1")
    s.e2 = s.echo2.port
    s.echo_pd = mk("127.0.0.1")
    s.pd = s.echo_pd.port
    s.echo9 = mk("127.0.0.9")
    s.x9 = s.echo9.port
    s.http = http_server
    s.h = http_server.port
    s.p46 = None
    if HAVE_IPV6:
        for _ in range(20):
            a = mk("127.0.0.1")
            try:
                mk("::1", port=a.port)
            except OSError:
                continue
            s.p46 = a.port
            break
    yield s
    for m in made:
        m.stop()


@pytest.fixture(scope="module")
def userlist(tmp_path_factory):
    return make_userlist(tmp_path_factory.mktemp("policy-users") / "users", USERS)


RULES_A = [
    "deny to 127.0.0.9",  # one host, by range (/32)
    "deny port {pd}",
    "deny to bad.ok.localhost",  # an exact name, before the suffix that allows it
    "allow to 127.0.0.0/8 port {e}, {pd}, {x9}",
    "deny to 127.0.0.1 port {e}",  # never reached: the rule above matches first
    "allow to exact.localhost, *.ok.localhost port {e2}",
    "allow to 127.0.0.0/8 port {h} cmd http",
]


def fmt(rules, s) -> list[str]:
    return [r.format(e=s.e, e2=s.e2, pd=s.pd, x9=s.x9, h=s.h, p46=s.p46) for r in rules]


@pytest.fixture(scope="module")
def fa(module_ferry, srv):
    """rules_default = deny and RULES_A, on 127.0.0.1."""
    f = module_ferry(config={"rules_default": "deny"}, extra=rules_text(fmt(RULES_A, srv)))
    f.rules = fmt(RULES_A, srv)
    return f


def ref(f, i: int) -> str:
    return rule_ref(f, f.rules[i])


def access_of(f, sock) -> dict:
    client = sock.getsockname()[:2]
    sock.close()
    return f.access_for(client)


def expect_denied(f, host, port, rule: str, user=None, proxy=None):
    """SOCKS5 CONNECT refused with 0x02, closed after the reply, and the
    access log names rule."""
    s, r = socks5_try(proxy or f.addr, host, port, user=user, password=USERS.get(user))
    assert r.rep == NOT_ALLOWED, f"CONNECT {host}:{port}: reply {r.rep:#04x}, expected 0x02"
    rest, _ = read_until_close(s)
    assert rest == b""
    e = access_of(f, s)
    assert e.get("reply") == "not-allowed" and e.get("end") == "denied", e
    assert e.get("rule") == rule, f"CONNECT {host}:{port}: rule={e.get('rule')}, expected {rule}: {e}"
    return e


def expect_allowed(f, host, port, rule: str | None = None, user=None, proxy=None):
    s, r = socks5_try(proxy or f.addr, host, port, user=user, password=USERS.get(user))
    assert r.rep == 0, f"CONNECT {host}:{port}: reply {r.rep:#04x}, expected success"
    echo_roundtrip(s, b"ping through the rules\n")
    e = access_of(f, s)
    assert e.get("reply") == "succeeded", e
    if rule is not None:
        assert e.get("rule") == rule, f"CONNECT {host}:{port}: rule={e.get('rule')}, expected {rule}: {e}"
    return e


# ---- rules over SOCKS5 -------------------------------------------------------------


def test_socks5_by_address_range(fa, srv):
    e = expect_allowed(fa, "127.0.0.1", srv.e, ref(fa, 3))
    assert e["addr"] == f"127.0.0.1:{srv.e}"
    # 127.0.0.9 would be allowed by the range rule (and has a listening
    # server), but the host rule comes first.
    before = len(srv.echo9.peers)
    expect_denied(fa, "127.0.0.9", srv.x9, ref(fa, 0))
    assert len(srv.echo9.peers) == before, "ferry connected to a denied destination"
    # A literal sent as a name (ATYP 3) is the same address.
    expect_denied(fa, b"127.0.0.9", srv.x9, ref(fa, 0))
    assert len(srv.echo9.peers) == before


def test_socks5_by_port(fa, srv):
    before = len(srv.echo_pd.peers)
    # The range rule lists pd too: the port rule above it decides.
    expect_denied(fa, "127.0.0.1", srv.pd, ref(fa, 1))
    expect_denied(fa, "exact.localhost", srv.pd, ref(fa, 1))
    assert len(srv.echo_pd.peers) == before


def test_socks5_by_name(fa, srv):
    expect_allowed(fa, "exact.localhost", srv.e2, ref(fa, 5))
    expect_allowed(fa, "x.ok.localhost", srv.e2, ref(fa, 5))
    expect_allowed(fa, "a.b.ok.localhost", srv.e2, ref(fa, 5))
    expect_allowed(fa, "X.OK.LocalHost", srv.e2, ref(fa, 5))  # case-insensitive
    expect_allowed(fa, "x.ok.localhost.", srv.e2, ref(fa, 5))  # trailing dot
    # *.suffix is not the bare name; exact is not its subdomains.
    expect_denied(fa, "ok.localhost", srv.e2, "default")
    expect_denied(fa, "x.exact.localhost", srv.e2, "default")
    expect_denied(fa, "xok.localhost", srv.e2, "default")
    # The name rule does not cover the address the name resolves to.
    expect_denied(fa, "127.0.0.1", srv.e2, "default")


def test_first_match_wins(fa, srv):
    # deny bad.ok.localhost (line 3) before allow *.ok.localhost (line 6)
    expect_denied(fa, "bad.ok.localhost", srv.e2, ref(fa, 2))
    expect_denied(fa, "BAD.ok.localhost", srv.e2, ref(fa, 2))
    expect_allowed(fa, "notbad.ok.localhost", srv.e2, ref(fa, 5))
    # allow 127.0.0.0/8 port e (line 4) before deny 127.0.0.1 port e (line 5)
    expect_allowed(fa, "127.0.0.1", srv.e, ref(fa, 3))


def test_name_allowed_through_its_address(fa, srv):
    """No rule names 'localhost'; the range rule applies to the address it
    resolves to."""
    e = expect_allowed(fa, "localhost", srv.e)
    assert e["dst"] == f"localhost:{srv.e}" and e["addr"] == f"127.0.0.1:{srv.e}", e


def test_access_log_names_the_rule_that_allowed_a_name(fa, srv):
    """localhost resolves to 127.0.0.1 (allowed by line 4) and ::1 (denied
    by default); the session goes to 127.0.0.1, so line 4 decided it."""
    e = expect_allowed(fa, "localhost", srv.e)
    assert e["addr"] == f"127.0.0.1:{srv.e}", e
    assert e.get("rule") == ref(fa, 3), (
        f"a session allowed by {ref(fa, 3)} (to {e['addr']}) is logged as rule={e.get('rule')} "
        f"(rules_default is deny): {e}"
    )


def test_cmd_matcher(fa, srv):
    # "allow ... port h cmd http": not for a SOCKS CONNECT
    expect_denied(fa, "127.0.0.1", srv.h, "default")


# ---- rules over HTTP ------------------------------------------------------------------


def test_http_allowed_and_denied(fa, srv, tmp_path):
    proxy = f"http://127.0.0.1:{fa.port}"
    out = tmp_path / "small.txt"
    r = run_curl(["-x", proxy, "-o", str(out), "-w", "%{http_code}", srv.http.url("small.txt")])
    assert r.stdout == "200", r
    assert hashlib.sha256(out.read_bytes()).hexdigest() == srv.http.files["small.txt"]
    # CONNECT (a tunnel) is cmd http as well.
    r = run_curl(["-p", "-x", proxy, "-o", str(out), "-w", "%{http_connect}", srv.http.url("small.txt")])
    assert r.returncode == 0 and r.stdout == "200", r
    r = run_curl(["-p", "-x", proxy, "-o", "/dev/null", "-w", "%{http_connect}",
                  f"http://127.0.0.9:{srv.x9}/"])
    assert r.stdout == "403", r
    r = run_curl(["-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", f"http://bad.ok.localhost:{srv.h}/"])
    assert r.stdout == "403", r

    cases = [
        (f"http://127.0.0.9:{srv.x9}/", ref(fa, 0)),
        (f"http://127.0.0.1:{srv.pd}/", ref(fa, 1)),
        (f"http://bad.ok.localhost:{srv.e2}/", ref(fa, 2)),
        (f"http://127.0.0.1:{srv.e2}/", "default"),
    ]
    for url, rule in cases:
        host = url.split("/")[2]
        rep = http_raw(fa.addr, f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        assert rep.status == 403, (url, rep.head)
        e = fa.access_for(rep.client)
        assert e.get("rule") == rule and e.get("reply") == "403", (url, e)
    rep = http_raw(fa.addr, f"CONNECT 127.0.0.9:{srv.x9} HTTP/1.1\r\nHost: 127.0.0.9:{srv.x9}\r\n\r\n".encode())
    assert rep.status == 403, rep.head
    assert fa.access_for(rep.client).get("rule") == ref(fa, 0)


# ---- rules over SOCKS4 --------------------------------------------------------------------


def test_socks4_allowed_and_denied(fa, srv):
    s, code = socks4_try(fa.addr, "127.0.0.1", srv.e, b"someone")
    assert code == SOCKS4_GRANTED
    echo_roundtrip(s, b"socks4\n")
    assert access_of(fa, s).get("rule") == ref(fa, 3)
    s, code = socks4_try(fa.addr, "x.ok.localhost", srv.e2)
    assert code == SOCKS4_GRANTED
    echo_roundtrip(s, b"socks4a\n")
    s.close()
    for host, port, rule in [
        ("127.0.0.9", srv.x9, ref(fa, 0)),
        ("127.0.0.1", srv.pd, ref(fa, 1)),
        ("bad.ok.localhost", srv.e2, ref(fa, 2)),
        ("ok.localhost", srv.e2, "default"),
    ]:
        s, code = socks4_try(fa.addr, host, port)
        assert code == SOCKS4_REJECTED, (host, port, hex(code))
        rest, _ = read_until_close(s)
        assert rest == b""
        e = access_of(fa, s)
        assert e.get("rule") == rule and e.get("end") == "denied", (host, e)


# ---- rules by user --------------------------------------------------------------------------


RULES_U = [
    "deny user bob",
    "allow user alice to 127.0.0.0/8 port {e}",
    "allow user * port {e2}",
]


@pytest.fixture(scope="module")
def fu(module_ferry, srv, userlist):
    rules = fmt(RULES_U, srv)
    f = module_ferry(config={"rules_default": "deny"}, auth={"userlist": str(userlist)},
                     extra=rules_text(rules))
    f.rules = rules
    return f


def test_rules_by_user(fu, srv):
    e = expect_allowed(fu, "127.0.0.1", srv.e, ref(fu, 1), user="alice")
    assert e["user"] == "alice"
    expect_allowed(fu, "127.0.0.1", srv.e2, ref(fu, 2), user="alice")
    expect_denied(fu, "127.0.0.1", srv.e, ref(fu, 0), user="bob")
    expect_denied(fu, "127.0.0.1", srv.e2, ref(fu, 0), user="bob")  # first match: deny bob
    expect_denied(fu, "127.0.0.1", srv.e, "default", user="carol")
    expect_allowed(fu, "127.0.0.1", srv.e2, ref(fu, 2), user="carol")  # user *


def test_rules_by_user_http(fu, srv):
    def connect(user, port):
        return http_raw(fu.addr, (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                  f"Proxy-Authorization: {basic(user)}\r\n\r\n").encode())

    rep = connect("alice", srv.e)
    assert rep.status == 200, rep.head
    rep = connect("bob", srv.e2)
    assert rep.status == 403, rep.head
    e = fu.access_for(rep.client)
    assert e.get("rule") == ref(fu, 0) and e.get("user") == "bob", e


# ---- names resolved into denied ranges, UDP --------------------------------------------------


RULES_R = [
    "deny to 127.0.0.0/8, ::1 port {e}",
    "allow to *.localhost port {e}",
    "deny to 127.0.0.0/8 port {p46}",
    "deny cmd udp port {u2}",
]


@pytest.fixture(scope="module")
def udp_echoes():
    a, b = UdpEcho("127.0.0.1"), UdpEcho("127.0.0.1")
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture(scope="module")
def fr(module_ferry, srv, udp_echoes):
    rules = [r.format(e=srv.e, p46=srv.p46 or 9, u2=udp_echoes[1].port) for r in RULES_R]
    f = module_ferry(extra=rules_text(rules))  # rules_default = allow
    f.rules = rules
    return f


def test_localhost_denied_by_range_rule(fr, srv):
    """'deny to 127.0.0.0/8, ::1' names no domain, yet 'localhost' is denied,
    and so is a name that the next rule allows by name: the ranges apply to
    the addresses names resolve to."""
    before = len(srv.echo.peers)
    e = expect_denied(fr, "localhost", srv.e, ref(fr, 0))
    assert e["dst"] == f"localhost:{srv.e}", e
    # allowed by name (line 2), but it resolves into the range denied on line 1
    expect_denied(fr, "a.localhost", srv.e, ref(fr, 0))
    expect_denied(fr, "127.0.0.1", srv.e, ref(fr, 0))
    assert len(srv.echo.peers) == before, "ferry connected to a denied destination"


@need_v6
def test_localhost_ipv4_range_only_leaves_ipv6(fr, srv):
    """docs/configuration.md: 'with deny to 127.0.0.0/8 alone, localhost
    still reaches ::1'. localhost resolves to 127.0.0.1 and ::1 and a server
    listens on both with the same port: ferry must never connect to the
    denied 127.0.0.1, and logs the rule that allowed ::1 (the default)."""
    assert srv.p46, "no port free on both 127.0.0.1 and ::1"
    s, r = socks5_try(fr.addr, "localhost", srv.p46)
    e = access_of(fr, s)
    assert r.rep == SUCCEEDED, f"reply {r.rep:#04x} (access: {e})"
    assert e.get("addr") == f"[::1]:{srv.p46}", e
    assert e.get("rule") == "default", e


def test_ipv4_mapped_destination_checked(fr, fp, srv):
    """An IPv4-mapped IPv6 destination (::ffff:127.0.0.1) reaches 127.0.0.1:
    the rules and the protected ranges must see it as 127.0.0.1."""
    got = []
    for f, port, what in [(fr, srv.e, "rule 'deny to 127.0.0.0/8, ::1'"), (fp, srv.e, "protected range")]:
        for host in ("::ffff:127.0.0.1", b"::ffff:127.0.0.1"):
            s, r = socks5_try(("127.0.0.1", f.port), host, port)
            if r.rep != NOT_ALLOWED:
                e = access_of(f, s)
                got.append(f"{what}: CONNECT {host!r}:{port} -> reply {r.rep:#04x}, "
                           f"addr={e.get('addr')} rule={e.get('rule')}")
            else:
                s.close()
    assert not got, "IPv4-mapped destinations bypass the checks:\n" + "\n".join(got)


def test_embedded_ipv4_destination_checked(fr, fp, srv):
    """NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses reach the IPv4
    address they embed: a rule denying that address denies them, and on a
    public listener the protected ranges do. Denied before any connect."""
    deny_rule = rule_ref(fr, fr.rules[0])  # deny to 127.0.0.0/8, ::1 port {e}
    for host in ("64:ff9b::7f00:1", "64:ff9b::127.0.0.1", "2002:7f00:1::1"):
        expect_denied(fr, host, srv.e, deny_rule)
    proxy = ("127.0.0.1", fp.port)
    for host in ("64:ff9b::7f00:1", "2002:7f00:1::1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1",
                 "64:ff9b::", "224.0.0.1", "239.255.255.250", "255.255.255.255", "ff02::1"):
        expect_denied(fp, host, srv.e, "protected", proxy=proxy)


def test_udp_destination_rules(fr, udp_echoes):
    allowed, denied = udp_echoes
    with UdpAssoc(fr.addr) as a:
        m = a.echo(allowed.addr, b"first")
        assert m.payload == b"first" and m.port == allowed.port
        for i in range(3):
            a.send(denied.addr, b"never-%d" % i)
        a.expect_nothing()
        m = a.echo(allowed.addr, b"second")  # the association lives on
        assert m.payload == b"second"
        a.send(denied.addr, b"never-again")
        m = a.echo(allowed.addr, b"third")
        assert m.payload == b"third"
    time.sleep(0.2)
    assert denied.count() == 0, f"datagrams reached the denied port: {denied.payloads()}"


# ---- rules_default, rules_file, errors ---------------------------------------------------------


def test_rules_default_deny_without_rules(ferry, srv):
    """rules_default = deny: 'What happens when no rule matches'; with no
    rules at all, none matches."""
    f = ferry(config={"rules_default": "deny"})
    s, r = socks5_try(f.addr, "127.0.0.1", srv.e)
    e = access_of(f, s)
    assert r.rep == NOT_ALLOWED, (
        f"rules_default = deny without rules let a CONNECT through (reply {r.rep:#04x}, access {e})"
    )
    assert e.get("rule") == "default", e


def test_rules_file(ferry, srv, tmp_path):
    rules = tmp_path / "policy.rules"
    rules.write_text(
        "# rules for the policy test\n"
        f"allow to 127.0.0.0/8 port {srv.e}   # the echo server\n"
        "\n"
        "deny to 127.0.0.0/8\n"
    )
    f = ferry(config={"rules_file": "policy.rules"})  # relative to the config's directory
    assert "rules: 2" in f.log_text()
    expect_allowed(f, "127.0.0.1", srv.e, "policy.rules:2")
    expect_denied(f, "127.0.0.1", srv.e2, "policy.rules:4")


def test_rule_errors_name_file_and_line(ferry, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text(
        "workers = 1\n"
        "[rules]\n"
        "allow to 127.0.0.0/8\n"
        "allow cmd ftp\n"
        "deny to 10.0.0.0/33\n"
        "allow port 80 port 81\n"
    )
    want = [
        f"{conf}:4: rule: 'ftp' is not a command (connect, udp, bind, http, reverse)",
        f"{conf}:5: rule: '10.0.0.0/33' is neither an address range nor a domain "
        "(e.g. 10.0.0.0/8, example.com, *.example.com)",
        f"{conf}:6: rule: 'port' given twice (list the values after one)",
    ]
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1, r
    for w in want:
        assert w in r.text, f"--check did not print {w!r}:\n{r.text}"
    assert f"{conf}:3" not in r.text

    # At start: the same messages, and no listener.
    f = ferry(raw_config=conf.read_text(), wait_ready=False, expect_exit=1)
    rc = f.wait(10)
    assert rc == 1, f"ferry with a bad rule: exit {rc}\n{f.stderr_text()}"
    text = f.stderr_text()
    for w in want:
        w = w.replace(str(conf), str(f.config_path))
        assert w in text, f"start did not print {w!r}:\n{text}"
    assert "ready:" not in text

    # A rules_file error names the rules file and its line.
    (tmp_path / "r.rules").write_text("allow to 127.0.0.0/8\n\n# c\nallow user a b\n")
    conf2 = tmp_path / "withfile.conf"
    conf2.write_text("workers = 1\nrules_file = r.rules\n")
    r = run_ferry(["serve", "--check", "-c", str(conf2)])
    assert r.rc == 1, r
    assert f"{tmp_path}/r.rules:4: rule: one user per rule (write one rule per user)" in r.text, r.text


# ---- protected ranges -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp(module_ferry):
    """A public listener (0.0.0.0), open_proxy, no rules."""
    return module_ferry(config={"open_proxy": "yes"}, listens=["0.0.0.0:0"])


def test_protected_ranges_public_listener(fp, srv):
    proxy = ("127.0.0.1", fp.port)
    before = len(srv.echo.peers)
    for host in ["127.0.0.1", "localhost", "127.9.9.9", "0.0.0.0", "169.254.169.254"] + (
            ["::1"] if HAVE_IPV6 else []):
        expect_denied(fp, host, srv.e, "protected", proxy=proxy)
    assert len(srv.echo.peers) == before
    s, code = socks4_try(proxy, "127.0.0.1", srv.e)
    assert code == SOCKS4_REJECTED
    assert access_of(fp, s).get("rule") == "protected"
    rep = http_raw(proxy, f"GET {srv.http.url('small.txt')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert rep.status == 403, rep.head
    assert fp.access_for(rep.client).get("rule") == "protected"


def test_protected_ranges_opened_by_range_rule(ferry, srv):
    rules = [f"allow to 127.0.0.0/8 port {srv.e}", "allow to *"]
    # "allow to *" from anywhere is an open proxy: it must be said so.
    f = ferry(config={"open_proxy": "yes"}, listens=["0.0.0.0:0"], extra=rules_text(rules))
    proxy = ("127.0.0.1", f.port)
    expect_allowed(f, "127.0.0.1", srv.e, f"{f.config_path.name}:{_line(f, rules[0])}", proxy=proxy)
    e = expect_allowed(f, "localhost", srv.e, proxy=proxy)
    assert e["addr"] == f"127.0.0.1:{srv.e}"
    # "allow to *" allows, but not by a range holding the address.
    expect_denied(f, "127.0.0.1", srv.e2, "protected", proxy=proxy)
    expect_denied(f, "a.localhost", srv.e2, "protected", proxy=proxy)


def _line(f, rule: str) -> int:
    return int(rule_ref(f, rule).rsplit(":", 1)[1])


# ---- limits per address --------------------------------------------------------------------------------


def socks_greets(proxy, source=None, timeout=3.0):
    """Connect and send a greeting: True when ferry answers with a method,
    False when it closes without a byte."""
    s = connect_raw(proxy, source=source, timeout=timeout)
    if s is None:
        return False
    try:
        try:
            s.sendall(greeting())
        except (BrokenPipeError, ConnectionResetError):
            return False
        return not closed_without_reply(s, timeout)
    finally:
        s.close()


def test_per_ip_concurrent_limit(ferry, srv):
    f = ferry(extra=rules_text(limits={"per_ip": 3}))
    held = [socks5_try(f.addr, "127.0.0.1", srv.e)[0] for _ in range(3)]
    for h in held:
        echo_roundtrip(h, b"held\n")
    # The 4th: closed at once (well before handshake_timeout, 3 s), without
    # a byte, although it sends a greeting.
    t0 = time.monotonic()
    assert not socks_greets(f.addr, timeout=3.0), "the 4th connection got a reply"
    assert time.monotonic() - t0 < 2.5, "the 4th connection was not closed at once"
    f.wait_log(r"limits: 127\.0\.0\.1 has limits\.per_ip \(3\) connections open; closing new ones")
    # The held ones still work.
    echo_roundtrip(held[0], b"still here\n")
    # One ends: the next is admitted (once ferry has seen the end).
    held.pop().close()
    s2 = wait_until(lambda: _try_session(f, srv), 5.0, "a connection after one of three closed")
    echo_roundtrip(s2, b"admitted\n")
    # Three open again: the next is refused again.
    assert not socks_greets(f.addr)
    for h in held + [s2]:
        h.close()


def _try_session(f, srv):
    try:
        s, r = socks5_try(f.addr, "127.0.0.1", srv.e, timeout=2.0)
    except (AssertionError, OSError):
        return None
    if r.rep != 0:
        s.close()
        return None
    return s


def test_per_ip_rate_limit(ferry, srv):
    # One worker: with two, each passes its own cached loop clock and a
    # refusal can be logged twice (limits_test.c,
    # test_log_once_with_clocks_of_several_workers); here "logged once" is
    # checked deterministically.
    f = ferry(config={"workers": 1}, extra=rules_text(limits={"rate": 5, "burst": 5}))
    off = f.log_offset()
    # A flood from 127.0.0.2: 30 connects as fast as they go.
    t0 = time.monotonic()
    socks = [connect_raw(f.addr, source="127.0.0.2", timeout=3.0) for _ in range(30)]
    served = closed = 0
    for s in socks:
        if s is None:  # reset before connect() returned
            closed += 1
            continue
        try:
            try:
                s.sendall(greeting())
            except (BrokenPipeError, ConnectionResetError):
                closed += 1
                continue
            if closed_without_reply(s, 3.0):
                closed += 1
            else:
                served += 1
        finally:
            s.close()
    flood_s = time.monotonic() - t0  # ferry accepted them all within this
    # burst 5, plus 5/s refilled while the flood lasted
    most = 5 + int(5 * flood_s) + 1
    assert served >= 5 and served <= most, f"served {served} of 30 (flood {flood_s:.2f}s, most {most})"
    assert closed == 30 - served
    # A bystander on another address is served meanwhile.
    s, r = socks5_try(f.addr, "127.0.0.1", srv.e, source="127.0.0.3")
    assert r.rep == 0
    echo_roundtrip(s, b"bystander\n")
    s.close()
    f.wait_log(r"limits: 127\.0\.0\.2 opens connections faster than limits\.rate \(5/s, burst 5\)", start=off)
    time.sleep(0.2)
    lines = [l for l in f.log_text()[off:].splitlines() if "faster than limits.rate" in l]
    if flood_s < 0.9:
        assert len(lines) == 1, f"logged {len(lines)} times for a {flood_s:.2f}s flood: {lines}"
    assert all("127.0.0.2" in l for l in lines), lines
    # One token comes back every 200 ms: the flooder is served again.
    wait_until(lambda: socks_greets(f.addr, source="127.0.0.2"), 5.0, "127.0.0.2 served again")


def test_descriptor_exhaustion_recovers(ferry, srv):
    f = start_with_nofile(ferry, 64, config={"max_connections": 1000})
    assert nofile_limit(f.proc.pid) == (64, 64)
    expect_allowed(f, "127.0.0.1", srv.e)
    off = f.log_offset()
    flood = []
    try:
        for _ in range(100):
            flood.append(socket.create_connection(f.addr, timeout=3.0))
        f.wait_log(r"accept: .*pausing accepts for \d+ ms", start=off, timeout=5.0)
    finally:
        for s in flood:
            s.close()
    assert f.alive()
    s = wait_until(lambda: _try_session(f, srv), 10.0, "a session after the flood")
    echo_roundtrip(s, b"after the flood\n")
    s.close()


def test_descriptor_exhaustion_warning_rate_limited(ferry, srv):
    """Exhaustion that lasts pauses accepting every 100 ms, but each worker
    warns once per 10 s, not once per pause; every pause still counts."""
    f = start_with_nofile(ferry, 64, config={"max_connections": 1000},
                          extra="[metrics]\nlisten = 127.0.0.1:0\n")
    off = f.log_offset()
    flood = []
    try:
        for _ in range(100):
            flood.append(socket.create_connection(f.addr, timeout=3.0))
        f.wait_log(r"accept: .*pausing accepts for \d+ ms", start=off, timeout=5.0)
        # Under a 100 ms pause, 2.5 s of exhaustion would be ~25 warnings per
        # worker; handshake_timeout (3 s) has not freed a descriptor yet.
        time.sleep(2.5)
        errors = scrape(metrics_addr(f)).get("ferry_accept_errors_total")
    finally:
        for s in flood:
            s.close()
    lines = [l for l in f.log_text()[off:].splitlines() if "pausing accepts" in l]
    assert 1 <= len(lines) <= 2, f"{len(lines)} warnings from 2 workers in 2.5 s:\n" + "\n".join(lines[:5])
    assert all("said at most every 10 s" in l for l in lines), lines
    assert errors >= len(lines), errors
    s = wait_until(lambda: _try_session(f, srv), 10.0, "a session after the flood")
    s.close()


# ---- limits per user --------------------------------------------------------------------------------------


def test_per_user_sessions(ferry, srv, userlist):
    f = ferry(auth={"userlist": str(userlist)}, extra=rules_text(limits={"per_user": 1}))
    first, r = socks5_try(f.addr, "127.0.0.1", srv.e, user="alice", password=USERS["alice"])
    assert r.rep == 0
    echo_roundtrip(first, b"one\n")
    # A second session of alice fails RFC 1929 (status 1) and is closed.
    s = open_client(f.addr)
    s.sendall(greeting((0x02,)))
    assert read_method(s) == 0x02
    s.sendall(userpass("alice", USERS["alice"]))
    expect_auth_refused(s)
    e = access_of(f, s)
    assert e.get("end") == "user-limit" and e.get("user") == "alice", e
    # Over HTTP: 429.
    rep = http_raw(f.addr, (f"CONNECT 127.0.0.1:{srv.e} HTTP/1.1\r\nHost: x\r\n"
                            f"Proxy-Authorization: {basic('alice')}\r\n\r\n").encode())
    assert rep.status == 429, rep.head
    assert f.access_for(rep.client).get("end") == "user-limit"
    # Another user is not affected.
    other, r = socks5_try(f.addr, "127.0.0.1", srv.e, user="bob", password=USERS["bob"])
    assert r.rep == 0
    echo_roundtrip(other, b"bob\n")
    # The first ends: alice may start again.
    first.close()

    def alice_again():
        try:
            s2, r2 = socks5_try(f.addr, "127.0.0.1", srv.e, user="alice", password=USERS["alice"])
        except AssertionError:
            return None
        return s2 if r2.rep == 0 else None

    s2 = wait_until(alice_again, 5.0, "alice's session after her first one closed")
    echo_roundtrip(s2, b"again\n")
    s2.close()
    other.close()


# ---- bandwidth ----------------------------------------------------------------------------------------------

MIB = 1 << 20


def _timed_download(f, srv_addr, n, user=None):
    s, r = socks5_try(f.addr, srv_addr[0], srv_addr[1], user=user, password=USERS.get(user))
    assert r.rep == 0
    return Downloader(s, n, timeout=30.0)


def test_bandwidth_per_connection(ferry, tcp_server):
    src = tcp_server(SendServer, size=4 * MIB)
    f = ferry(extra=rules_text(limits={"bandwidth_connection": "1m"}))
    d = _timed_download(f, src.addr, 4 * MIB)
    cpu0, t0 = cpu_seconds(f.proc.pid), time.monotonic()
    d.start()
    d.join(35)
    wall, cpu = time.monotonic() - t0, cpu_seconds(f.proc.pid) - cpu0
    d.sock.close()
    assert d.error is None, d.error
    assert d.got == 4 * MIB
    # (4 MiB - a 256 KiB burst) at 1 MiB/s: 3.75 s; never much faster
    assert d.seconds >= 3.0, f"4 MiB at 1 MiB/s took {d.seconds:.2f}s"
    assert d.seconds <= 15.0, f"4 MiB at 1 MiB/s took {d.seconds:.2f}s"
    assert cpu < 0.5 * wall, f"ferry used {cpu:.2f}s CPU in {wall:.2f}s: a busy loop?"


def test_bandwidth_per_user(ferry, tcp_server, userlist):
    src = tcp_server(SendServer, size=2 * MIB)
    f = ferry(config={"splice": "no"}, auth={"userlist": str(userlist)},
              extra=rules_text(limits={"bandwidth_user": "1m"}))
    ds = [_timed_download(f, src.addr, 2 * MIB, user="alice") for _ in range(2)]
    cpu0, t0 = cpu_seconds(f.proc.pid), time.monotonic()
    for d in ds:
        d.start()
    for d in ds:
        d.join(35)
    wall, cpu = time.monotonic() - t0, cpu_seconds(f.proc.pid) - cpu0
    for d in ds:
        d.sock.close()
        assert d.error is None, d.error
        assert d.got == 2 * MIB
    # Together 4 MiB for one user at 1 MiB/s (each alone would take ~1.75 s).
    assert wall >= 3.0, f"two sessions of one user moved 4 MiB in {wall:.2f}s"
    assert wall <= 15.0, f"two sessions of one user moved 4 MiB in {wall:.2f}s"
    assert cpu < 0.5 * wall, f"ferry used {cpu:.2f}s CPU in {wall:.2f}s: a busy loop?"
    # Another user has a bucket of its own.
    t1 = time.monotonic()
    d = _timed_download(f, src.addr, 2 * MIB, user="bob")
    d.start()
    d.join(35)
    d.sock.close()
    assert d.got == 2 * MIB and d.error is None
    assert time.monotonic() - t1 < wall
