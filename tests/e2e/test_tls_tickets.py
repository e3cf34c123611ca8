# SPDX-License-Identifier: BSD-2-Clause
"""Session tickets on a tls:// listener ([tls] ticket_rotation): python's
ssl client resumes with a ticket (TLS 1.3 PSK), still after a SIGHUP (the
ticket keys live with the process, not the configuration), no longer two
rotations after the ticket was issued, and never with ticket_rotation = 0.
Bounds of the key are checked with --check."""

import signal
import socket
import time

from ferrylib import run_ferry
from test_tls_listen import certs, client_ctx, tls_ferry  # noqa: F401

ROTATED = r"tls: session ticket keys rotated"


def session_of(addr, ctx, session=None):
    """One TLS connection (resuming session if given) that waits for the
    server's tickets (a SOCKS5 greeting and its reply); returns (reused,
    the session to resume next)."""
    raw = socket.create_connection(addr, timeout=20)
    with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
        s.sendall(b"\x05\x01\x00")
        got = b""
        while len(got) < 2:
            d = s.recv(2 - len(got))
            assert d, got
            got += d
        assert got == b"\x05\x00", got
        return s.session_reused, s.session


def test_resumption_survives_sighup(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    ctx = client_ctx()
    reused, sess = session_of(f.addr, ctx)
    assert not reused
    assert sess is not None and sess.has_ticket
    reused, sess2 = session_of(f.addr, ctx, sess)
    assert reused, "a fresh ticket is not resumed"
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", timeout=10, start=off)
    reused, _ = session_of(f.addr, ctx, sess2)
    assert reused, "a ticket from before the reload is not resumed"


def test_no_resumption_two_rotations_later(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, extra_tls="ticket_rotation = 1s\n", config={"log_level": "debug"})
    ctx = client_ctx()
    off = f.log_offset()
    _, sess = session_of(f.addr, ctx)
    # Two rotations after the ticket was issued: its key is gone. (Wait for
    # four rotation lines: up to two may belong to rotations before the
    # ticket, one of them logged late.)
    deadline = time.monotonic() + 30
    while f.log_text()[off:].count(ROTATED) < 4:
        assert time.monotonic() < deadline, "no key rotations logged"
        time.sleep(0.1)
    reused, fresh = session_of(f.addr, ctx, sess)
    assert not reused, "a ticket two rotations old was resumed"
    assert fresh is not None and fresh.has_ticket


def test_rotation_zero_disables_tickets(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, extra_tls="ticket_rotation = 0\n")
    ctx = client_ctx()
    _, sess = session_of(f.addr, ctx)
    assert sess is None or not sess.has_ticket
    if sess is not None:
        reused, _ = session_of(f.addr, ctx, sess)
        assert not reused


def test_check_bounds_ticket_rotation(tmp_path, certs):
    cert, key = certs["a"]
    for value, ok in (("500ms", False), ("8d", False), ("1s", True), ("7d", True), ("0", True)):
        conf = tmp_path / "c.conf"
        conf.write_text(f"open_proxy = yes\nlisten = tls://127.0.0.1:1\n[tls]\ncert = {cert}\n"
                        f"key = {key}\nticket_rotation = {value}\n")
        r = run_ferry(["serve", "--check", "-c", str(conf)])
        assert (r.rc == 0) == ok, (value, r.text)
        if not ok:
            assert "tls.ticket_rotation" in r.text and "1s to 7d" in r.text, r.text
