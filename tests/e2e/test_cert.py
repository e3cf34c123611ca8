# SPDX-License-Identifier: BSD-2-Clause
"""`ferry cert`: the self-signed certificate and key for a TLS listener.

The files (DIR/cert.pem 0644, DIR/key.pem 0600, DIR made 0700), what they
hold as openssl(1) reads them (ECDSA P-256, the SANs for the default names,
for --name and for localhost, the validity of --days), the pin on the first
line of standard output against `openssl x509 -pubkey | openssl pkey -pubin
-outform der | sha256 | base64`, the curl line, the refusal to replace
existing files and --force, usage errors (exit 2, nothing written) and
places that cannot be written (exit 1). And that the pair serves TLS:
`openssl s_server` started here with it, curl with --pinnedpubkey and
--cacert succeeds, a wrong pin and a stranger's certificate fail."""

import base64
import hashlib
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ferrylib import run_ferry
from daemonlib import stop_proc
from opslib import free_port

OPENSSL = shutil.which("openssl")
CURL = shutil.which("curl")
needs_openssl = pytest.mark.skipif(not OPENSSL, reason="openssl(1) is needed (make deps-test)")
PIN_RE = re.compile(r"sha256//[A-Za-z0-9+/]{43}=")


def openssl(*args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([OPENSSL, *args], input=input, capture_output=True, timeout=30, check=check)


def openssl_pin(cert: Path) -> str:
    """sha256//BASE64 of the certificate's SubjectPublicKeyInfo, as the
    issue's recipe computes it."""
    pub = openssl("x509", "-in", str(cert), "-pubkey", "-noout").stdout
    der = openssl("pkey", "-pubin", "-outform", "der", input=pub).stdout
    return "sha256//" + base64.b64encode(hashlib.sha256(der).digest()).decode()


def cert_text(cert: Path) -> str:
    return openssl("x509", "-in", str(cert), "-noout", "-text").stdout.decode()


def make(out: Path, *args: str):
    r = run_ferry(["cert", "--out", str(out), *args])
    assert r.rc == 0, r.text
    lines = r.out.splitlines()
    assert len(lines) == 2, r.out
    assert PIN_RE.fullmatch(lines[0]), r.out
    return r, lines[0], lines[1]


def mode(p: Path) -> int:
    return os.lstat(p).st_mode & 0o7777


# ---- the files -------------------------------------------------------------------


@needs_openssl
def test_files_modes_and_pin(tmp_path):
    out = tmp_path / "tls"
    r, pin, usage = make(out, "--name", "localhost", "--days", "30")
    cert, key = out / "cert.pem", out / "key.pem"
    assert mode(out) == 0o700
    assert mode(cert) == 0o644
    assert mode(key) == 0o600
    assert sorted(p.name for p in out.iterdir()) == ["cert.pem", "key.pem"]

    assert pin == openssl_pin(cert)
    assert usage == f"curl --proxy https://localhost:443 --proxy-pinnedpubkey {pin} https://example.com/"
    assert "wrote" in r.err and "valid until" in r.err

    text = cert_text(cert)
    assert "Public-Key: (256 bit)" in text and "NIST CURVE: P-256" in text, text
    assert "ecdsa-with-SHA256" in text
    assert "Subject: CN = localhost" in text
    assert "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1" in text, text
    assert "CA:FALSE" in text
    # The key is the certificate's: the same public key.
    pub_of_key = openssl("pkey", "-in", str(key), "-pubout").stdout
    pub_of_cert = openssl("x509", "-in", str(cert), "-pubkey", "-noout").stdout
    assert pub_of_key == pub_of_cert
    # Valid now, still in 29 days, no longer in 31.
    assert openssl("x509", "-in", str(cert), "-noout", "-checkend", str(29 * 86400), check=False).returncode == 0
    assert openssl("x509", "-in", str(cert), "-noout", "-checkend", str(31 * 86400), check=False).returncode == 1
    serial = openssl("x509", "-in", str(cert), "-noout", "-serial").stdout.decode().strip()
    assert re.fullmatch(r"serial=[0-9A-F]{17,32}", serial), serial  # 128 random bits


@needs_openssl
def test_default_names(tmp_path):
    out = tmp_path / "tls"
    _, pin, usage = make(out)
    host = socket.gethostname()
    text = cert_text(out / "cert.pem")
    valid = re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?", host) and host != "localhost"
    if valid:
        assert f"DNS:{host}, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1" in text, text
        assert f"https://{host}:443" in usage
    else:
        assert "DNS:localhost, IP Address:127.0.0.1" in text, text
    # Default validity: 365 days.
    assert openssl("x509", "-in", str(out / "cert.pem"), "-noout", "-checkend", str(364 * 86400),
                   check=False).returncode == 0
    assert openssl("x509", "-in", str(out / "cert.pem"), "-noout", "-checkend", str(366 * 86400),
                   check=False).returncode == 1
    assert pin == openssl_pin(out / "cert.pem")


@needs_openssl
def test_names_given(tmp_path):
    _, _, usage = make(tmp_path / "a", "--name", "proxy.example.com", "--name", "192.0.2.7")
    text = cert_text(tmp_path / "a" / "cert.pem")
    assert "Subject: CN = proxy.example.com" in text
    assert "DNS:proxy.example.com, IP Address:192.0.2.7\n" in text, text
    assert "localhost" not in text
    assert "https://proxy.example.com:443" in usage
    _, _, usage = make(tmp_path / "b", "--name", "::1", "--days", "3650")
    assert "https://[::1]:443" in usage
    assert "IP Address:0:0:0:0:0:0:0:1\n" in cert_text(tmp_path / "b" / "cert.pem")


def test_refuses_to_overwrite_then_force(tmp_path):
    out = tmp_path / "tls"
    _, pin1, _ = make(out, "--name", "localhost")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = run_ferry(["cert", "--out", str(out), "--name", "localhost"])
    assert r.rc == 1, r.text
    assert r.out == ""
    assert "key.pem exists" in r.err and "--force" in r.err, r.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched, nothing left over

    # Only the certificate left: still refused, and no key appears.
    (out / "key.pem").unlink()
    r = run_ferry(["cert", "--out", str(out)])
    assert r.rc == 1 and "cert.pem exists" in r.err, r.text
    assert sorted(p.name for p in out.iterdir()) == ["cert.pem"]

    _, pin2, _ = make(out, "--name", "localhost", "--force")
    assert pin2 != pin1
    assert mode(out / "cert.pem") == 0o644 and mode(out / "key.pem") == 0o600
    assert sorted(p.name for p in out.iterdir()) == ["cert.pem", "key.pem"]
    assert (out / "key.pem").read_bytes() != before["key.pem"]


@pytest.mark.parametrize(
    "args, words",
    [
        ([], "--out DIR is required"),
        (["--days", "0"], "--days: '0' is not a number from 1 to 3650"),
        (["--days", "3651"], "--days: '3651' is not a number from 1 to 3650"),
        (["--days", "-1"], "--days"),
        (["--days", "ten"], "--days"),
        (["--name", "bad name"], "--name: 'bad name' is neither"),
        (["--name", "*.example.com"], "no wildcards"),
        (["--name", "[::1]"], "--name"),
        (["--name", "a", "--name", "b", "--name", "c", "--name", "d", "--name", "e", "--name", "f",
          "--name", "g"], "at most 6 --name options"),
        (["--frobnicate"], "Try 'ferry cert --help'"),
        (["extra"], "unexpected argument 'extra'"),
    ],
    ids=["no-out", "days-0", "days-3651", "days-negative", "days-word", "name-space", "name-wildcard",
         "name-brackets", "names-7", "unknown-option", "extra-arg"],
)
def test_usage_errors(tmp_path, args, words):
    out = tmp_path / "tls"
    full = ["cert", *args] if args == [] else ["cert", "--out", str(out), *args]
    r = run_ferry(full)
    assert r.rc == 2, r.text
    assert words in r.err, r.err
    assert r.out == ""
    assert not out.exists()


def test_places_that_cannot_be_written(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("a file\n")
    r = run_ferry(["cert", "--out", str(plain)])
    assert r.rc == 1 and "Not a directory" in r.err, r.text
    r = run_ferry(["cert", "--out", str(plain / "tls")])
    assert r.rc == 1 and "cannot create directory" in r.err, r.text
    r = run_ferry(["cert", "--out", str(tmp_path / "missing" / "tls")])
    assert r.rc == 1 and "cannot create directory" in r.err and "No such file" in r.err, r.text
    assert r.out == ""
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        r = run_ferry(["cert", "--out", str(ro)])
        assert r.rc == 1 and "Permission denied" in r.err, r.text


@pytest.mark.parametrize("args", [["cert", "--help"], ["cert", "-h"], ["help", "cert"]])
def test_help(args):
    r = run_ferry(args)
    assert r.rc == 0, r.text
    assert r.out.startswith("usage: ferry cert --out DIR [--name HOST]... [--days N] [--force]\n")
    for word in ("--out", "--name", "--days", "--force", "0600", "0644", "0700", "P-256",
                 "--proxy-pinnedpubkey", "3650", "localhost"):
        assert word in r.out, word


def test_main_help_lists_cert():
    r = run_ferry(["--help"])
    assert r.rc == 0
    assert re.search(r"^  cert ", r.out, re.M), r.out


# ---- the pair serves TLS -----------------------------------------------------------


class SServer:
    """`openssl s_server -www` on a loopback port with the given pair."""

    def __init__(self, cert: Path, key: Path):
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [OPENSSL, "s_server", "-cert", str(cert), "-key", str(key), "-accept",
                 f"127.0.0.1:{self.port}", "-www", "-quiet"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._listening(10.0):
                return
            self.stop()
        raise RuntimeError("openssl s_server did not start")

    def _listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            # Look at the kernel's table rather than connect (a probe would
            # be a client to s_server).
            with open("/proc/net/tcp") as f:
                if any(f":{self.port:04X} 00000000:0000 0A" in line for line in f):
                    return True
            time.sleep(0.05)
        return False

    def stop(self):
        stop_proc(self.proc)


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CURL, "-sS", "--max-time", "10", "-o", "-", *args], capture_output=True,
                          timeout=30)


@needs_openssl
@pytest.mark.skipif(not CURL, reason="curl is needed (make deps-test)")
def test_pair_serves_tls_with_pin(tmp_path):
    out = tmp_path / "tls"
    _, pin, _ = make(out, "--name", "localhost")
    _, other_pin, _ = make(tmp_path / "other", "--name", "localhost")
    server = SServer(out / "cert.pem", out / "key.pem")
    try:
        url = f"https://localhost:{server.port}/"
        r = curl("--pinnedpubkey", pin, "--cacert", str(out / "cert.pem"), url)
        assert r.returncode == 0, r.stderr
        assert b"s_server" in r.stdout
        # The IP SAN: 127.0.0.1 by address, checked against the certificate.
        r = curl("--cacert", str(out / "cert.pem"), f"https://127.0.0.1:{server.port}/")
        assert r.returncode == 0, r.stderr
        # Pinned alone (no CA check), as curl's --proxy-pinnedpubkey users do.
        r = curl("--insecure", "--pinnedpubkey", pin, url)
        assert r.returncode == 0, r.stderr
        # A wrong pin fails (curl's 90: SSL public key does not match).
        r = curl("--pinnedpubkey", other_pin, "--cacert", str(out / "cert.pem"), url)
        assert r.returncode == 90, (r.returncode, r.stderr)
        # Another ferry cert as the CA: not trusted (60: peer certificate).
        r = curl("--cacert", str(tmp_path / "other" / "cert.pem"), url)
        assert r.returncode == 60, (r.returncode, r.stderr)
    finally:
        server.stop()
