# SPDX-License-Identifier: BSD-2-Clause
"""Session tickets on a tls:// listener ([tls] ticket_rotation): python's
ssl client resumes with a ticket (TLS 1.3 PSK), still after a SIGHUP (the
ticket keys live with the process, not the configuration), no longer two
rotations after the ticket was issued, and never with ticket_rotation = 0.
Bounds of the key are checked with --check."""

import re
import signal
import socket
import time

from ferrylib import _log_stamp, run_ferry
from test_tls_listen import certs, client_ctx, tls_ferry  # noqa: F401

ROTATED = r"tls: session ticket keys rotated"
STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z debug +" + ROTATED + "$", re.M)


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
    _, sess = session_of(f.addr, ctx)
    # Two rotations after the ticket was sealed: its key is gone. The ticket
    # was sealed before `sealed`; a rotation line stamped after it is a
    # rotation after the sealing, except at most one that rotated before
    # and took its stamp after (the supervisor rotates, stamps and logs,
    # and rotates again no sooner than 1s later). So three such lines are
    # at least two rotations after the ticket, however long its handshake
    # took and however late the logger writes.
    sealed = _log_stamp(time.time())
    deadline = time.monotonic() + 30
    while sum(1 for m in STAMPED.finditer(f.log_text()) if m.group(1) > sealed) < 3:
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
