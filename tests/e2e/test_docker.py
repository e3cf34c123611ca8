# SPDX-License-Identifier: BSD-2-Clause
"""The Dockerfile: what it promises is checked always (Debian 12 slim in
both stages, a non-root user, /etc/ferry a volume, the ports of the image's
configuration exposed, SIGTERM as the stop signal); the image's
configuration passes `ferry serve --check`; its HEALTHCHECK command, run by
bash on this host against a real ferry, passes while ferry serves and fails
once it drains. The image itself is built only where a container engine
answers (`docker info` or `podman info`); otherwise that test is skipped
and says why.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess

import pytest

from ferrylib import REPO_ROOT, run_ferry, socks_connect
from opslib import http_get, metrics_addr, wait_until

DOCKERFILE = REPO_ROOT / "Dockerfile"
IMAGE_CONF = REPO_ROOT / "contrib/docker/ferry.conf"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def args_of(name: str) -> list[str]:
    return [a for i, a in instructions() if i == name]


def conf_port(section: str | None, key: str = "listen") -> int:
    current = None
    for line in IMAGE_CONF.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and re.match(rf"{key}\s*=", line):
            return int(line.rsplit(":", 1)[1])
    raise AssertionError(f"no {key} in [{section}] of {IMAGE_CONF}")


def healthcheck_argv() -> list[str]:
    hc = args_of("HEALTHCHECK")
    assert len(hc) == 1, hc
    m = re.search(r"\bCMD\s+(\[.*\])\s*$", hc[0])
    assert m, hc[0]
    return json.loads(m.group(1))


def test_dockerfile_promises():
    froms = args_of("FROM")
    assert len(froms) >= 2, "a multi-stage build"
    assert all(f.split()[0] == "debian:12-slim" for f in froms), froms
    users = args_of("USER")
    assert users and users[-1] not in ("root", "0"), users
    assert any("/etc/ferry" in v for v in args_of("VOLUME")), args_of("VOLUME")
    exposed = " ".join(args_of("EXPOSE"))
    for port in (conf_port(None), conf_port("metrics")):
        assert re.search(rf"\b{port}(/tcp)?\b", exposed), (port, exposed)
    # ferry drains on SIGTERM (SIGINT too); SIGKILL-like signals would drop sessions
    assert args_of("STOPSIGNAL") == ["SIGTERM"]
    assert f"/dev/tcp/127.0.0.1/{conf_port('metrics')}" in " ".join(healthcheck_argv())
    assert "/healthz" in " ".join(healthcheck_argv())
    entry = json.loads(args_of("ENTRYPOINT")[-1])
    assert entry[:2] == ["/usr/bin/ferry", "serve"] and "/etc/ferry/ferry.conf" in entry, entry


def test_image_config_passes_check():
    r = run_ferry(["serve", "--check", "-c", str(IMAGE_CONF)])
    assert r.rc == 0, r.text


def test_healthcheck_command_follows_healthz(ferry, echo_server):
    if not shutil.which("bash"):
        pytest.skip("no bash")
    f = ferry(config={"shutdown_timeout": "10s"}, extra="[metrics]\nlisten = 127.0.0.1:0\n")
    port = metrics_addr(f)[1]
    argv = [a.replace("/dev/tcp/127.0.0.1/9090", f"/dev/tcp/127.0.0.1/{port}") for a in healthcheck_argv()]
    assert subprocess.run(argv, timeout=10).returncode == 0, "HEALTHCHECK fails against a serving ferry"
    # a held session keeps the drain (and the metrics endpoint) going
    held, _ = socks_connect(f.addr, *echo_server.addr)
    try:
        f.send_signal(signal.SIGTERM)
        wait_until(lambda: http_get(("127.0.0.1", port), "/healthz").status == 503, 10, "/healthz 503")
        assert subprocess.run(argv, timeout=10).returncode != 0, "HEALTHCHECK passes on a draining ferry"
    finally:
        held.close()


def engine() -> tuple[str | None, str]:
    """A container engine that answers, or None and why not."""
    reasons = []
    for tool in ("docker", "podman"):
        path = shutil.which(tool)
        if not path:
            reasons.append(f"no {tool} binary")
            continue
        try:
            r = subprocess.run([path, "info"], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            reasons.append(f"`{tool} info` did not answer in 30s")
            continue
        if r.returncode == 0:
            return path, ""
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        reasons.append(f"`{tool} info` failed: {last}")
    return None, "; ".join(reasons)


def test_image_builds_and_runs():
    tool, why = engine()
    if tool is None:
        pytest.skip(f"no working container engine ({why})")
    tag = "ferry-e2e:test"
    r = subprocess.run([tool, "build", "-t", tag, str(REPO_ROOT)], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0 and re.search(r"pull access|failed to resolve|dial tcp|Temporary failure|"
                                       r"Could not resolve|no such host|network is unreachable", r.stderr + r.stdout):
        pytest.skip("the image build needs the network (the base image and Debian's packages): "
                    + (r.stderr.strip().splitlines() or ["?"])[-1])
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    try:
        r = subprocess.run([tool, "run", "--rm", "--entrypoint", "/usr/bin/ferry", tag, "--version"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "ferry" in r.stdout + r.stderr, r
        r = subprocess.run([tool, "run", "--rm", "--entrypoint", "id", tag, "-u"], capture_output=True, text=True,
                           timeout=60)
        assert r.stdout.strip() not in ("", "0"), r
    finally:
        subprocess.run([tool, "rmi", "-f", tag], capture_output=True, timeout=60)
