# SPDX-License-Identifier: BSD-2-Clause
"""[dns]: servers, the hosts file, the cache and its TTL bounds, and a
resolver that gets no answer (issue 15).

Names are resolved by a fake DNS server on a loopback port (dnslib) named
in [dns] servers =, so no namespace is needed; one worker, so that every
lookup meets the same cache.
"""

from __future__ import annotations

import signal
import socket
import time

import pytest

import ferrylib
from dnslib import FakeDns
from ferrylib import REP, echo_roundtrip, run_ferry, socks_connect
from opslib import metrics_addr, scrape, wait_until


@pytest.fixture
def dns():
    servers = []

    def make(**kw):
        d = FakeDns(**kw)
        servers.append(d)
        return d

    yield make
    for d in servers:
        d.stop()


def start(ferry, dns_keys: dict, config: dict | None = None):
    conf = {"workers": "1", "access_log": "yes"}
    conf.update(config or {})
    extra = "[dns]\n" + "".join(f"{k} = {v}\n" for k, v in dns_keys.items())
    extra += "\n[metrics]\nlisten = 127.0.0.1:0\n"
    f = ferry(config=conf, extra=extra)
    f.maddr = metrics_addr(f)
    return f


def connect_echo(f, name: str, echo_server, expect=0):
    s, r = socks_connect(f.addr, name, echo_server.port, expect=expect)
    with s:
        if expect == 0:
            echo_roundtrip(s, b"ping")
        client = s.getsockname()
    return r, client


def dns_metric(f, which: str) -> float:
    return scrape(f.maddr).total(f"ferry_dns_{which}_total")


def test_servers_are_asked_instead_of_resolv_conf(ferry, dns, echo_server):
    d = dns(records={"echo.test": ["127.0.0.1"]})
    f = start(ferry, {"servers": f"192.0.2.1:9, {d.server}", "timeout": "200ms", "tries": "1"})
    # 192.0.2.1 (TEST-NET) never answers; c-ares goes on to the next server.
    connect_echo(f, "echo.test", echo_server)
    assert d.count("A", "echo.test") >= 1


def test_min_ttl_keeps_an_answer_with_ttl_0(ferry, dns, echo_server):
    d = dns(records={"zero.test": ["127.0.0.1"]}, ttl=0)
    f = start(ferry, {"servers": d.server, "min_ttl": "1h"})
    connect_echo(f, "zero.test", echo_server)
    hits = dns_metric(f, "cache_hits")
    connect_echo(f, "zero.test", echo_server)
    assert d.count("A", "zero.test") == 1
    assert dns_metric(f, "cache_hits") == hits + 1


def test_ttl_0_is_not_cached_by_default(ferry, dns, echo_server):
    d = dns(records={"zero.test": ["127.0.0.1"]}, ttl=0)
    f = start(ferry, {"servers": d.server})
    connect_echo(f, "zero.test", echo_server)
    connect_echo(f, "zero.test", echo_server)
    assert d.count("A", "zero.test") == 2


def test_max_ttl_expires_a_long_answer(ferry, dns, echo_server):
    d = dns(records={"long.test": ["127.0.0.1"]}, ttl=86400)
    f = start(ferry, {"servers": d.server, "max_ttl": "1s"})
    connect_echo(f, "long.test", echo_server)
    connect_echo(f, "long.test", echo_server)
    assert d.count("A", "long.test") == 1  # the second was a cache hit
    time.sleep(1.3)
    connect_echo(f, "long.test", echo_server)
    assert d.count("A", "long.test") == 2


def test_negative_answers_obey_min_ttl(ferry, dns):
    d = dns(records={})
    f = start(ferry, {"servers": d.server, "min_ttl": "1h"})
    for _ in range(2):
        s, _ = socks_connect(f.addr, "nope.test", 9, expect=REP["host-unreachable"])
        s.close()
    assert d.count("A", "nope.test") == 1


def test_cache_size_0_disables_the_cache(ferry, dns, echo_server):
    d = dns(records={"echo.test": ["127.0.0.1"]}, ttl=3600)
    f = start(ferry, {"servers": d.server, "cache_size": "0"})
    connect_echo(f, "echo.test", echo_server)
    connect_echo(f, "echo.test", echo_server)
    assert d.count("A", "echo.test") == 2
    assert dns_metric(f, "cache_hits") == 0


def test_hosts_file_is_consulted_before_dns(ferry, dns, echo_server, tmp_path):
    d = dns(records={"both.test": ["192.0.2.1"]})
    hosts = tmp_path / "hosts"
    hosts.write_text("# test\n127.0.0.1 Both.Test alias.test   # comment\n::1 v6.test\n")
    f = start(ferry, {"servers": d.server, "hosts": str(hosts)})
    connect_echo(f, "both.test", echo_server)
    connect_echo(f, "alias.test.", echo_server)
    assert d.count("A", "both.test") == 0 and d.count("A", "alias.test") == 0


def test_hosts_none_and_a_relative_path(ferry, dns, echo_server, tmp_path):
    # A path is relative to the config file's directory (the test's workdir).
    (ferry.workdir / "my_hosts").write_text("127.0.0.1 rel.test\n")
    d = dns(records={"rel.test": ["127.0.0.1"]})
    f = start(ferry, {"servers": d.server, "hosts": "my_hosts"})
    connect_echo(f, "rel.test", echo_server)
    assert d.count("A", "rel.test") == 0
    g = start(ferry, {"servers": d.server, "hosts": "none"})
    connect_echo(g, "rel.test", echo_server)
    assert d.count("A", "rel.test") == 1


@pytest.mark.parametrize(
    "key,value,msg",
    [
        ("hosts", "/nonexistent/hosts", "dns.hosts: cannot read /nonexistent/hosts"),
        ("servers", "1.1.1.1, dns.example", "dns.servers: 'dns.example' is not a server address"),
        ("servers", "1.1.1.1:0", "dns.servers: '1.1.1.1:0' is not a server address"),
        ("min_ttl", "2h\nmax_ttl = 1h", "dns.min_ttl: longer than dns.max_ttl"),
        ("tries", "0", "dns.tries: '0' is out of range"),
        ("serevrs", "1.1.1.1", "dns.serevrs: unknown key (did you mean 'dns.servers'?)"),
    ],
)
def test_bad_values_are_config_errors(tmp_path, key, value, msg):
    cfg = tmp_path / "f.conf"
    cfg.write_text(f"listen = 127.0.0.1:0\n[dns]\n{key} = {value}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0, r.text
    assert f"{cfg}:3: {msg}" in r.err, r.text


def test_check_accepts_the_documented_example(tmp_path):
    cfg = tmp_path / "f.conf"
    cfg.write_text("listen = 127.0.0.1:0\n[dns]\nservers = 1.1.1.1, [2606:4700::1111]:53, "
                   "127.0.0.1:5353\ncache_size = 4096\nmin_ttl = 10s\nmax_ttl = 1h\n"
                   "hosts = none\ntimeout = 1s\ntries = 3\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text


def test_a_dead_server_is_reported_and_does_not_hold_the_session(ferry, dns):
    d = dns(answer=False)
    # c-ares would wait 2 x 5 s; the session gives up at connect_timeout.
    f = start(ferry, {"servers": d.server, "timeout": "5s", "tries": "2"},
              config={"connect_timeout": "2s"})
    t0 = time.monotonic()
    s, _ = socks_connect(f.addr, "slow.test", 9, expect=REP["ttl-expired"], timeout=15)
    client = s.getsockname()
    s.close()
    elapsed = time.monotonic() - t0
    assert elapsed < 2 + 4, f"reply after {elapsed:.1f}s"
    assert f.access_for(client)["end"] == "resolve-timeout"


def test_an_unanswered_lookup_is_logged_once_and_counted(ferry, dns):
    d = dns(answer=False)
    f = start(ferry, {"servers": d.server, "timeout": "300ms", "tries": "1"},
              config={"connect_timeout": "5s"})
    for name in ("a.test", "b.test"):  # no answer in time: the name cannot be used
        s, _ = socks_connect(f.addr, name, 9, expect=REP["host-unreachable"], timeout=15)
        s.close()
    f.wait_log(rf"dns: no server answered for a\.test \(timed out; servers: {d.server}\)")
    assert "no server answered for b.test" not in f.log_text()  # rate-limited
    wait_until(lambda: dns_metric(f, "unanswered") >= 2, 5, "ferry_dns_unanswered_total")


def test_a_refusing_server_is_reported(ferry):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    port = u.getsockname()[1]
    u.close()  # nothing listens: ICMP port unreachable, seen as refused
    f = start(ferry, {"servers": f"127.0.0.1:{port}", "timeout": "300ms", "tries": "1"})
    s, r = socks_connect(f.addr, "c.test", 9, expect=None, timeout=15)
    s.close()
    assert r.rep != 0
    f.wait_log(r"dns: no server answered for c\.test \((refused or unreachable|timed out)")


def test_an_ipv6_server(ferry, dns, echo_server):
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback (::1) on this host")
    d = dns(host="::1", records={"six.test": ["127.0.0.1"]})
    f = start(ferry, {"servers": d.server})
    connect_echo(f, "six.test", echo_server)
    assert d.count("A", "six.test") == 1


def test_a_reload_rereads_the_hosts_file(ferry, dns, echo_server, tmp_path):
    d = dns(records={})
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 a.test\n")
    f = start(ferry, {"servers": d.server, "hosts": str(hosts), "cache_size": "16"})
    connect_echo(f, "a.test", echo_server)
    hosts.write_text("127.0.0.1 b.test\n")
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    assert "applies after a restart" not in f.log_text()[off:]

    def b_resolves():  # the worker applies the reload on its own loop, soon
        s, r = socks_connect(f.addr, "b.test", echo_server.port, expect=None)
        s.close()
        return r.rep == 0

    wait_until(b_resolves, 10, "b.test from the hosts file read again")
    s, _ = socks_connect(f.addr, "a.test", echo_server.port, expect=REP["host-unreachable"])
    s.close()
    assert d.count("A", "a.test") == 1  # asked DNS now, never before


def test_a_reload_that_changes_servers_says_it_needs_a_restart(ferry, dns, echo_server):
    d = dns(records={"echo.test": ["127.0.0.1"]})
    f = start(ferry, {"servers": d.server})
    text = f.config_path.read_text()
    f.config_path.write_text(text.replace(f"servers = {d.server}", "servers = 192.0.2.1"))
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: dns\.servers, dns\.timeout, dns\.tries, or whether dns\.hosts is set, "
               r"changed; they apply after a restart", start=off)
    connect_echo(f, "echo.test", echo_server)  # the running resolver carries on


def _system_hosts_name() -> str | None:
    """A name /etc/hosts maps to 127.0.0.1 (not *.localhost), or None."""
    try:
        lines = open("/etc/hosts").read().splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] == "127.0.0.1":
            for name in words[1:]:
                if not name.lower().rstrip(".").endswith("localhost"):
                    return name
    return None


def test_the_system_hosts_file_by_default_and_not_with_none(ferry, dns, echo_server):
    name = _system_hosts_name()
    if not name:
        pytest.skip("/etc/hosts maps no name but localhost to 127.0.0.1")
    d = dns(records={name: ["127.0.0.1"]})
    f = start(ferry, {"servers": d.server})
    connect_echo(f, name, echo_server)
    assert d.count("A", name) == 0  # c-ares read /etc/hosts, as before [dns]
    g = start(ferry, {"servers": d.server, "hosts": "none"})
    connect_echo(g, name, echo_server)
    assert d.count("A", name) == 1
