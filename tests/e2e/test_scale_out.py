# SPDX-License-Identifier: BSD-2-Clause
"""More than one machine (docs/operations.md): two ferry nodes behind one
HAProxy in TCP mode with send-proxy-v2 and health checks on /healthz (the
configuration is contrib/haproxy/haproxy.cfg with loopback ports picked at
run time).

- Clients see one address; each node logs the real client address (the
  clients connect from 127.0.0.2, 127.0.0.3 and 127.0.1.x, HAProxy from
  127.0.0.1) and applies limits.per_ip to it, per node: per_ip = 2 on each
  of two nodes holds four sessions of one client address.
- Draining one node (SIGTERM) while 200 clients hold sessions: /healthz
  says 503, HAProxy takes the node out, new clients go to the other node,
  and every session that had started finishes on the node that holds it.

The drain test holds 200 sessions (one thread each, every wait bounded):
it takes a few seconds, more on a loaded machine.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ferrylib import REPO_ROOT, echo_roundtrip, open_client, read_reply, read_until_close, request, run_ferry
from haproxylib import haproxy, need_haproxy, server_states
from opslib import http_get, metrics_addr, scrape, wait_until
from policylib import make_userlist

PER_IP = 2
CLIENTS = 200
LATE_CLIENTS = 20

EXAMPLE = REPO_ROOT / "contrib/haproxy/haproxy.cfg"
COMMENT_RE = re.compile(r"^#.*\n", re.M)  # the example's own addresses are in its comments too


def haproxy_config(sock: Path, fe: int, nodes) -> str:
    """contrib/haproxy/haproxy.cfg, the documented example, made to run
    here: loopback ports, a private stats socket, no syslog, faster health
    checks, and the nodes of this test as its servers."""
    text = COMMENT_RE.sub("", EXAMPLE.read_text())
    subs = [
        (r"^\s*log /dev/log.*\n", ""),
        (r"\bmaxconn \d+", "maxconn 2000"),
        (r"\bstats socket \S+", f"stats socket {sock}"),
        (r"\bbind :1080\b", f"bind 127.0.0.1:{fe}"),
        (r"\bcheck port 9090 inter \S+ fall \d+ rise \d+", "check inter 200ms fall 1 rise 1"),
        (r"^\s*server node\d.*\n", ""),
    ]
    for pattern, repl in subs:
        text, n = re.subn(pattern, repl, text, flags=re.M)
        assert n, f"{EXAMPLE} no longer has {pattern!r}"
    assert "send-proxy-v2" in text and "option httpchk GET /healthz" in text, text
    servers = "".join(f"    server node{i + 1} 127.0.0.1:{n.port} port {n.maddr[1]}\n" for i, n in enumerate(nodes))
    return text.rstrip("\n") + "\n" + servers


def start_node(ferry):
    f = ferry(
        config={"listen": "127.0.0.1:0 proxy_protocol=v2", "proxy_protocol_from": "127.0.0.1",
                "access_log": "yes", "shutdown_timeout": "60s"},
        listens=(),
        extra=f"[limits]\nper_ip = {PER_IP}\n\n[metrics]\nlisten = 127.0.0.1:0\n",
    )
    f.maddr = metrics_addr(f)
    return f


@pytest.fixture
def cluster(ferry, tmp_path):
    nodes = [start_node(ferry), start_node(ferry)]
    sock = tmp_path / "haproxy.sock"

    with haproxy(tmp_path, lambda ports: haproxy_config(sock, ports[0], nodes)) as (_, ports):
        c = SimpleNamespace(front=("127.0.0.1", ports[0]), nodes=nodes, stats=sock)
        wait_until(lambda: set(server_states(sock, "ferry").values()) == {"UP"}, 15, "both nodes UP in HAProxy")
        yield c


def session(front, source: str, echo, timeout: float = 10.0) -> socket.socket | None:
    """A SOCKS5 CONNECT to echo through the balancer from source, with one
    echo round trip; None when the node closed it without a reply (per_ip)."""
    s = open_client(front, timeout=timeout, source=source)
    try:
        s.sendall(b"\x05\x01\x00")
        first = s.recv(2)
        if not first:
            s.close()
            return None
        assert first == b"\x05\x00", first
        s.sendall(request(*echo))
        r = read_reply(s, timeout)
        assert r.rep == 0, f"reply {r.rep:#x} for {source}"
        echo_roundtrip(s, b"hello from " + source.encode(), timeout)
    except ConnectionResetError:
        s.close()
        return None
    except BaseException:
        s.close()
        raise
    return s


def finish(s: socket.socket, timeout: float = 10.0):
    """Half-close and read the echo server's close: the session ends (and is
    logged) cleanly."""
    s.shutdown(socket.SHUT_WR)
    rest, how = read_until_close(s, timeout)
    s.close()
    assert rest == b"" and how == "eof", (rest[:64], how)


def clients_of(node, prefix: str) -> list[dict]:
    """The access entries of node whose client address starts with prefix."""
    return [e for e in node.access_entries() if e.get("client", "").startswith(prefix)]


def wait_access(nodes, prefix: str, n: int, timeout: float = 10.0):
    """Until the nodes together logged n sessions of clients under prefix."""
    try:
        wait_until(lambda: sum(len(clients_of(x, prefix)) for x in nodes) == n, timeout,
                   f"{n} access lines of {prefix}*")
    except AssertionError as e:
        raise AssertionError(f"{e}: {[clients_of(x, prefix) for x in nodes]}") from None


def test_nodes_see_and_limit_the_real_client(cluster, echo_server):
    n1, n2 = cluster.nodes
    held = []
    try:
        for _ in range(3 * PER_IP):  # bounded: one more than two nodes admit
            s = session(cluster.front, "127.0.0.2", echo_server.addr)
            if s is None:
                break
            held.append(s)
        # per_ip is per node: two nodes with per_ip = 2 hold four sessions
        # of 127.0.0.2 (HAProxy's own address is 127.0.0.1 for every one)
        assert len(held) == 2 * PER_IP, f"{len(held)} sessions of 127.0.0.2 admitted"
        others = [session(cluster.front, "127.0.0.3", echo_server.addr) for _ in range(2)]
        assert all(others), "127.0.0.3 refused while 127.0.0.2 is at its limit"
        held += others
    finally:
        for s in held:
            finish(s)
    # + the one refused at the limit, logged with end=limit
    wait_access((n1, n2), "127.0.0.", 2 * PER_IP + 2 + 1)
    for n in (n1, n2):
        served = [e for e in clients_of(n, "127.0.0.") if e["end"] != "limit"]
        assert [e["client"].split(":")[0] for e in served].count("127.0.0.2") == PER_IP, served
        assert [e["client"].split(":")[0] for e in served].count("127.0.0.3") == 1, served
        assert all(e["reply"] == "succeeded" for e in served), served
        assert not clients_of(n, "127.0.0.1:"), "a node logged HAProxy's address, not the client's"
    limited = [e for n in (n1, n2) for e in clients_of(n, "127.0.0.") if e["end"] == "limit"]
    assert len(limited) == 1 and limited[0]["client"].startswith("127.0.0.2:"), limited
    rejected = sum(scrape(n.maddr).get("ferry_connections_rejected_total", reason="per_ip") for n in (n1, n2))
    assert rejected == 1


class HeldClient(threading.Thread):
    """One client from its own address: a session and a round trip, then it
    waits for go and finishes with 64 KiB more through the same session."""

    def __init__(self, front, source: str, echo, started: threading.Semaphore, go: threading.Event):
        super().__init__(daemon=True)
        self.front, self.source, self.echo = front, source, echo
        self.started, self.go = started, go
        self.addr = None
        self.result = "not run"

    def run(self):
        try:
            s = session(self.front, self.source, self.echo, timeout=30)
            assert s is not None, "refused"
            with s:
                self.addr = s.getsockname()
                self.result = "held"
                self.started.release()
                assert self.go.wait(90), "never told to finish"
                echo_roundtrip(s, bytes(range(256)) * 256, timeout=30)
                finish(s, timeout=30)
            self.result = "ok"
        except BaseException as e:  # reported by the test
            self.result = f"{type(e).__name__}: {e}"
            self.started.release()


def test_draining_a_node_loses_no_session_and_new_clients_go_to_the_other(cluster, echo_server):
    n1, n2 = cluster.nodes
    started, go = threading.Semaphore(0), threading.Event()
    clients = [HeldClient(cluster.front, f"127.0.1.{i + 1}", echo_server.addr, started, go) for i in range(CLIENTS)]
    try:
        for c in clients:
            c.start()
        deadline = time.monotonic() + 90
        for _ in clients:
            assert started.acquire(timeout=max(0.1, deadline - time.monotonic())), "clients did not start in time"
        assert all(c.result == "held" for c in clients), [c.result for c in clients if c.result != "held"][:5]
        active = [scrape(n.maddr).total("ferry_sessions_active") for n in (n1, n2)]
        assert sum(active) == CLIENTS and min(active) > 0, active

        n1.send_signal(signal.SIGTERM)
        wait_until(lambda: http_get(n1.maddr, "/healthz").status == 503, 10, "node1 /healthz 503 (draining)")
        wait_until(lambda: server_states(cluster.stats, "ferry")["node1"].startswith("DOWN"), 15,
                   "HAProxy took node1 out")
        for i in range(LATE_CLIENTS):
            s = session(cluster.front, f"127.0.2.{i + 1}", echo_server.addr)
            assert s is not None, f"late client {i} refused"
            finish(s)
        assert n1.alive(), "node1 exited while its sessions were open"
    finally:
        go.set()
        for c in clients:
            c.join(60)
    failed = [(c.source, c.result) for c in clients if c.result != "ok"]
    assert not failed, f"{len(failed)} of {CLIENTS} sessions lost: {failed[:5]}"
    assert n1.wait(30) == 0, "node1 did not finish its drain"

    on1, on2 = clients_of(n1, "127.0.1."), clients_of(n2, "127.0.1.")
    logged = sorted(e["client"] for e in on1 + on2)
    assert logged == sorted(f"{c.addr[0]}:{c.addr[1]}" for c in clients), "each session logged once, by its node"
    assert on1 and on2 and all(e["reply"] == "succeeded" for e in on1 + on2)
    wait_access((n2,), "127.0.2.", LATE_CLIENTS)
    assert not clients_of(n1, "127.0.2."), "a client that came after the drain began went to the draining node"


# ---- the example files ---------------------------------------------------------------


def test_example_haproxy_config_is_valid():
    r = subprocess.run([need_haproxy(), "-c", "-f", str(EXAMPLE)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr


def test_kubernetes_manifest_agrees_with_itself_and_the_image(tmp_path):
    """contrib/kubernetes/ferry.yaml: its ferry.conf passes --check; the
    probes, ports, grace period, user and selectors agree with it, with
    the Dockerfile and with each other."""
    yaml = pytest.importorskip("yaml", reason="python3-yaml (TEST_PKGS) is not installed")
    docs = {d["kind"]: d for d in yaml.safe_load_all((REPO_ROOT / "contrib/kubernetes/ferry.yaml").read_text()) if d}
    assert set(docs) == {"ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}, set(docs)
    conf = docs["ConfigMap"]["data"]["ferry.conf"]
    users = make_userlist(tmp_path / "users", {"alice": "secret"})
    (tmp_path / "ferry.conf").write_text(conf.replace("/etc/ferry/users", str(users)))
    r = run_ferry(["serve", "--check", "-c", str(tmp_path / "ferry.conf")])
    assert r.rc == 0, r.text
    listen_port = int(re.search(r"^listen = \S+:(\d+)$", conf, re.M).group(1))
    metrics_port = int(re.search(r"^\[metrics\]\n(?:#.*\n)*listen = \S+:(\d+)$", conf, re.M).group(1))
    shutdown = int(re.search(r"^shutdown_timeout = (\d+)s$", conf, re.M).group(1))

    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"proxy": listen_port, "metrics": metrics_port}, ports
    assert c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    pre_stop = int(c["lifecycle"]["preStop"]["exec"]["command"][-1])
    assert pod["terminationGracePeriodSeconds"] > shutdown + pre_stop, "the drain would be cut short by SIGKILL"
    user = re.search(r"^USER (\d+):(\d+)$", (REPO_ROOT / "Dockerfile").read_text(), re.M)
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == \
        (int(user.group(1)), int(user.group(2)))
    assert docs["Deployment"]["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    for kind, selector in (("Service", docs["Service"]["spec"]["selector"]),
                           ("PodDisruptionBudget", docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"])):
        assert selector.items() <= labels.items(), (kind, selector, labels)
    assert docs["Service"]["spec"]["ports"][0]["targetPort"] == "proxy"
