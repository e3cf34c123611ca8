# SPDX-License-Identifier: BSD-2-Clause
"""UDP ASSOCIATE through a SOCKS5 parent: ferry opens its own association
with the parent (a control connection, UDP ASSOCIATE, RFC 1929 when the
outbound has credentials) on the first datagram whose way out is that
parent, and relays with the header rewritten for it (a name for socks5h,
an address resolved here for socks5).

Parents: a second ferry, Dante (Debian dante-server, skipped when it is
not installed) and a small recording parent written here, which answers
every datagram itself (as if the destination echoed) and keeps the
headers and credentials it saw. Only loopback. Integrity is checked on a
few hundred datagrams of sizes up to udp.max_datagram (a window of them in
flight, lost ones sent again, a bounded number of times: loopback may drop
under load, the relay must not corrupt)."""

import hashlib
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from ferrylib import ATYP_DOMAIN, ATYP_V4, ATYP_V6, HAVE_IPV6, read_until_close
from opslib import free_port, metrics_addr, scrape, wait_until
from udplib import REPLY_TIMEOUT, UdpAssoc, UdpEcho, encode_udp, parse_udp, payload, udp_config

MAX_DATAGRAM = 9012  # ferry's default udp.max_datagram, header included
METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


@pytest.fixture
def udp_server():
    servers = []

    def make(host="127.0.0.1", **kw):
        srv = UdpEcho(host, **kw)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.stop()


def child(ferry, url: str, top=None, udp=None, rules: str = "", extra: str = ""):
    """A ferry whose default way out is [outbound up] at url (rules may
    choose otherwise), with metrics."""
    text = f"[outbound up]\nurl = {url}\n" + METRICS + extra
    if rules:
        text += "\n[rules]\n" + rules
    return ferry(raw_config=udp_config(udp, {"outbound": "up", **(top or {})}, text),
                 listens=["127.0.0.1:0"])


def drops(f, reason: str) -> int:
    return int(scrape(metrics_addr(f)).get("ferry_udp_dropped_total", reason=reason))


def relayed(f, direction: str) -> int:
    return int(scrape(metrics_addr(f)).get("ferry_udp_datagrams_total", direction=direction))


def udp_ports_of(pid: int) -> set[int]:
    """The local ports of the IPv4 UDP sockets process pid holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    with open("/proc/net/udp") as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            if cols[9] in inodes:
                ports.add(int(cols[1].split(":")[1], 16))
    return ports


def echo_many(a: UdpAssoc, dest: tuple, count: int, max_payload: int, seed: int,
              window: int = 8, tries: int = 5) -> tuple[str, str]:
    """Send count datagrams of random sizes (1..max_payload, the largest
    included) through a to dest, each tagged with its sequence number, a
    window of them at a time, again (up to tries times) those whose echo did
    not come. Returns the SHA-256 of what was sent and of what came back,
    each in sequence order; every echo's header must name dest."""
    rng = random.Random(seed)
    sizes = [max_payload, 8] + [rng.randint(8, max_payload) for _ in range(count - 2)]
    sent = [struct.pack(">I", i) + rng.randbytes(n - 4) for i, n in enumerate(sizes)]
    got: dict[int, bytes] = {}
    for _ in range(tries):
        missing = [i for i in range(count) if i not in got]
        if not missing:
            break
        for start in range(0, len(missing), window):
            part = missing[start:start + window]
            for i in part:
                a.send(dest, sent[i])
            deadline = time.monotonic() + REPLY_TIMEOUT
            while any(i not in got for i in part) and time.monotonic() < deadline:
                a.udp.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    m = parse_udp(a.udp.recv(65536))
                except socket.timeout:
                    break
                assert (m.host, m.port) == (dest[0] if dest[0] != "localhost" else "127.0.0.1",
                                            dest[1]), f"reply header names {m.host}:{m.port}"
                got[struct.unpack(">I", m.payload[:4])[0]] = m.payload
    assert len(got) == count, f"{count - len(got)} of {count} datagrams never came back"
    h_sent = hashlib.sha256(b"".join(sent)).hexdigest()
    h_got = hashlib.sha256(b"".join(got[i] for i in range(count))).hexdigest()
    return h_sent, h_got


# ---- a parent that records what it is sent ----------------------------------


class RecordingParent:
    """A SOCKS5 server for UDP ASSOCIATE only, on 127.0.0.1: it checks
    RFC 1929 credentials when given, answers BND 0.0.0.0 (the control
    connection's address is meant) with its relay's port, or refuses with
    rep; every datagram on the relay is recorded (header fields) and sent
    back to its sender with the same header (as if the destination
    echoed)."""

    def __init__(self, auth: tuple | None = None, rep: int = 0):
        self.auth, self.rep = auth, rep
        self.lst = socket.socket()
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(8)
        self.lst.settimeout(0.05)
        self.port = self.lst.getsockname()[1]
        self.relay = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.relay.bind(("127.0.0.1", 0))
        self.relay.settimeout(0.05)
        self.lock = threading.Lock()
        self.seen: list[tuple] = []  # (atyp, host, port, payload)
        self.creds: list[tuple] = []
        self.requests: list[tuple] = []  # the UDP ASSOCIATE's DST (host, port)
        self.controls: list[socket.socket] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self._accept, self._udp)]
        for t in self.threads:
            t.start()

    def _recv(self, c, n):
        buf = b""
        while len(buf) < n:
            chunk = c.recv(n - len(buf))
            if not chunk:
                raise OSError("closed")
            buf += chunk
        return buf

    def _serve(self, c):
        c.settimeout(5)
        ver, nm = self._recv(c, 2)
        methods = self._recv(c, nm)
        if self.auth:
            assert 2 in methods
            c.sendall(b"\x05\x02")
            _, ul = self._recv(c, 2)
            user = self._recv(c, ul)
            pl = self._recv(c, 1)[0]
            pw = self._recv(c, pl)
            with self.lock:
                self.creds.append((user.decode(), pw.decode()))
            ok = (user.decode(), pw.decode()) == self.auth
            c.sendall(b"\x01" + (b"\x00" if ok else b"\x01"))
            if not ok:
                c.close()
                return
        else:
            c.sendall(b"\x05\x00")
        ver, cmd, _, atyp = self._recv(c, 4)
        host = socket.inet_ntoa(self._recv(c, 4)) if atyp == 1 else self._recv(c, 16)
        port = struct.unpack(">H", self._recv(c, 2))[0]
        with self.lock:
            self.requests.append((host, port, cmd))
        rport = self.relay.getsockname()[1] if self.rep == 0 else 0
        c.sendall(bytes([5, self.rep, 0, 1, 0, 0, 0, 0]) + struct.pack(">H", rport))
        if self.rep:
            c.close()
            return
        with self.lock:
            self.controls.append(c)

    def _accept(self):
        while not self.stopping.is_set():
            try:
                c, _ = self.lst.accept()
            except (socket.timeout, OSError):
                continue
            try:
                self._serve(c)
            except (OSError, AssertionError, ValueError):
                c.close()

    def _udp(self):
        while not self.stopping.is_set():
            try:
                data, peer = self.relay.recvfrom(65536)
            except (socket.timeout, OSError):
                continue
            m = parse_udp(data)
            with self.lock:
                self.seen.append((m.atyp, m.host, m.port, m.payload))
            self.relay.sendto(data, peer)

    def close_controls(self):
        with self.lock:
            for c in self.controls:
                c.close()
            self.controls.clear()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(5)
        self.close_controls()
        self.lst.close()
        self.relay.close()


@pytest.fixture
def recording_parent():
    parents = []

    def make(**kw):
        p = RecordingParent(**kw)
        parents.append(p)
        return p

    yield make
    for p in parents:
        p.stop()


# ---- Dante --------------------------------------------------------------------


@pytest.fixture
def dante(tmp_path):
    """danted on a loopback port, UDP ASSOCIATE allowed; yields its port."""
    exe = shutil.which("danted") or ("/usr/sbin/danted" if os.path.exists("/usr/sbin/danted") else None)
    if not exe:
        pytest.skip("dante-server is not installed (make deps)")
    port = free_port()
    conf = tmp_path / "danted.conf"
    conf.write_text(f"""logoutput: {tmp_path}/danted.log
internal: 127.0.0.1 port = {port}
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 }}
socks pass {{ from: 0.0.0.0/0 to: 0.0.0.0/0 command: udpassociate udpreply connect }}
""")
    proc = subprocess.Popen([exe, "-f", str(conf), "-p", str(tmp_path / "danted.pid")],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "danted.err", "wb"))
    try:
        def up():
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return True
            except OSError:
                return proc.poll() is not None
        wait_until(up, 10, "danted to listen")
        if proc.poll() is not None:
            pytest.skip(f"danted did not start: {(tmp_path / 'danted.err').read_text()[-400:]}")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ---- echo with integrity ------------------------------------------------------


def test_echo_integrity_through_ferry_parent(ferry, udp_server):
    e = udp_server()
    parent = ferry(raw_config=udp_config(extra=METRICS), listens=["127.0.0.1:0"])
    f = child(ferry, f"socks5h://127.0.0.1:{parent.port}")
    with UdpAssoc(f.addr) as a:
        h_sent, h_got = echo_many(a, e.addr, 240, MAX_DATAGRAM - 10, seed=15)
        assert h_got == h_sent
        # The largest datagram is udp.max_datagram; one byte more is dropped.
        before = drops(f, "size")
        a.send(e.addr, b"x" * (MAX_DATAGRAM - 10 + 1))
        a.expect_nothing()
        assert drops(f, "size") == before + 1
    # Every datagram reached the destination from the parent, not from the
    # child: the parent relayed them.
    assert relayed(parent, "up") >= 240


def test_echo_integrity_through_dante(ferry, udp_server, dante):
    e = udp_server()
    f = child(ferry, f"socks5h://127.0.0.1:{dante}")
    with UdpAssoc(f.addr) as a:
        h_sent, h_got = echo_many(a, e.addr, 160, MAX_DATAGRAM - 10, seed=16)
        assert h_got == h_sent
        # They reached the destination from Dante, not from the child.
        ports = {p for _, p in e.sources()}
        assert ports and not ports & udp_ports_of(f.proc.pid), "sent straight, not through Dante"
        # A name: Dante resolves it (socks5h); the reply names the address.
        m = a.echo(("localhost", e.port), b"dante by name")
        assert (m.atyp, m.host, m.port) == (ATYP_V4, "127.0.0.1", e.port)
    assert e.saw(b"dante by name")


# ---- names: socks5h sends them, socks5 resolves them here ----------------------


def test_domain_destination_through_ferry_parent(ferry, udp_server):
    e = udp_server()
    parent = ferry(raw_config=udp_config(extra=METRICS), listens=["127.0.0.1:0"])
    # The parent by name too: its addresses are tried in turn (localhost
    # may be ::1 first; the parent listens on 127.0.0.1 only).
    f = child(ferry, f"socks5h://localhost:{parent.port}")
    with UdpAssoc(f.addr) as a:
        for size in (1, 1400, MAX_DATAGRAM - 7 - len("localhost")):
            p = payload(f"name-{size}-", size)
            m = a.echo(("localhost", e.port), p)
            assert (m.atyp, m.host, m.port) == (ATYP_V4, "127.0.0.1", e.port)
    wait_until(lambda: relayed(parent, "up") == 3, 5, "the parent to relay the three")


@pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback (::1) on this host")
def test_ipv6_client_and_destination(ferry, udp_server):
    e6 = udp_server("::1")
    parent = ferry(raw_config=udp_config(), listens=["127.0.0.1:0"])
    f = ferry(raw_config=udp_config(None, {"outbound": "up"},
                                    f"[outbound up]\nurl = socks5h://127.0.0.1:{parent.port}\n"),
              listens=["[::1]:0"])
    with UdpAssoc(f.addr) as a:
        for size in (1, MAX_DATAGRAM - 22):
            m = a.echo(e6.addr, payload(f"v6-{size}-", size))
            assert (m.atyp, m.host, m.port) == (ATYP_V6, "::1", e6.port)
            assert len(m.raw) == 22 + size


@pytest.mark.parametrize("scheme", ["socks5h", "socks5"])
def test_header_for_the_parent_and_credentials(ferry, recording_parent, scheme):
    rp = recording_parent(auth=("udpuser", "pa:ss"))
    f = child(ferry, f"{scheme}://udpuser:pa%3Ass@127.0.0.1:{rp.port}")
    with UdpAssoc(f.addr) as a:
        m = a.echo(("localhost", 7), b"by name")
        m2 = a.echo(("127.0.0.1", 9), b"by address")
    if scheme == "socks5h":
        assert (m.atyp, m.host, m.port) == (ATYP_DOMAIN, "localhost", 7)
    else:
        assert (m.atyp, m.host, m.port) == (ATYP_V4, "127.0.0.1", 7)
    assert (m2.atyp, m2.host, m2.port) == (ATYP_V4, "127.0.0.1", 9)
    with rp.lock:
        seen = [(s[0], s[1], s[2]) for s in rp.seen]
        assert rp.creds == [("udpuser", "pa:ss")], "one association, with the credentials"
        (host, port, cmd), = rp.requests
    want_name = (ATYP_DOMAIN, "localhost", 7) if scheme == "socks5h" else (ATYP_V4, "127.0.0.1", 7)
    assert seen == [want_name, (ATYP_V4, "127.0.0.1", 9)]
    # UDP ASSOCIATE named the socket ferry sends from (BND 0.0.0.0 was
    # taken as the control connection's address: the datagrams arrived).
    assert cmd == 3 and host == "127.0.0.1" and port != 0


# ---- the rules choose the way ----------------------------------------------------


def test_rule_via_sends_one_destination_through_the_parent(ferry, udp_server):
    e_parent, e_direct, e_name = udp_server(), udp_server(), udp_server()
    parent = ferry(raw_config=udp_config(extra=METRICS), listens=["127.0.0.1:0"])
    f = child(ferry, f"socks5://127.0.0.1:{parent.port}", top={"outbound": "direct"},
              rules=f"allow to 127.0.0.1 port {e_parent.port} via up\nallow to *\n")
    with UdpAssoc(f.addr) as a:
        a.echo(e_parent.addr, b"via the parent")
        a.echo(e_direct.addr, b"straight")
        a.echo(("localhost", e_name.port), b"by name, straight")
        mine = udp_ports_of(f.proc.pid)
        assert e_direct.source_of(b"straight")[1] in mine
        assert e_name.source_of(b"by name, straight")[1] in mine
        assert e_parent.source_of(b"via the parent")[1] not in mine
    # One rule hit per destination, the name's included.
    assert scrape(metrics_addr(f)).total("ferry_rule_hits_total") == 3
    wait_until(lambda: relayed(parent, "up") == 1, 5, "the parent to relay one datagram")
    # The two arrived from different sockets: the parent's and the child's.
    assert e_parent.source_of(b"via the parent") != e_direct.source_of(b"straight")


def test_outbound_that_cannot_carry_udp(ferry, udp_server):
    e = udp_server()
    f = child(ferry, "http://127.0.0.1:9")
    with UdpAssoc(f.addr) as a:
        a.send(e.addr, b"nowhere")
        a.expect_nothing()
        wait_until(lambda: drops(f, "parent") == 1, 5, "the drop to be counted")
    assert e.count() == 0
    f.wait_log(r"UDP can only go through a SOCKS5 parent")


def test_pool_lends_its_first_socks5_member(ferry, udp_server):
    e = udp_server()
    parent = ferry(raw_config=udp_config(extra=METRICS), listens=["127.0.0.1:0"])
    pools = (f"[outbound web]\nurl = http://127.0.0.1:9\n"
             f"[outbound pool]\nmembers = web, up\n")
    f = child(ferry, f"socks5h://127.0.0.1:{parent.port}", top={"outbound": "pool"}, extra=pools)
    with UdpAssoc(f.addr) as a:
        a.echo(e.addr, b"through the pool")
    wait_until(lambda: relayed(parent, "up") == 1, 5, "the parent to relay it")


# ---- limits ----------------------------------------------------------------------


def test_destinations_limit_counts_names_sent_to_the_parent(ferry, udp_server):
    e1, e2, e3 = udp_server(), udp_server(), udp_server()
    parent = ferry(raw_config=udp_config(extra=METRICS), listens=["127.0.0.1:0"])
    f = child(ferry, f"socks5h://127.0.0.1:{parent.port}", udp={"destinations": 2})
    with UdpAssoc(f.addr) as a:
        a.echo(("localhost", e1.port), b"one")
        a.echo(e2.addr, b"two")
        before = drops(f, "destinations")
        a.send(e3.addr, b"three")
        a.send(("localhost", e3.port), b"three by name")
        a.expect_nothing()
        assert drops(f, "destinations") == before + 2
        a.echo(("localhost", e1.port), b"one again")  # the known ones still go
    assert e3.count() == 0
    wait_until(lambda: relayed(parent, "up") == 3, 5, "the parent to relay the three")


def test_idle_names_sent_to_the_parent_are_forgotten(ferry, udp_server):
    e1, e2 = udp_server(), udp_server()
    parent = ferry(raw_config=udp_config(), listens=["127.0.0.1:0"])
    f = child(ferry, f"socks5h://127.0.0.1:{parent.port}", udp={"destinations": 1, "idle": "1s"})
    with UdpAssoc(f.addr) as a:
        a.echo(("localhost", e1.port), b"first")
        a.send(("localhost", e2.port), b"no room yet")
        a.expect_nothing()
        # Once the first is idle for udp.idle, its place is free again.
        deadline = time.monotonic() + 10
        while not e2.saw(b"later") and time.monotonic() < deadline:
            a.send(("localhost", e2.port), b"later")
            time.sleep(0.3)
        assert e2.saw(b"later")
        assert not e2.saw(b"no room yet")


# ---- the parent goes away ----------------------------------------------------------


def test_parent_going_away_ends_the_association(ferry, udp_server):
    e = udp_server()
    parent = ferry(raw_config=udp_config(), listens=["127.0.0.1:0"])
    f = child(ferry, f"socks5h://127.0.0.1:{parent.port}")
    a = UdpAssoc(f.addr)
    try:
        a.echo(e.addr, b"before")
        parent.expect_exit = -signal.SIGKILL
        parent.kill()
        _, how = read_until_close(a.ctl, timeout=10)
        assert how in ("eof", "reset")
    finally:
        a.close()
    f.wait_log(r"outbound up .*the association ends")
    # The child goes on: a new association gets its reply (and fails on
    # the first datagram, its parent being gone).
    with UdpAssoc(f.addr) as b:
        b.send(e.addr, b"after")
        read_until_close(b.ctl, timeout=10)
    assert f.alive()


def test_silent_parent_queue_bound_and_timeout(ferry):
    """A parent that accepts the connection and never answers: datagrams
    wait within udp.queue (the rest are dropped and counted), then
    connect_timeout ends the association and drops what waited."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # never accepted: the handshake gets no answer
    try:
        f = child(ferry, f"socks5://127.0.0.1:{silent.getsockname()[1]}",
                  top={"connect_timeout": "1s"}, udp={"queue": 8})
        q0, p0 = drops(f, "queue"), drops(f, "parent")
        with UdpAssoc(f.addr) as a:
            for i in range(20):
                a.send(("127.0.0.1", 5), b"waiting %d" % i)
            wait_until(lambda: drops(f, "queue") == q0 + 12, 5, "12 queue drops")
            read_until_close(a.ctl, timeout=10)
        assert drops(f, "parent") == p0 + 8
        f.wait_log(r"no answer within connect_timeout; the association ends")
        # A client that leaves while its parent association opens.
        with UdpAssoc(f.addr) as a:
            a.send(("127.0.0.1", 5), b"and gone")
            wait_until(lambda: drops(f, "queue") == q0 + 12, 5, "nothing more dropped")
        time.sleep(0.2)
        assert f.alive()
    finally:
        silent.close()


def test_parent_closing_or_refusing(ferry, recording_parent):
    rp = recording_parent()
    f = child(ferry, f"socks5://127.0.0.1:{rp.port}")
    with UdpAssoc(f.addr) as a:
        a.echo(("127.0.0.1", 5), b"hello")
        rp.close_controls()
        read_until_close(a.ctl, timeout=10)
    refusing = recording_parent(rep=7)
    g = child(ferry, f"socks5://127.0.0.1:{refusing.port}")
    with UdpAssoc(g.addr) as a:
        a.send(("127.0.0.1", 5), b"refused")
        read_until_close(a.ctl, timeout=10)
    g.wait_log(r"outbound up \(parent 127\.0\.0\.1 port \d+\): .*; the association ends")
    strict = recording_parent(auth=("udpuser", "right"))
    h = child(ferry, f"socks5://udpuser:wrong@127.0.0.1:{strict.port}")
    with UdpAssoc(h.addr) as a:
        a.send(("127.0.0.1", 5), b"bad credentials")
        read_until_close(a.ctl, timeout=10)
    h.wait_log(r"outbound up \(parent .*\): .*credentials.*; the association ends")
    assert f.alive() and g.alive() and h.alive()
