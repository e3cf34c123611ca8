# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 test helpers shared by the e2e files: a ferry with an HTTP/2
inbound (a tls:// listener), H2Client (python3-h2 over TLS, driven by
hand, CONNECT streams), and pattern()/SourceServer for downloads whose
bytes can be checked. python3-h2 is imported when present: a file that
uses H2Client skips without it (pytest.importorskip("h2")); pattern() and
SourceServer need nothing but the standard library."""

import hashlib
import select
import socket
import ssl
import time

from ferrylib import ThreadedServer

try:
    import h2.config
    import h2.connection
    import h2.errors
    import h2.events
    import h2.exceptions
except ImportError:  # the files that need it skip (importorskip)
    h2 = None


def h2_ferry(ferry, cert, config: dict | None = None, extra: str = "", **kw):
    c, k = cert
    return ferry(listens=("tls://127.0.0.1:0",),
                 config={"open_proxy": "yes", **(config or {})},
                 extra=f"[tls]\ncert = {c}\nkey = {k}\n{extra}", **kw)


class H2Client:
    """A python3-h2 client over TLS (ALPN h2), driven by hand: pump()
    reads what came and answers; streams[sid] records what each got."""

    def __init__(self, addr, cafile, window: int = 1 << 30, rcvbuf: int = 0):
        ctx = ssl.create_default_context(cafile=str(cafile))
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.settimeout(10)
        if rcvbuf:  # a small receive buffer: what queues is ferry's
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.connect(addr)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        assert self.sock.selected_alpn_protocol() == "h2"
        self.sock.setblocking(False)
        cfg = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False,
                                        header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        # The connection window is the client's: large, so a stalled
        # stream never closes it for the others.
        self.conn.increment_flow_control_window(window - 65535)
        self.streams: dict[int, dict] = {}
        self.stalled: set[int] = set()
        self.goaway = None
        self.closed = False
        self.remote_settings = None
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        view = memoryview(data)
        deadline = time.monotonic() + 20
        while view:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                assert time.monotonic() < deadline, "send blocked"
                self.pump(0.01, flush=False)
                select.select([], [self.sock], [], 0.05)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                self.closed = True
                return

    def _read(self) -> bytes | None:
        try:
            return self.sock.recv(1 << 20)
        except (ssl.SSLWantReadError, BlockingIOError):
            return None
        except (ConnectionResetError, ssl.SSLError):
            return b""

    def pump(self, timeout: float = 0.05, flush: bool = True):
        if self.closed:
            time.sleep(timeout)
            return
        if not self.sock.pending():
            select.select([self.sock], [], [], timeout)
        while True:
            data = self._read()
            if data is None:
                break
            if data == b"":
                self.closed = True
                break
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.closed = True
                break
            for ev in events:
                self._event(ev)
        if flush:
            self.flush()

    def _event(self, ev):
        sid = getattr(ev, "stream_id", None)
        st = self.streams.get(sid) if sid else None
        if isinstance(ev, h2.events.ResponseReceived):
            st["status"] = int(dict(ev.headers)[":status"])
            st["headers"] = dict(ev.headers)
        elif isinstance(ev, h2.events.DataReceived):
            st["data"] += ev.data
            if sid not in self.stalled:
                self.conn.acknowledge_received_data(ev.flow_controlled_length, sid)
        elif isinstance(ev, h2.events.StreamEnded):
            st["ended"] = True
        elif isinstance(ev, h2.events.StreamReset):
            st["reset"] = ev.error_code
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev
            if ev.error_code == h2.errors.ErrorCodes.NO_ERROR:
                # python3-h2 closes its whole state machine at any GOAWAY;
                # RFC 9113 6.8 lets streams up to last_stream_id go on.
                self.conn.state_machine.state = h2.connection.ConnectionState.CLIENT_OPEN
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            self.remote_settings = {k: v.new_value for k, v in ev.changed_settings.items()}

    def connect(self, authority: str, headers=(), end: bool = False) -> int:
        sid = self.conn.get_next_available_stream_id()
        self.streams[sid] = {"status": None, "data": bytearray(), "ended": False, "reset": None}
        self.conn.send_headers(sid, [(":method", "CONNECT"), (":authority", authority), *headers],
                               end_stream=end)
        self.flush()
        return sid

    def send(self, sid: int, data: bytes, end: bool = False, timeout: float = 30):
        """Send within the stream's window, waiting for credit."""
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size,
                       len(view))
            if room <= 0:
                assert time.monotonic() < deadline, f"stream {sid}: no credit"
                self.pump(0.05)
                continue
            self.conn.send_data(sid, bytes(view[:room]))
            view = view[room:]
            self.flush()
        if end:
            self.conn.end_stream(sid)
            self.flush()

    def wait(self, pred, timeout: float = 20, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            self.pump(0.05)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def pattern(seed: int, n: int) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest() * 128  # 4 KiB
    return (block * (n // len(block) + 1))[:n]


class SourceServer(ThreadedServer):
    """Reads a decimal byte count and a newline, sends that many bytes of
    pattern(count), then closes."""

    def handle(self, c, peer):
        line = b""
        while not line.endswith(b"\n"):
            d = c.recv(64)
            if not d:
                return
            line += d
        n = int(line)
        c.sendall(pattern(n, n))
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass
