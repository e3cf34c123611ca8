# SPDX-License-Identifier: BSD-2-Clause
"""Large heads through the HTTP proxy: [http] max_header is the limit in
both directions, whatever its value. A head the parser accepts is written
on whole (the rewritten head's buffer is sized from max_header, not fixed);
a larger one is a clean 502, never part of a head (which a next hop would
read as a response of its own, with whatever fields got through).
"""

import socket
import time

import pytest

from ferrylib import ThreadedServer
from httplib import Conn, HttpUpstream, config_text, read_response

FIELD = "X-Big-{i}: " + "v" * 990 + "\r\n"  # about 1 KB each
NFIELDS = 90  # about 90 KB: over 64 KiB, under max_header 128k and 100 fields


def big_head() -> bytes:
    fields = "".join(FIELD.format(i=i) for i in range(NFIELDS))
    return (f"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n{fields}\r\nok").encode()


class BigHeadOrigin(ThreadedServer):
    """Reads a request head, answers with a head of about 90 KB."""

    def handle(self, c, peer):
        buf = b""
        deadline = time.monotonic() + 10
        while b"\r\n\r\n" not in buf and time.monotonic() < deadline:
            c.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                data = c.recv(65536)
            except (socket.timeout, OSError):
                return
            if not data:
                return
            buf += data
        try:
            c.sendall(big_head())
        except OSError:
            return
        time.sleep(0.5)  # let the proxy read it all before our close


@pytest.mark.parametrize("via", ["ferry", "no"])
def test_response_head_up_to_max_header_goes_through_whole(ferry, tcp_server, via):
    origin = tcp_server(BigHeadOrigin)
    f = ferry(raw_config=config_text(http={"max_header": "128k", "via": via}))
    with Conn.open(f.addr) as c:
        c.send(f"GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n"
               "Connection: close\r\n\r\n".encode())
        got = c.read_to_eof(timeout=10)
    head, sep, body = got.partition(b"\r\n\r\n")
    assert sep, f"the client got part of a head ({len(got)} bytes): {got[:80]!r}..."
    assert head.split(b"\r\n", 1)[0].startswith(b"HTTP/1.1 200 "), head[:80]
    assert head.count(b"\r\nX-Big-") == NFIELDS and body == b"ok"


def test_response_head_over_max_header_is_a_clean_502(ferry, tcp_server):
    origin = tcp_server(BigHeadOrigin)
    f = ferry(raw_config=config_text(http={"max_header": "64k"}))
    with Conn.open(f.addr) as c:
        c.send(f"GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        got = c.read_to_eof(timeout=10)
    head, sep, body = got.partition(b"\r\n\r\n")
    assert sep, f"the client got part of a head ({len(got)} bytes): {got[:80]!r}..."
    assert head.split(b"\r\n", 1)[0].startswith(b"HTTP/1.1 502 "), head[:80]
    assert b"X-Big-" not in got


def test_request_head_up_to_max_header_goes_through_whole(ferry, tcp_server):
    up = tcp_server(HttpUpstream)
    f = ferry(raw_config=config_text(http={"max_header": "128k"}))
    fields = "".join(FIELD.format(i=i) for i in range(NFIELDS))
    with Conn.open(f.addr) as c:
        c.send(f"GET http://127.0.0.1:{up.port}/small HTTP/1.1\r\nHost: x\r\n{fields}\r\n".encode())
        r = read_response(c, timeout=10)
    assert r.status == 200, r.status
    rec = up.records[-1]
    assert rec.head.count(b"\r\nX-Big-") == NFIELDS, len(rec.head)
