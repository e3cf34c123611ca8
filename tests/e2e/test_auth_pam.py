# SPDX-License-Identifier: BSD-2-Clause
"""[auth] pam_service: PAM as the authentication backend, end to end.
The test writes its own PAM service, /etc/pam.d/ferry-test-XXXX, with
pam_exec (libpam-modules) calling a small script that reads the password
PAM exposes on stdin (expose_authtok) and accepts one user; the file is
removed afterwards. Writing /etc/pam.d needs root: without it the tests
skip, saying so. Also: the password never reaches ferry's log, failures
are throttled per address, successes cached, a module that cannot load
fails closed (logged, counted), and --check names FILE:LINE for a service
that does not exist.

Only loopback addresses; every wait bounded.
"""

import os
import secrets
import sys
from pathlib import Path

import pytest

from ferrylib import AUTH_FAIL, AUTH_OK, auth_handshake, echo_roundtrip, open_client, \
    read_until_close, run_ferry, socks_connect_auth
from opslib import metrics_addr, scrape

PAM_DIR = Path("/etc/pam.d")
MODULE_DIRS = [Path("/lib/x86_64-linux-gnu/security"), Path("/usr/lib/x86_64-linux-gnu/security"),
               Path("/lib/security"), Path("/usr/lib/security")]

CHECK = r'''#!/usr/bin/python3
# pam_exec expose_authtok: the password on stdin (NUL-terminated), the user in PAM_USER.
import os, sys
pw = sys.stdin.buffer.read().split(b"\0")[0]
with open(sys.argv[1], "a") as log:
    log.write("user=%s rhost=%s\n" % (os.environ.get("PAM_USER"), os.environ.get("PAM_RHOST")))
sys.exit(0 if (os.environ.get("PAM_USER"), pw) == ("pamuser", b"pam s3cret") else 1)
'''


def have_module(name: str) -> bool:
    return any((d / name).exists() for d in MODULE_DIRS)


@pytest.fixture
def pam_service(tmp_path):
    """A PAM service of our own; yields (name, log of the checks)."""
    if os.geteuid() != 0:
        pytest.skip("writing a PAM service file under /etc/pam.d needs root")
    if not have_module("pam_exec.so") or not have_module("pam_permit.so"):
        pytest.skip("pam_exec.so or pam_permit.so missing (package libpam-modules)")
    tmp_path.chmod(0o755)
    script = tmp_path / "check.py"
    script.write_text(CHECK.replace("/usr/bin/python3", sys.executable, 1))
    script.chmod(0o755)
    log = tmp_path / "pam.log"
    name = "ferry-test-" + secrets.token_hex(4)
    path = PAM_DIR / name
    path.write_text(f"auth required pam_exec.so expose_authtok quiet {script} {log}\n"
                    "account required pam_permit.so\n")
    try:
        yield name, log
    finally:
        path.unlink(missing_ok=True)


def login(f, user, password) -> int:
    with open_client(f.addr) as s:
        st = auth_handshake(s, user, password, timeout=20)
        if st != AUTH_OK:
            assert st == AUTH_FAIL, f"status {st:#x}"
            rest, how = read_until_close(s, timeout=20)
            assert rest == b"" and how == "eof", (rest, how)
        return st


def test_pam_ok_and_denied(ferry, pam_service, echo_server):
    name, log = pam_service
    f = ferry(auth={"pam_service": name, "cachettl": "0", "max_failures": "0"})
    f.wait_log(rf"authentication: PAM service {name},")
    s, _ = socks_connect_auth(f.addr, "pamuser", "pam s3cret", *echo_server.addr, timeout=20)
    with s:
        echo_roundtrip(s, b"through PAM")
    assert login(f, "pamuser", "wrong") == AUTH_FAIL
    assert login(f, "other", "pam s3cret") == AUTH_FAIL
    # a control byte never reaches PAM
    assert login(f, "pamuser", "pam s3cret\n") == AUTH_FAIL
    lines = log.read_text().splitlines()
    assert lines.count("user=pamuser rhost=127.0.0.1") == 2, lines
    assert "user=other rhost=127.0.0.1" in lines
    assert "s3cret" not in f.log_text()


def test_pam_failures_throttled(ferry, pam_service):
    name, log = pam_service
    f = ferry(auth={"pam_service": name, "cachettl": "0", "max_failures": "2",
                    "failure_window": "60s", "block_time": "60s"})
    assert login(f, "pamuser", "bad1") == AUTH_FAIL
    assert login(f, "pamuser", "bad2") == AUTH_FAIL
    f.wait_log(r"auth: 127\.0\.0\.1 blocked for 60000 ms after 2 failed attempts")
    n = len(log.read_text().splitlines())
    assert login(f, "pamuser", "pam s3cret") == AUTH_FAIL
    assert len(log.read_text().splitlines()) == n, "a blocked address still reached PAM"


def test_pam_cache(ferry, pam_service):
    name, log = pam_service
    f = ferry(config={"workers": "1"}, auth={"pam_service": name, "cachettl": "60s"})
    for _ in range(3):
        assert login(f, "pamuser", "pam s3cret") == AUTH_OK
    assert len(log.read_text().splitlines()) == 1


def test_check_pam_service(tmp_path):
    conf = tmp_path / "ferry.conf"
    conf.write_text("[auth]\n\npam_service = ferry-no-such-service-xyz\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1
    assert ("ferry.conf:3: auth.pam_service: no /etc/pam.d/ferry-no-such-service-xyz" in r.text), r.text
    conf.write_text("[auth]\npam_service = ../shadow\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1 and "ferry.conf:2: auth.pam_service: '../shadow' is not a service name" in r.text


def test_pam_no_verdict_fails_closed(ferry, pam_service):
    """A service whose module cannot load: refused, logged with PAM's own
    words, counted as unavailable and as a failure for the throttle."""
    name, _ = pam_service
    (PAM_DIR / name).write_text("auth required pam_ferry_no_such_module.so\n"
                                "account required pam_permit.so\n")
    f = ferry(auth={"pam_service": name, "cachettl": "0", "max_failures": "2",
                    "failure_window": "60s", "block_time": "60s"},
              extra="[metrics]\nlisten = 127.0.0.1:0\n")
    m = metrics_addr(f)
    assert login(f, "pamuser", "pam s3cret") == AUTH_FAIL
    f.wait_log(rf"auth: PAM service {name} gave no verdict: ")
    assert login(f, "pamuser", "pam s3cret") == AUTH_FAIL
    f.wait_log(r"auth: 127\.0\.0\.1 blocked for 60000 ms after 2 failed attempts")
    assert scrape(m).get("ferry_auth_total", result="unavailable") == 2
    assert "s3cret" not in f.log_text()
