# SPDX-License-Identifier: BSD-2-Clause
"""Certificates for the TLS tests, made with the openssl command: a
self-signed P-256 certificate for localhost and 127.0.0.1, and the pin a
client gives (sha256//BASE64 of the SubjectPublicKeyInfo, curl's
--proxy-pinnedpubkey form)."""

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

OPENSSL = shutil.which("openssl")


def make_cert(d: Path, name: str, cn: str = "localhost") -> tuple[Path, Path]:
    """d/NAME.pem and d/NAME.key: self-signed, P-256, for localhost and 127.0.0.1."""
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={cn}",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=30)
    return cert, key


def pin_of_der(der_cert: bytes) -> str:
    """The pin of a DER certificate."""
    pub = subprocess.run([OPENSSL, "x509", "-inform", "der", "-pubkey", "-noout"], input=der_cert,
                         check=True, capture_output=True, timeout=30).stdout
    der = subprocess.run([OPENSSL, "pkey", "-pubin", "-outform", "der"], input=pub,
                         check=True, capture_output=True, timeout=30).stdout
    return "sha256//" + base64.b64encode(hashlib.sha256(der).digest()).decode()


def pin_of(cert: Path) -> str:
    """The pin of a PEM certificate file."""
    der = subprocess.run([OPENSSL, "x509", "-in", str(cert), "-outform", "der"],
                         check=True, capture_output=True, timeout=30).stdout
    return pin_of_der(der)
