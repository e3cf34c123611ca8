# SPDX-License-Identifier: BSD-2-Clause
"""Heads the HTTP proxy writes on (proto/http1.c: http1_rewrite_response)
when they do not fit the proxy's head buffer: the client gets a whole
answer or a clean error, never part of a head.

With [http] max_header above the rewritten-head buffer (64 KiB and a
little), an origin may send a response head the parser accepts but the
rewrite cannot hold. The client must then see either that response whole
or a complete 502, and no bytes of a head cut short (which a next hop
would read as a response of its own, with whatever fields got through).
"""

import socket
import time

import pytest

from ferrylib import ThreadedServer
from httplib import Conn, config_text

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
def test_response_head_over_the_rewrite_buffer(ferry, tcp_server, via):
    origin = tcp_server(BigHeadOrigin)
    f = ferry(raw_config=config_text(http={"max_header": "128k", "via": via}))
    with Conn.open(f.addr) as c:
        c.send(f"GET http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        got = c.read_to_eof(timeout=10)
    head, sep, body = got.partition(b"\r\n\r\n")
    assert sep, f"the client got part of a head ({len(got)} bytes): {got[:80]!r}..."
    status = head.split(b"\r\n", 1)[0]
    if status.startswith(b"HTTP/1.1 200 "):
        assert head.count(b"\r\nX-Big-") == NFIELDS and body == b"ok"
    else:
        assert status.startswith(b"HTTP/1.1 502 "), status
        assert b"malformed response" in body
