# SPDX-License-Identifier: BSD-2-Clause
"""[auth] helper: external authentication helpers speaking Squid's
basic-auth protocol, end to end. A small Python script is the helper: it
answers OK/ERR, writes down each request line it was sent (to check
Squid's escaping), and on cue crashes, hangs, or answers garbage, so the
pool's restarts with back-off, timeouts and /metrics counters are seen
from outside; the per-address failure throttle still applies to ERR.
Squid's own basic_ncsa_auth (squid-openssl, in TEST_PKGS) against a
password file the test writes proves the real thing works. Config
validation: one backend only, the helper must be an executable file,
FILE:LINE in every error.

Only loopback addresses; every wait bounded.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ferrylib
from ferrylib import (
    AUTH_FAIL,
    AUTH_OK,
    auth_handshake,
    echo_roundtrip,
    open_client,
    read_until_close,
    run_ferry,
    socks_connect_auth,
)
from opslib import metrics_addr, scrape

HELPER = r'''#!/usr/bin/python3
# A Squid basic-auth helper for tests: alice's password is "s3cret".
# User "crash" exits, "hang" sleeps, "garbage" answers nonsense, "bh" BH.
import os, sys, time, urllib.parse
log = open(sys.argv[1], "a")
log.write("start %d\n" % os.getpid()); log.flush()
for line in sys.stdin:
    log.write("req " + line); log.flush()
    user, _, pw = line.rstrip("\n").partition(" ")
    user = urllib.parse.unquote(user); pw = urllib.parse.unquote(pw)
    if user == "crash":
        sys.exit(3)
    if user == "hang":
        time.sleep(3600)
    if user == "garbage":
        print("WHAT?", flush=True); continue
    if user == "bh":
        print('BH message="backend down"', flush=True); continue
    if (user, pw) in (("alice", "s3cret"), ("b\u00f8b smith", "p w%\"#")):
        print("OK user=%s" % urllib.parse.quote(user), flush=True)
    else:
        print('ERR message="Wrong password"', flush=True)
'''


def write_helper(d: Path) -> Path:
    p = d / "helper.py"
    p.write_text(HELPER.replace("/usr/bin/python3", sys.executable, 1))
    p.chmod(0o755)
    return p


def login(f, user, password) -> int:
    """One attempt on a fresh connection; a refusal is followed by EOF."""
    with open_client(f.addr) as s:
        st = auth_handshake(s, user, password, timeout=20)
        if st != AUTH_OK:
            assert st == AUTH_FAIL, f"status {st:#x}"
            rest, how = read_until_close(s, timeout=20)
            assert rest == b"" and how == "eof", (rest, how)
        return st


def eventually_ok(f, user, password, timeout=20.0) -> int:
    """Retry (bounded) until the login succeeds; returns the failed tries."""
    deadline = time.monotonic() + timeout
    failed = 0
    while login(f, user, password) != AUTH_OK:
        failed += 1
        assert time.monotonic() < deadline, f"{user} still refused after {timeout}s"
        time.sleep(0.1)
    return failed


def helper_ferry(ferry, tmp_path, auth_extra=None, metrics=True, **kw):
    helper = write_helper(tmp_path)
    auth = {"helper": f"{helper} {tmp_path / 'helper.log'}", "cachettl": "0",
            "max_failures": "0"}
    auth.update(auth_extra or {})
    extra = "[metrics]\nlisten = 127.0.0.1:0\n" if metrics else None
    return ferry(auth=auth, extra=extra, **kw)


def requests_seen(tmp_path) -> list[str]:
    p = tmp_path / "helper.log"
    return [l[4:] for l in p.read_text().splitlines() if l.startswith("req ")] if p.exists() else []


def test_helper_ok_err_and_escaping(ferry, tmp_path, echo_server):
    f = helper_ferry(ferry, tmp_path, metrics=False)
    s, _ = socks_connect_auth(f.addr, "alice", "s3cret", *echo_server.addr, timeout=20)
    with s:
        echo_roundtrip(s, b"through the helper")
    assert login(f, "alice", "wrong") == AUTH_FAIL
    assert login(f, "mallory", "s3cret") == AUTH_FAIL
    # Squid's rfc1738 escaping: the helper unescapes and matches exactly.
    assert login(f, "b\u00f8b smith", 'p w%"#') == AUTH_OK
    seen = requests_seen(tmp_path)
    assert "b%C3%B8b%20smith p%20w%25%22%23" in seen, seen
    assert "alice s3cret" in seen
    f.wait_log(r"authentication: helper .*helper\.py \(4 children")
    # no secret in ferry's log
    assert "s3cret" not in f.log_text()


def test_helper_http_basic(ferry, tmp_path, http_server):
    """The HTTP proxy's Basic credentials go to the same helper."""
    f = helper_ferry(ferry, tmp_path, metrics=False)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    base = ["curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-x",
            f"http://127.0.0.1:{f.port}", http_server.url("small.txt")]
    ok = subprocess.run(base + ["--proxy-user", "alice:s3cret"], capture_output=True, text=True,
                        timeout=30, env=env)
    assert ok.stdout == "200", ok
    bad = subprocess.run(base + ["--proxy-user", "alice:nope"], capture_output=True, text=True,
                         timeout=30, env=env)
    assert bad.stdout == "407", bad


def test_helper_long_lived(ferry, tmp_path):
    """One process answers many requests (children = 1): never one per login."""
    f = helper_ferry(ferry, tmp_path, {"helper_children": "1"}, metrics=False)
    for _ in range(5):
        assert login(f, "alice", "s3cret") == AUTH_OK
    log = (tmp_path / "helper.log").read_text()
    assert log.count("start ") == 1, log


def test_helper_crash_restarted_and_counted(ferry, tmp_path):
    f = helper_ferry(ferry, tmp_path, {"helper_children": "1"})
    m = metrics_addr(f)
    assert login(f, "alice", "s3cret") == AUTH_OK
    # The crash fails that attempt closed, logged; the helper comes back.
    assert login(f, "crash", "x") == AUTH_FAIL
    f.wait_log(r"auth helper \(pid \d+\): closed its end \(exited with status 3\); the attempt "
               r"fails; restarting in \d+ ms")
    eventually_ok(f, "alice", "s3cret")
    e = scrape(m)
    assert e.get("ferry_auth_helper_failures_total", reason="crash") == 1
    assert e.get("ferry_auth_helper_restarts_total") >= 1
    assert e.get("ferry_auth_helper_children") == 1
    assert e.get("ferry_auth_total", result="unavailable") >= 1
    log = (tmp_path / "helper.log").read_text()
    assert log.count("start ") == 2, log


def test_helper_hang_times_out(ferry, tmp_path):
    f = helper_ferry(ferry, tmp_path, {"helper_children": "1", "helper_timeout": "1s"})
    m = metrics_addr(f)
    t0 = time.monotonic()
    assert login(f, "hang", "x") == AUTH_FAIL
    assert time.monotonic() - t0 < 15, "the hung helper held the attempt past its timeout"
    f.wait_log(r"auth helper \(pid \d+\): no reply within the timeout, killed")
    # The worker loop never waited: other clients are served meanwhile and after.
    eventually_ok(f, "alice", "s3cret")
    e = scrape(m)
    assert e.get("ferry_auth_helper_failures_total", reason="timeout") == 1


def test_helper_garbage_and_bh(ferry, tmp_path):
    f = helper_ferry(ferry, tmp_path, {"helper_children": "1"})
    m = metrics_addr(f)
    assert login(f, "bh", "x") == AUTH_FAIL
    f.wait_log(r"auth helper \(pid \d+\): BH \(no verdict\): backend down")
    assert login(f, "garbage", "x") == AUTH_FAIL
    f.wait_log(r"auth helper \(pid \d+\): not a helper reply, killed")
    eventually_ok(f, "alice", "s3cret")
    e = scrape(m)
    assert e.get("ferry_auth_helper_failures_total", reason="protocol") == 1
    assert e.get("ferry_auth_helper_failures_total", reason="crash") == 0


def test_helper_failures_throttled_per_ip(ferry, tmp_path):
    f = helper_ferry(ferry, tmp_path, {"max_failures": "3", "failure_window": "60s",
                                       "block_time": "60s"}, metrics=False)
    for _ in range(3):
        assert login(f, "alice", "nope") == AUTH_FAIL
    f.wait_log(r"auth: 127\.0\.0\.1 blocked for 60000 ms after 3 failed attempts")
    n = len(requests_seen(tmp_path))
    # Blocked: the right password is refused without asking the helper.
    assert login(f, "alice", "s3cret") == AUTH_FAIL
    assert len(requests_seen(tmp_path)) == n


def test_helper_unavailable_counted_as_failure(ferry, tmp_path):
    """No verdict fails closed, and the throttle counts it: a backend that
    breaks on some input is no way around the throttle."""
    f = helper_ferry(ferry, tmp_path, {"max_failures": "2", "failure_window": "60s",
                                       "block_time": "60s"}, metrics=False)
    for _ in range(2):
        assert login(f, "bh", "x") == AUTH_FAIL
    f.wait_log(r"auth: 127\.0\.0\.1 blocked for 60000 ms after 2 failed attempts")
    assert login(f, "alice", "s3cret") == AUTH_FAIL


def test_helper_cached_success(ferry, tmp_path):
    f = helper_ferry(ferry, tmp_path, {"helper_children": "1", "cachettl": "60s"},
                     metrics=False)
    for _ in range(4):
        assert login(f, "alice", "s3cret") == AUTH_OK
    assert requests_seen(tmp_path).count("alice s3cret") <= 2  # one per worker at most


def test_squid_basic_ncsa_auth(ferry, tmp_path, echo_server):
    ncsa = Path("/usr/lib/squid/basic_ncsa_auth")
    if not os.access(ncsa, os.X_OK):
        pytest.skip("no /usr/lib/squid/basic_ncsa_auth (package squid-openssl)")
    # htpasswd's default format (Apache MD5, $apr1$), made by openssl (TEST_PKGS)
    h = subprocess.run(["openssl", "passwd", "-apr1", "ncsa-pw"], capture_output=True,
                       text=True, timeout=20, check=True).stdout.strip()
    pw = tmp_path / "passwd"
    pw.write_text(f"carol:{h}\n")
    f = ferry(auth={"helper": f"{ncsa} {pw}", "cachettl": "0", "max_failures": "0"})
    s, _ = socks_connect_auth(f.addr, "carol", "ncsa-pw", *echo_server.addr, timeout=20)
    with s:
        echo_roundtrip(s, b"via basic_ncsa_auth")
    assert login(f, "carol", "wrong") == AUTH_FAIL
    assert login(f, "dave", "ncsa-pw") == AUTH_FAIL


# ---- configuration -------------------------------------------------------------


def check(tmp_path, text) -> ferrylib.CliResult:
    conf = tmp_path / "ferry.conf"
    conf.write_text(text)
    return run_ferry(["serve", "--check", "-c", str(conf)])


def test_config_one_backend_only(tmp_path):
    helper = write_helper(tmp_path)
    (tmp_path / "users").write_text("bob:plain:pw\n")
    r = check(tmp_path, f"[auth]\nuserlist = users\nhelper = {helper}\n")
    assert r.rc == 1, r.text
    assert "ferry.conf:3: auth.helper: [auth] already has userlist" in r.text, r.text
    r = check(tmp_path, f"[auth]\nhelper = {helper}\npam_service = login\n")
    assert r.rc == 1 and "ferry.conf:3: auth.pam_service: [auth] already has helper" in r.text


def test_config_helper_must_be_executable(tmp_path):
    script = tmp_path / "not-exec.py"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    r = check(tmp_path, f"[auth]\nhelper = {script} arg\n")
    assert r.rc == 1 and f"ferry.conf:2: auth.helper: {script} is not an executable file" in r.text
    r = check(tmp_path, "[auth]\n\nhelper = /nonexistent/helper\n")
    assert r.rc == 1
    assert "ferry.conf:3: auth.helper: /nonexistent/helper: No such file or directory" in r.text
    r = check(tmp_path, f"[auth]\nhelper = {tmp_path}\n")
    assert r.rc == 1 and "is not an executable file" in r.text


def test_config_helper_relative_and_keys(tmp_path):
    write_helper(tmp_path)
    r = check(tmp_path, "[auth]\nhelper = helper.py log\nhelper_children = 2\n"
                        "helper_timeout = 2s\n")
    assert r.rc == 0, r.text
    (tmp_path / "users").write_text("bob:plain:pw\n")
    r = check(tmp_path, "[auth]\nuserlist = users\nhelper_children = 2\n")
    assert r.rc == 1 and "ferry.conf:3: auth.helper_children: only for auth.helper" in r.text
    r = check(tmp_path, "[auth]\nhelper = helper.py\nhelper_children = 65\n")
    assert r.rc == 1 and "ferry.conf:3: auth.helper_children" in r.text
    r = check(tmp_path, "[auth]\nhelper_timeout = 2s\n")
    assert r.rc == 1 and "without auth.userlist, auth.helper or auth.pam_service" in r.text


def test_reload_switches_backend(ferry, tmp_path):
    """SIGHUP from the userlist to a helper: new logins go to the helper."""
    (tmp_path / "users").write_text("bob:plain:bobpw\n")
    f = ferry(auth={"userlist": "users", "cachettl": "0", "max_failures": "0"})
    assert login(f, "bob", "bobpw") == AUTH_OK
    helper = write_helper(tmp_path)
    text = f.config_path.read_text().replace(
        "userlist = users", f"helper = {helper} {tmp_path / 'helper.log'}")
    f.config_path.write_text(text)
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied to new sessions \(helper ", start=off)
    assert login(f, "alice", "s3cret") == AUTH_OK
    assert login(f, "bob", "bobpw") == AUTH_FAIL
    # ... and back: the idle helper is stopped (it exits at EOF).
    pid = int((tmp_path / "helper.log").read_text().split("start ")[1].split()[0])
    f.config_path.write_text(text.replace(f"helper = {helper} {tmp_path / 'helper.log'}",
                                          "userlist = users"))
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied to new sessions \(1 users\)", start=off)
    assert login(f, "bob", "bobpw") == AUTH_OK
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the helper outlived the reload that dropped it"
