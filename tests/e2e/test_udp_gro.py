# SPDX-License-Identifier: BSD-2-Clause
"""UDP receive offload (udp.gro): every UDP socket of an association asks
for UDP_GRO, so the kernel may hand ferry a run of equal-size datagrams
from one sender as ONE receive (a control message gives the segment size).
On loopback that happens exactly when the sender used UDP_SEGMENT, which
these tests do: one sendmsg() carries a whole run. ferry must split such a
receive and treat every segment as if it had arrived alone:

  client -> ferry   each segment is its own SOCKS5 UDP datagram: parsed,
                    checked (FRAG, RSV, ATYP, source, udp.max_datagram
                    with its header) and relayed alone, whole, in order
  destination -> ferry   each segment is one reply, wrapped alone in the
                    header naming its source; each is checked against
                    udp.max_datagram on its own
  counters          ferry_udp_datagrams_total / _bytes_total / _dropped_total
                    move per segment, not per receive

Every relaying test runs with udp.gro = yes and no (the kernel then splits
the runs itself): what is observed must be the same. A module fixture first
proves that this kernel does deliver a run as one receive to a UDP_GRO
socket on loopback (else the yes case would prove nothing) and skips the
module where UDP_SEGMENT or UDP_GRO is missing.

Ends of runs are checked without sleeping: after a run, one ordinary
datagram follows on the same path as a marker, and the receiver must see
exactly the expected datagrams and then the marker (one sender, one
receiver: loopback keeps their order). An expected datagram is waited for
up to REPLY_TIMEOUT; counters are polled (bounded) until they reach their
exact deltas."""

import signal
import socket
import struct
import sys
import time

import pytest

from ferrylib import ATYP_V4, ATYP_V6, HAVE_IPV6, family_of, run_ferry
from opslib import metrics_addr
from udplib import (
    REPLY_TIMEOUT,
    UdpAssoc,
    UdpCounters,
    UdpEcho,
    UdpMsg,
    flood_while_pinging,
    encode_udp,
    parse_udp,
    payload,
    stop_process,
    udp_config,
)

SOL_UDP = 17  # IPPROTO_UDP
UDP_SEGMENT = 103  # sendmsg: cut the buffer into datagrams of this size
UDP_GRO = 104  # setsockopt: accept runs as one receive (recvmsg tells the size)

METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"

need_v6 = pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback (::1) on this host")
both_gro = pytest.mark.parametrize("gro", ["yes", "no"])


# ---- helpers ---------------------------------------------------------------------


def send_run(sock: socket.socket, datagrams: list, addr) -> None:
    """Send datagrams in ONE sendmsg() with UDP_SEGMENT: all must have the
    size of the first except the last, which may be shorter (not empty)."""
    seg = len(datagrams[0])
    assert seg > 0 and all(len(d) == seg for d in datagrams[:-1]), [len(d) for d in datagrams]
    assert 0 < len(datagrams[-1]) <= seg, [len(d) for d in datagrams]
    buf = b"".join(datagrams)
    n = sock.sendmsg([buf], [(SOL_UDP, UDP_SEGMENT, struct.pack("H", seg))], 0, addr)
    assert n == len(buf), f"sendmsg sent {n} of {len(buf)} bytes"


def recv_from(sock: socket.socket, n: int, timeout: float = REPLY_TIMEOUT) -> list:
    """Up to n datagrams as (data, source), waiting at most timeout for the
    lot (fewer when they stop coming)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(65536)
        except socket.timeout:
            break
        got.append((data, (src[0], src[1])))
    return got


def recv_msgs(a: UdpAssoc, n: int, timeout: float = REPLY_TIMEOUT) -> list:
    """Up to n datagrams from the relay, parsed (each header checked by
    parse_udp)."""
    return [parse_udp(d) for d, _ in recv_from(a.udp, n, timeout)]


def _show(ps: list) -> str:
    """Each payload as its tag (the printable start payload() gives it) and
    length: r3-7-:120."""
    out = []
    for p in ps:
        n = 0
        while n < min(len(p), 16) and 0x20 <= p[n] < 0x7F:
            n += 1
        out.append(f"{p[:n].decode()}:{len(p)}")
    return " ".join(out)


def same(got: list, want: list, what: str) -> None:
    """got == want (payloads); else an error listing both by tag and size."""
    if got != want:
        raise AssertionError(f"{what}:\n got  {len(got)}: {_show(got)}\n want {len(want)}: {_show(want)}")


def run_of(dest, tag: str, size: int, count: int, last: int | None = None) -> tuple:
    """count SOCKS datagrams to dest, payloads of size bytes (the last one
    of `last` bytes when given). Returns (datagrams, payloads)."""
    sizes = [size] * count
    if last is not None:
        sizes[-1] = last
    ps = [payload(f"{tag}{i}-", n) for i, n in enumerate(sizes)]
    return [encode_udp(dest[0], dest[1], p) for p in ps], ps


def addr_of(s: socket.socket) -> tuple:
    a = s.getsockname()
    return (a[0], a[1])


def start(ferry, gro: str, udp: dict | None = None, listens=("127.0.0.1:0",), extra: str = ""):
    """ferry with udp.gro = gro (and udp's other [udp] keys), one worker."""
    return ferry(raw_config=udp_config({"gro": gro, **(udp or {})}, {"workers": "1"}, extra),
                 listens=list(listens))


@pytest.fixture
def dest():
    """dest(host="127.0.0.1") -> a bound UDP socket (1 MiB receive buffer)
    standing for a destination; closed after the test."""
    made = []

    def make(host: str = "127.0.0.1") -> socket.socket:
        s = socket.socket(family_of(host), socket.SOCK_DGRAM)
        made.append(s)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind((host, 0))
        return s

    yield make
    for s in made:
        s.close()


def hello(a: UdpAssoc, d: socket.socket, data: bytes = b"hello") -> tuple:
    """An ordinary datagram from the client to d; returns the address it
    came from at d: ferry's outgoing socket for d's family."""
    a.send(addr_of(d), data)
    got = recv_from(d, 1)
    assert got and got[0][0] == data, f"{addr_of(d)} got {got} instead of {data!r}"
    return got[0][1]


def expect_at(d: socket.socket, want: list, what: str, source=None) -> tuple:
    """d receives exactly the payloads want (the run's, then its marker),
    all from one source (source, when given). Returns that source."""
    got = recv_from(d, len(want))
    same([x for x, _ in got], want, f"{what} at {addr_of(d)}")
    sources = {s for _, s in got}
    assert len(sources) == 1, f"{what}: from several sources {sources}"
    if source is not None:
        assert sources == {source}, f"{what}: from {sources}, expected {source}"
    return next(iter(sources))


def expect_replies(a: UdpAssoc, want: list, frm: tuple, what: str) -> None:
    """The client receives exactly the payloads want, each alone, with a
    header naming frm (host, port) in its own family."""
    msgs = recv_msgs(a, len(want))
    same([m.payload for m in msgs], want, what)
    atyp, hlen = (ATYP_V6, 22) if ":" in frm[0] else (ATYP_V4, 10)
    for m in msgs:
        assert (m.atyp, m.host, m.port) == (atyp, frm[0], frm[1]), f"{what}: header {m.raw[:hlen]!r}"
        assert len(m.raw) == hlen + len(m.payload)


def echo_through(a: UdpAssoc, d: socket.socket, tag: str) -> UdpMsg:
    """A normal round trip through d: the association still works."""
    out = hello(a, d, f"{tag}-ping".encode())
    d.sendto(f"{tag}-pong".encode(), out)
    m = a.wait_for(lambda m: m.payload == f"{tag}-pong".encode(), what=f"{tag}-pong")
    assert (m.host, m.port) == addr_of(d)
    return m


class Counters(UdpCounters):
    """UdpCounters plus the drop reasons these tests provoke."""

    NAMES = {
        **UdpCounters.NAMES,
        **{f"dropped_{r}": ("ferry_udp_dropped_total", {"reason": r})
           for r in ("fragment", "malformed", "size", "source", "unknown_source")},
    }


def _receives(s: socket.socket) -> list:
    """(length, [(level, type, value)]) of each receive on s, until none
    comes for a moment (bounded)."""
    out = []
    s.settimeout(REPLY_TIMEOUT)
    for _ in range(100):
        try:
            data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
        except socket.timeout:
            break
        out.append((len(data), [(lv, t, int.from_bytes(v, sys.byteorder)) for lv, t, v in anc]))
        s.settimeout(0.2)
    return out


@pytest.fixture(scope="module", autouse=True)
def loopback_merges_runs():
    """This kernel sends a UDP_SEGMENT run over loopback, hands it to a
    UDP_GRO socket as one receive with its segment size, and splits it for
    a socket without UDP_GRO: else these tests could not tell anything."""
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    try:
        for s in rx:
            s.bind(("127.0.0.1", 0))
        run = [bytes([i]) * 100 for i in range(5)] + [b"z" * 30]
        try:
            rx[0].setsockopt(SOL_UDP, UDP_GRO, 1)
            for s in rx:
                send_run(tx, run, addr_of(s))
        except OSError as e:
            pytest.skip(f"UDP_SEGMENT or UDP_GRO not available here: {e}")
        merged, split = _receives(rx[0]), _receives(rx[1])
        if merged != [(530, [(SOL_UDP, UDP_GRO, 100)])]:
            pytest.skip(f"this kernel does not hand a UDP_SEGMENT run over loopback to a "
                        f"UDP_GRO socket as one receive: {merged}")
        assert split == [(100, [])] * 5 + [(30, [])], f"a run reached a plain socket as {split}"
    finally:
        for s in [tx, *rx]:
            s.close()


@pytest.fixture(scope="module")
def most_segments(loopback_merges_runs) -> int:
    """The most datagrams this kernel sends in one UDP_SEGMENT message: 128
    since Linux 6.9 (more than ferry stages for one send), 64 before."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
        rx.bind(("127.0.0.1", 0))
        try:
            send_run(tx, [b"x" * 8] * 128, addr_of(rx))
            return 128
        except OSError:
            return 64


# ---- client -> ferry: runs of SOCKS datagrams -------------------------------------


@both_gro
def test_client_run_split_into_datagrams(ferry, dest, gro, most_segments):
    """Runs from the client, each in one sendmsg: 12 x (10-byte header +
    1000) as the association's very first datagrams (the first segment fixes
    the client's port), then runs ending in a shorter segment, in a bare
    header (an empty datagram), and of as many short segments as the kernel
    allows (128: more than ferry stages for one send; 64 on older kernels).
    The destination gets every payload alone, whole and in order, all from
    one outgoing socket."""
    f = start(ferry, gro)
    d = dest()
    with UdpAssoc(f.addr) as a:
        want = []
        first, ps = run_of(addr_of(d), "first-", 1000, 12)
        send_run(a.udp, first, a.relay)
        want += ps
        shorter, ps = run_of(addr_of(d), "short-tail-", 1000, 12, last=333)
        send_run(a.udp, shorter, a.relay)
        want += ps
        bare, ps = run_of(addr_of(d), "bare-", 200, 6, last=0)
        send_run(a.udp, bare, a.relay)
        want += ps
        many, ps = run_of(addr_of(d), "many-", 40, most_segments, last=7)
        send_run(a.udp, many, a.relay)
        want += ps
        a.send(addr_of(d), b"end")
        src = expect_at(d, want + [b"end"], "client runs")
        # The replies' path works too (and names d).
        d.sendto(b"back", src)
        m = a.recv()
        assert (m.payload, m.atyp, m.host, m.port) == (b"back", ATYP_V4, *addr_of(d))


@both_gro
def test_client_run_to_alternating_destinations(ferry, dest, gro):
    """One run alternates between two destinations on 127.0.0.1 (equal
    10-byte headers), another between the same two named "localhost"
    (16-byte headers): each destination gets its own payloads, in order,
    and nothing of the other's."""
    f = start(ferry, gro)
    d1, d2 = dest(), dest()
    with UdpAssoc(f.addr) as a:
        src = hello(a, d1)
        assert hello(a, d2) == src
        datagrams, want1, want2 = [], [], []
        for i in range(16):
            d = d1 if i % 2 == 0 else d2
            p = payload(f"alt-{i}-", 900)
            datagrams.append(encode_udp(*addr_of(d), p))
            (want1 if d is d1 else want2).append(p)
        send_run(a.udp, datagrams, a.relay)
        datagrams = []
        for i in range(10):
            d = d1 if i % 2 == 0 else d2
            p = payload(f"name-{i}-", 500 if i < 9 else 99)
            datagrams.append(encode_udp("localhost", addr_of(d)[1], p))
            (want1 if d is d1 else want2).append(p)
        assert len(datagrams[0]) == 16 + 500
        send_run(a.udp, datagrams, a.relay)
        a.send(addr_of(d1), b"end-1")
        a.send(addr_of(d2), b"end-2")
        expect_at(d1, want1 + [b"end-1"], "alternating run", source=src)
        expect_at(d2, want2 + [b"end-2"], "alternating run", source=src)


@need_v6
@both_gro
def test_client_run_ipv6(ferry, dest, gro):
    """Runs with 22-byte IPv6 headers: from an IPv4 client to ::1, and from
    an IPv6 client to ::1 and (10-byte headers) to 127.0.0.1; each
    destination sees its payloads alone and in order."""
    f = start(ferry, gro, listens=("127.0.0.1:0", "[::1]:0"))
    v4, v6 = f.listener(socket.AF_INET).addr, f.listener(socket.AF_INET6).addr
    d6, d4 = dest("::1"), dest()
    with UdpAssoc(v4) as a:
        run, want = run_of(addr_of(d6), "four-to-six-", 1200, 20, last=17)
        assert len(run[0]) == 22 + 1200
        send_run(a.udp, run, a.relay)
        a.send(addr_of(d6), b"end-a")
        expect_at(d6, want + [b"end-a"], "IPv4 client, IPv6 run")
    with UdpAssoc(v6) as b:
        assert family_of(b.udp_addr[0]) == socket.AF_INET6
        run6, want6 = run_of(addr_of(d6), "six-", 1000, 12, last=500)
        send_run(b.udp, run6, b.relay)
        run4, want4 = run_of(addr_of(d4), "six-to-four-", 1000, 12)
        send_run(b.udp, run4, b.relay)
        b.send(addr_of(d6), b"end-6")
        b.send(addr_of(d4), b"end-4")
        src6 = expect_at(d6, want6 + [b"end-6"], "IPv6 client, IPv6 run")
        src4 = expect_at(d4, want4 + [b"end-4"], "IPv6 client, IPv4 run")
        # And back, to the IPv6 client, from both families.
        d6.sendto(b"back-6", src6)
        d4.sendto(b"back-4", src4)
        got = {(m.payload, m.atyp, m.host, m.port) for m in recv_msgs(b, 2)}
        assert got == {(b"back-6", ATYP_V6, *addr_of(d6)), (b"back-4", ATYP_V4, *addr_of(d4))}


@both_gro
def test_runs_read_in_one_batch(ferry, dest, gro):
    """ferry is paused (SIGSTOP) while 34 runs of 16 datagrams (more runs
    than one batch of receives, 544 datagrams in all), of sizes that change
    from run to run, each followed by a single datagram of another size, to
    two destinations, are sent; then, paused again, both destinations
    answer with the same runs and singles. Every datagram arrives, alone
    and whole, in order per destination, both ways."""
    f = start(ferry, gro)
    d1, d2 = dest(), dest()
    with UdpAssoc(f.addr) as a:
        out = hello(a, d1)
        assert hello(a, d2) == out
        plan = {d1: [], d2: []}
        runs = []  # (destination, its run, the single after it)
        for r in range(34):
            d = d1 if r % 2 == 0 else d2
            run, ps = run_of(addr_of(d), f"r{r}-", 40 + r * 8, 16, last=(5 if r % 3 == 0 else None))
            single = payload(f"s{r}-", 30 + r * 8)
            runs.append((d, ps, single))
            plan[d] += ps + [single]
        stop_process(f.proc.pid)
        try:
            for d, ps, single in runs:
                send_run(a.udp, [encode_udp(*addr_of(d), p) for p in ps], a.relay)
                a.send(addr_of(d), single)
        finally:
            f.proc.send_signal(signal.SIGCONT)
        a.send(addr_of(d1), b"end-1")
        a.send(addr_of(d2), b"end-2")
        expect_at(d1, plan[d1] + [b"end-1"], "batched runs", source=out)
        expect_at(d2, plan[d2] + [b"end-2"], "batched runs", source=out)
        # Back: the same runs and singles, as bare payloads, from each
        # destination.
        stop_process(f.proc.pid)
        try:
            for d, ps, single in runs:
                send_run(d, ps, out)
                d.sendto(single, out)
        finally:
            f.proc.send_signal(signal.SIGCONT)
        msgs = recv_msgs(a, len(plan[d1]) + len(plan[d2]))
        for d in (d1, d2):
            mine = [m.payload for m in msgs if (m.host, m.port) == addr_of(d)]
            same(mine, plan[d], f"batched reply runs from {addr_of(d)}")
        assert len(msgs) == len(plan[d1]) + len(plan[d2])


# ---- client -> ferry: what is dropped, per segment ---------------------------------


@both_gro
def test_bad_segments_dropped_alone(ferry, dest, gro):
    """In a run that is the association's first traffic, segment 0 has
    FRAG = 1 (so segment 1 fixes the client's port), segment 5 RSV = 1 and
    segment 9 ATYP 5 (both malformed, same length): exactly those three
    are dropped and counted (fragment +1, malformed +2), the other nine
    relayed in order. A run from another port of the client's IP is
    dropped whole, one "source" drop per segment; the datagram counter
    moves by the relayed segments only."""
    f = start(ferry, gro, extra=METRICS)
    c = Counters(metrics_addr(f))
    d = dest()
    with UdpAssoc(f.addr) as a:
        run, ps = run_of(addr_of(d), "seg-", 700, 12)
        run[0] = encode_udp(*addr_of(d), ps[0], frag=1)
        run[5] = encode_udp(*addr_of(d), ps[5], rsv=b"\x00\x01")
        run[9] = b"\x00\x00\x00\x05" + run[9][4:]
        assert len({len(x) for x in run}) == 1
        send_run(a.udp, run, a.relay)
        want = [p for i, p in enumerate(ps) if i not in (0, 5, 9)]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
            other.bind(("127.0.0.1", 0))
            stray, _ = run_of(addr_of(d), "other-port-", 300, 7, last=100)
            send_run(other, stray, a.relay)
            a.send(addr_of(d), b"end")
            expect_at(d, want + [b"end"], "run with bad segments")
        c.wait_for({"dropped_fragment": 1, "dropped_malformed": 2, "dropped_source": 7,
                    "dropped_size": 0, "datagrams_up": 10, "bytes_up": 9 * 700 + 3})
        echo_through(a, d, "after-bad")


@both_gro
def test_size_limit_applies_per_segment(ferry, dest, gro):
    """udp.max_datagram = 600 (header included) holds for each segment,
    not for the receive: 12 segments of exactly 600 bytes all pass (7,200
    in one receive); 12 of 601 are all dropped (size +12); 8 of 601 ending
    in one of 600 lose the 8 and deliver the last. The association works
    afterwards."""
    f = start(ferry, gro, udp={"max_datagram": 600}, extra=METRICS)
    c = Counters(metrics_addr(f))
    d = dest()
    with UdpAssoc(f.addr) as a:
        fits, want = run_of(addr_of(d), "fits-", 590, 12)
        assert len(fits[0]) == 600
        send_run(a.udp, fits, a.relay)
        over, _ = run_of(addr_of(d), "over-", 591, 12)
        assert len(over[0]) == 601
        send_run(a.udp, over, a.relay)
        tail, tail_ps = run_of(addr_of(d), "tail-", 591, 9, last=590)
        send_run(a.udp, tail, a.relay)
        a.send(addr_of(d), b"end")
        expect_at(d, want + [tail_ps[-1], b"end"], "runs at the size limit")
        c.wait_for({"dropped_size": 20, "dropped_malformed": 0, "datagrams_up": 14})
        m = echo_through(a, d, "after-size")
        assert len(m.raw) == 10 + len(b"after-size-pong")


# ---- destination -> ferry: runs of replies -----------------------------------------


@both_gro
def test_reply_run_split_into_datagrams(ferry, dest, gro, most_segments):
    """A destination answers ferry's outgoing socket with one sendmsg of
    20 x 1200 bytes and a 333-byte last one: the client receives 21
    datagrams, each alone with a header naming the destination, payloads
    exact and in order. The same for a run of as many segments as the
    kernel allows (128, or 64), from a second port of a known host (its own
    port in the header), and from an IPv6 destination (22-byte headers)."""
    f = start(ferry, gro)
    d, other = dest(), dest()
    d6 = dest("::1") if HAVE_IPV6 else None
    with UdpAssoc(f.addr) as a:
        out = hello(a, d)
        ps = [payload(f"reply-{i}-", 1200 if i < 20 else 333) for i in range(21)]
        send_run(d, ps, out)
        d.sendto(b"end", out)
        expect_replies(a, ps + [b"end"], addr_of(d), "IPv4 reply run")
        ps = [payload(f"long-{i}-", 400 if i < most_segments - 1 else 20) for i in range(most_segments)]
        send_run(d, ps, out)
        d.sendto(b"end-long", out)
        expect_replies(a, ps + [b"end-long"], addr_of(d), "long reply run")
        ps = [payload(f"other-port-{i}-", 100 if i < 5 else 1) for i in range(6)]
        send_run(other, ps, out)  # 127.0.0.1 is known: another port may answer
        other.sendto(b"end-other", out)
        expect_replies(a, ps + [b"end-other"], addr_of(other), "reply run from another port")
        if d6:
            out6 = hello(a, d6)
            ps = [payload(f"reply6-{i}-", 1000 if i < 30 else 999) for i in range(31)]
            send_run(d6, ps, out6)
            d6.sendto(b"end-6", out6)
            expect_replies(a, ps + [b"end-6"], addr_of(d6), "IPv6 reply run")


@both_gro
def test_reply_runs_dropped_per_segment(ferry, dest, gro):
    """udp.max_datagram = 1000: a reply run of 20 x 991 bytes (1,001 with
    the header) ending in one of 990 (exactly 1,000) loses the 20, counted
    as size, and delivers the last; a run of 10 x 1100 ending in 995
    (1,005 with the header) is dropped whole (size +11). A run from a host
    never sent to (127.0.0.2) is dropped whole, one unknown_source drop per
    segment. Afterwards a small reply passes; the down counter moved by the
    delivered segments only."""
    f = start(ferry, gro, udp={"max_datagram": 1000}, extra=METRICS)
    c = Counters(metrics_addr(f))
    d = dest()
    with UdpAssoc(f.addr) as a:
        out = hello(a, d)
        ps = [payload(f"big-{i}-", 991 if i < 20 else 990) for i in range(21)]
        send_run(d, ps, out)
        ps2 = [payload(f"bigger-{i}-", 1100 if i < 10 else 995) for i in range(11)]
        send_run(d, ps2, out)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
            stranger.bind(("127.0.0.2", 0))
            send_run(stranger, [payload(f"stranger-{i}-", 50) for i in range(6)], out)
        d.sendto(b"small", out)
        expect_replies(a, [ps[-1], b"small"], addr_of(d), "reply runs at the size limit")
        c.wait_for({"dropped_size": 31, "dropped_unknown_source": 6,
                    "datagrams_down": 2, "bytes_down": 990 + 5})
        echo_through(a, d, "after-reply-drops")


# ---- counters ------------------------------------------------------------------------


@both_gro
def test_counters_count_segments(ferry, dest, gro):
    """ferry_udp_datagrams_total moves by the number of segments relayed
    each way (not by receives), ferry_udp_bytes_total by their payloads."""
    f = start(ferry, gro, extra=METRICS)
    c = Counters(metrics_addr(f))
    d = dest()
    with UdpAssoc(f.addr) as a:
        out = hello(a, d, b"hi")  # 1 up, 2 bytes
        run, ps = run_of(addr_of(d), "count-", 1000, 12, last=7)
        send_run(a.udp, run, a.relay)  # 12 up
        run2, ps2 = run_of(addr_of(d), "count2-", 64, 40)
        send_run(a.udp, run2, a.relay)  # 40 up
        expect_at(d, ps + ps2, "counted runs", source=out)
        c.wait_for({"datagrams_up": 53, "bytes_up": 2 + 11 * 1000 + 7 + 40 * 64,
                    "datagrams_down": 0, "bytes_down": 0})
        back = [payload(f"down-{i}-", 1200 if i < 20 else 333) for i in range(21)]
        send_run(d, back, out)  # 21 down
        expect_replies(a, back, addr_of(d), "counted reply run")
        c.wait_for({"datagrams_up": 53, "datagrams_down": 21, "bytes_down": 20 * 1200 + 333,
                    "dropped_size": 0, "dropped_malformed": 0})


# ---- overload --------------------------------------------------------------------------


def test_flood_of_runs_does_not_starve_other_association(ferry, dest, most_segments):
    """One worker, udp.gro on. One association floods with runs of as many
    segments as the kernel allows (each read whole by ferry: up to 32 reads
    of 64 or 128 datagrams per batch), unpaced, at least 40,000 datagrams
    and at least 1.5 s; another, unrelated association keeps pinging and
    must get answers while the flood runs, not only after it. A coalesced
    run counts as the datagrams it holds against the work one wake-up may
    do. Afterwards the flooded association still works."""
    f = start(ferry, "yes")
    sink = dest()
    ping_target = UdpEcho()
    try:
        with UdpAssoc(f.addr) as flood, UdpAssoc(f.addr) as calm:
            hello(flood, sink, b"warm-flood")
            calm.echo(ping_target.addr, b"warm-calm")
            run, _ = run_of(addr_of(sink), "F", 200, most_segments)
            flood.udp.setblocking(False)

            def send_one_run():
                send_run(flood.udp, run, flood.relay)
                return len(run)

            sent, during, tries = flood_while_pinging(send_one_run, calm, ping_target.addr,
                                                      at_least=40000)
            assert sent >= 40000, f"only {sent} flood datagrams sent"
            print(f"run flood: sent {sent}, pings answered during it {during}/{tries}")
            # Starved, the pinger would time out (0.5 s) on nearly every try.
            assert during >= 10 and during >= tries // 2, (
                f"only {during} of {tries} pings answered while the flood ran"
            )
            got = recv_from(sink, 1000, timeout=2)
            assert len(got) >= 1000, f"the flood barely reached its destination ({len(got)})"
            # Recovery: drain what is left, then both associations still echo.
            while recv_from(sink, 10000, timeout=0.3):
                pass
            flood.drain()
            echo_through(flood, sink, "after-flood")
            calm.echo(ping_target.addr, b"calm-after")
    finally:
        ping_target.stop()


# ---- configuration -------------------------------------------------------------------


def test_gro_bad_value_is_an_error(tmp_path):
    """udp.gro takes a boolean: `maybe` is an error (exit 1, FILE:LINE,
    the key, the same words as every boolean key), and ferry refuses to
    serve with it; yes and no are accepted."""
    for value in ("yes", "no"):
        good = tmp_path / f"gro-{value}.conf"
        good.write_text(udp_config({"gro": value}))
        r = run_ferry(["serve", "--check", "-c", str(good)])
        assert r.rc == 0, r.text
        assert f"{good}: configuration OK" in r.out, r.text
    text = udp_config({"gro": "maybe"})
    path = tmp_path / "gro-maybe.conf"
    path.write_text(text)
    line = len(text.splitlines())  # the [udp] key is the last line
    r = run_ferry(["serve", "--check", "-c", str(path)])
    assert r.rc == 1, r.text
    assert f"{path}:{line}: udp.gro: 'maybe' is not a boolean (expected yes or no)" in r.err, r.text
    assert "configuration OK" not in r.text
    assert "warning" not in r.text, r.text
    r = run_ferry(["serve", "-c", str(path), "-l", "127.0.0.1:0"], timeout=10)
    assert r.rc == 1, r.text
    assert f"{path}:{line}: udp.gro: " in r.err, r.text
    assert "listening on" not in r.text
