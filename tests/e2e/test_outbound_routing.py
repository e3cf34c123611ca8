# SPDX-License-Identifier: BSD-2-Clause
"""Rules choose the way out ("allow ... via NAME", top-level "outbound ="):
by destination suffix, by client range and by user, seen at two ferry
parents on loopback (whose access logs say which one carried a session)
and in the front's access log (via=NAME); "via reject"; an address-range
rule that names a parent (the name is resolved by the front to judge the
address, and the parent is told the address); BIND that a rule sends
through a parent, refused; and --check naming an unknown outbound and a
pool that contains itself with FILE:LINE.

Names under .localhost resolve to 127.0.0.1 and ::1 inside ferry (RFC
6761), so every destination is a loopback echo server. Every wait is
bounded."""

import re
import socket

import pytest

from ferrylib import (
    EchoServer,
    echo_roundtrip,
    open_client,
    run_ferry,
    socks_connect,
    socks_connect_auth,
)
from policylib import make_userlist


@pytest.fixture(scope="module")
def echo():
    srv = EchoServer("127.0.0.1")
    yield srv
    srv.stop()


def parents(ferry):
    """Two ferry parents, and the [outbound] sections naming them."""
    p1, p2 = ferry(), ferry()
    extra = (f"[outbound one]\nurl = socks5h://127.0.0.1:{p1.port}\n"
             f"[outbound two]\nurl = socks5h://127.0.0.1:{p2.port}\n")
    return p1, p2, extra


def carried(front, parent, client: tuple, dst: str, via: str) -> None:
    """The front logged the session of the client at address client via
    NAME, and parent (when given) saw it."""
    entry = front.access_for(client)
    assert entry.get("via") == via, entry
    if parent is not None:
        parent.wait_log(r"access .*dst=" + re.escape(dst))


def roundtrip(front, host, port, **kw):
    s, _ = socks_connect(front.addr, host, port, **kw)
    with s:
        echo_roundtrip(s, b"ping")
        return s.getsockname()


def test_by_destination_suffix(ferry, echo):
    p1, p2, extra = parents(ferry)
    front = ferry(extra=extra + "[rules]\nallow to *.one.localhost via one\n"
                  "allow to *.two.localhost via two\nallow\n")
    port = echo.addr[1]
    s = roundtrip(front, "a.one.localhost", port)
    carried(front, p1, s, f"a.one.localhost:{port}", "one")
    s = roundtrip(front, "b.two.localhost", port)
    carried(front, p2, s, f"b.two.localhost:{port}", "two")
    s = roundtrip(front, "localhost", port)
    carried(front, None, s, "", "direct")
    assert "dst=localhost:" not in p1.log_text() + p2.log_text()


def test_by_client_range(ferry, echo):
    p1, p2, extra = parents(ferry)
    front = ferry(extra=extra + "[rules]\nallow from 127.0.0.2 via one\n"
                  "allow from 127.0.0.3 via two\nallow\n")
    for source, parent, via in (("127.0.0.2", p1, "one"), ("127.0.0.3", p2, "two")):
        s = open_client(front.addr, source=source)
        me = s.getsockname()
        with s:
            s.sendall(b"\x05\x01\x00")
            assert s.recv(2) == b"\x05\x00"
            name = f"{via}.localhost".encode()
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name
                      + echo.addr[1].to_bytes(2, "big"))
            rep = s.recv(4)
            assert rep[1] == 0, rep
            atyp = rep[3]
            s.recv({1: 4, 4: 16}[atyp] + 2)
            echo_roundtrip(s, b"x")
        carried(front, parent, me, f"{via}.localhost:{echo.addr[1]}", via)


def test_by_user(ferry, echo, tmp_path):
    p1, p2, extra = parents(ferry)
    users = make_userlist(tmp_path / "users", {"alice": "a-pass", "bob": "b-pass"})
    front = ferry(auth={"userlist": str(users)},
                  extra=extra + "[rules]\nallow user alice via one\nallow user bob via two\n")
    port = echo.addr[1]
    for user, pw, parent, via in (("alice", "a-pass", p1, "one"), ("bob", "b-pass", p2, "two")):
        s, _ = socks_connect_auth(front.addr, user, pw, f"{user}.localhost", port)
        with s:
            echo_roundtrip(s, b"hi")
            me = s.getsockname()
        carried(front, parent, me, f"{user}.localhost:{port}", via)


def test_via_reject_and_default_outbound(ferry, echo):
    p1, _, extra = parents(ferry)
    front = ferry(config={"outbound": "one"},
                  extra=extra + "[rules]\nallow to *.blocked.localhost via reject\nallow\n")
    s, r = socks_connect(front.addr, "x.blocked.localhost", echo.addr[1], expect=None)
    me = s.getsockname()
    s.close()
    assert r.rep == 0x02
    entry = front.access_for(me)
    assert entry["end"] == "rejected" and entry["via"] == "reject", entry
    # No rule names a way: the top-level outbound carries it.
    s = roundtrip(front, "plain.localhost", echo.addr[1])
    carried(front, p1, s, f"plain.localhost:{echo.addr[1]}", "one")


def test_range_rule_names_a_parent(ferry, echo):
    """A range rule comes first: the front resolves the name to judge its
    address, and the parent is told the address it allowed."""
    p1, _, extra = parents(ferry)
    front = ferry(extra=extra + "[rules]\nallow to 127.0.0.0/8 via one\ndeny\n")
    s = roundtrip(front, "localhost", echo.addr[1])
    carried(front, p1, s, f"127.0.0.1:{echo.addr[1]}", "one")


def test_bind_via_parent_is_refused(ferry):
    _, _, extra = parents(ferry)
    front = ferry(config={"bind": "yes"}, extra=extra + "[rules]\nallow cmd bind via one\nallow\n")
    s = open_client(front.addr)
    with s:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50")
        rep = s.recv(10)
        assert rep[1] == 0x07, rep  # command not supported
    front.wait_log(r"BIND: the rule at \S+ sends it via one \(socks5\), and BIND through a "
                   r"parent proxy is not supported; refused")


def test_bind_via_pool_of_direct_members_binds_here(ferry):
    front = ferry(config={"bind": "yes"},
                  extra="[outbound here]\nmembers = direct\n[rules]\nallow cmd bind via here\nallow\n")
    s = open_client(front.addr)
    with s:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50")
        rep = s.recv(10)
        assert rep[1] == 0x00, rep  # the first BIND reply: listening here


def test_check_names_unknown_outbounds_and_cycles(tmp_path):
    conf = tmp_path / "f.conf"
    conf.write_text("outbound = nowhere\n"
                    "[outbound a]\nmembers = b\n"
                    "[outbound b]\nmembers = a\n"
                    "[rules]\nallow via elsewhere\n")
    r = run_ferry(["serve", "-c", str(conf), "--check"])
    assert r.rc != 0
    text = r.text
    assert f"{conf}:1: outbound: 'nowhere' is not an outbound" in text, text
    assert "f.conf:7: rule: via 'elsewhere' is not an outbound" in text, text
    assert f"{conf}:3: outbound a: members: a cycle: a -> b -> a" in text, text
