# SPDX-License-Identifier: BSD-2-Clause
"""An expired certificate on a tls:// listener fails on the client with a
clear error: curl's HTTPS proxy says the certificate has expired, and
another ferry reaching it as an https:// outbound (its CA in ca_file) ends
the session (SOCKS5 0x01, HTTP 502) with a log line that says so. The
certificate is issued with `openssl ca` by a CA made here, valid for one
day in 2020 (`-startdate/-enddate`); everything else about it is right
(name, key, chain), so expiry is the only reason it fails."""

import socket
import subprocess
from pathlib import Path

import pytest

from certlib import OPENSSL
from ferrylib import expect_failure, handshake, open_client, read_until_close, request
from test_tls_listen import CURL, curl_fetch, tls_ferry, wait_access

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL,
                                reason="openssl and curl are needed (make deps-test)")

CA_CNF = """[ca]
default_ca = ca_default
[ca_default]
dir = {d}
database = {d}/index.txt
new_certs_dir = {d}
serial = {d}/serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
"""


def run(*args: str):
    subprocess.run([OPENSSL, *args], check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def expired(tmp_path_factory) -> dict:
    """A CA (valid now) and a P-256 certificate for localhost and 127.0.0.1
    it issued, valid only on 2020-01-01."""
    d: Path = tmp_path_factory.mktemp("expired")
    (d / "ca.cnf").write_text(CA_CNF.format(d=d))
    (d / "index.txt").write_text("")
    (d / "serial").write_text("01\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
        "-subj", "/CN=ferry test CA")
    run("req", "-new", *ec, "-keyout", str(d / "leaf.key"), "-out", str(d / "leaf.csr"),
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    run("ca", "-batch", "-config", str(d / "ca.cnf"), "-cert", str(d / "ca.pem"), "-keyfile",
        str(d / "ca.key"), "-in", str(d / "leaf.csr"), "-out", str(d / "leaf.pem"), "-notext",
        "-startdate", "20200101000000Z", "-enddate", "20200102000000Z")
    r = subprocess.run([OPENSSL, "verify", "-CAfile", str(d / "ca.pem"), str(d / "leaf.pem")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "certificate has expired" in r.stdout + r.stderr, r
    return {"ca": d / "ca.pem", "cert": d / "leaf.pem", "key": d / "leaf.key"}


def test_expired_certificate_fails_on_curl(ferry, expired, http_server):
    f = tls_ferry(ferry, expired["cert"], expired["key"])
    r = curl_fetch(f.port, http_server.url("small.txt"), "--proxy-cacert", str(expired["ca"]))
    assert r.returncode == 60 and b"certificate has expired" in r.stderr, r.stderr


def test_expired_certificate_fails_ferrys_https_outbound(ferry, expired, echo_server):
    server = tls_ferry(ferry, expired["cert"], expired["key"])
    f = ferry(config={"outbound": "secure", "access_log": "yes"},
              extra=f"[outbound secure]\nurl = https://127.0.0.1:{server.port}\n"
                    f"ca_file = {expired['ca']}\n")
    # SOCKS5: a general failure (0x01): the parent was reached but cannot
    # be trusted.
    with open_client(f.addr, timeout=20) as s:
        handshake(s)
        s.sendall(request("127.0.0.1", echo_server.port))
        expect_failure(s, 0x01, timeout=20)
    f.wait_log(r"certificate verify failed: certificate has expired", timeout=10)
    e = wait_access(f, lambda e: e.get("dst") == f"127.0.0.1:{echo_server.port}")
    assert e["reply"] == "general-failure" and e["end"] == "tls-verify-failed", e
    # HTTP CONNECT: 502.
    with socket.create_connection(f.addr, timeout=20) as c:
        c.sendall(f"CONNECT 127.0.0.1:{echo_server.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head, _ = read_until_close(c, timeout=20)
    assert head.startswith(b"HTTP/1.1 502 "), head[:80]
    # The expired server saw the handshake fail too (the client alerted).
    wait_access(server, lambda e: e.get("end") == "tls-handshake")
