# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures for ferry's end-to-end tests (helpers live in ferrylib.py).

  ferry          function-scoped factory: ferry(config={...}, auth={...},
                 listens=[...])
                 starts `ferry serve`, waits for 'ready:' and returns a
                 ferrylib.Ferry (.port, .addrs, .proc, .log_text(), .stop()).
                 Teardown stops every instance and fails the test on a
                 non-zero exit (unless started with expect_exit=None) or on
                 any AddressSanitizer/LeakSanitizer/UBSan report.
  module_ferry   the same, shared by the tests of one module
  echo_server    threaded echo on 127.0.0.1:0   (session)
  echo_server6   threaded echo on [::1]:0       (session)
  http_server    http.server on 127.0.0.1:0 with small.txt and big.bin
                 (10 MiB random); .files maps name -> sha256   (session)
  tcp_server     factory for the other ferrylib servers; stops them all
  blackhole      a loopback port whose SYNs are dropped (connect timeouts);
                 skips where the kernel does not allow it

Run: FERRY_BIN=/abs/build/san/ferry /usr/bin/python3 -m pytest -q tests/e2e
(FERRY_BIN defaults to <repo>/build/san/ferry.) Tests marked `slow` (the
marker is registered below) are the few over ~15 s; `make test` runs them,
`-m 'not slow'` skips them for a quick local run.
"""

import os
import socket
import time

import pytest

import ferrylib
from ferrylib import EchoServer, FerryFactory, HttpFileServer


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: over ~15 s on two cores (make test runs them; "
        "-m 'not slow' leaves them out of a quick local run). Keep them few.")
    binary = ferrylib.ferry_bin()
    if not os.access(binary, os.X_OK):
        raise pytest.UsageError(
            f"ferry binary {binary} not found or not executable; build it with "
            "`make build/san/ferry` or set FERRY_BIN"
        )


def pytest_report_header(config):
    return f"ferry binary: {ferrylib.ferry_bin()}"


def _finalize(factory: FerryFactory):
    problems = factory.finalize()
    if problems:
        pytest.fail("ferry teardown:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def ferry(tmp_path):
    factory = FerryFactory(tmp_path)
    yield factory
    _finalize(factory)


@pytest.fixture(scope="module")
def module_ferry(tmp_path_factory, request):
    factory = FerryFactory(tmp_path_factory.mktemp(request.module.__name__.replace(".", "_")))
    yield factory
    _finalize(factory)


@pytest.fixture(scope="session")
def echo_server():
    srv = EchoServer("127.0.0.1")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def echo_server6():
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback (::1) on this host")
    srv = EchoServer("::1")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def http_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    srv = HttpFileServer(root)
    srv.add_file("small.txt", b"hello from ferry's e2e tests\n" * 37)
    srv.add_file("big.bin", os.urandom(10 * 1024 * 1024))
    yield srv
    srv.stop()


@pytest.fixture
def tcp_server():
    """tcp_server(ferrylib.SomeServer, host, **kw) -> started server."""
    servers = []

    def make(cls, host="127.0.0.1", **kw):
        srv = cls(host, **kw)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.stop()


@pytest.fixture
def blackhole():
    """A loopback port whose SYNs are dropped: a listener with backlog 0 whose
    accept queue is filled with connections nobody accepts."""
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    port = lst.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(c)
        time.sleep(0.2)
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", port))
            connected = True
        except (socket.timeout, OSError):
            connected = False
        finally:
            probe.close()
        if connected:
            pytest.skip("this kernel completes connects to a listener with a full accept "
                        "queue, so a connect timeout cannot be provoked on loopback")
        yield port
    finally:
        for c in fillers:
            c.close()
        lst.close()
